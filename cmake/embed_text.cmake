# Writes the bytes of IN as a C++ raw string literal to OUT (cmake -DIN=... -DOUT=... -P).
file(READ "${IN}" content)
string(FIND "${content}" ")augur_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )augur_embed\"")
endif()
file(WRITE "${OUT}.tmp" "R\"augur_embed(${content})augur_embed\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
