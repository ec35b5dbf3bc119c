# Writes OUT (a header with the git commit and whether the tree was dirty) only when it changes,
# so a rebuild recompiles the one file that includes it and nothing else.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  set(commit "unknown")
endif()
execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                OUTPUT_VARIABLE status ERROR_QUIET)
if(status STREQUAL "")
  set(dirty 0)
else()
  set(dirty 1)
endif()
set(text "#pragma once\n#define AUGUR_GIT_COMMIT \"${commit}\"\n#define AUGUR_GIT_DIRTY ${dirty}\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
