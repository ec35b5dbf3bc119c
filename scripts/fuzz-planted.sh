#!/usr/bin/env bash
# Shows that a fuzz target reaches the code it claims to (docs/reliability.md): applies the
# planted bug of fuzz/planted/TARGET.patch to the working tree, runs the target with its CI
# budget (scripts/fuzz.sh) and expects it to FAIL, then removes the bug again. Prints the time
# and the number of inputs the fuzzer needed.
#
#   scripts/fuzz-planted.sh TARGET...    (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf_file model_load drafter_load tokenizer chat_template server_request cli_parsers)

status=0
mkdir -p fuzz-artifacts
for t in "${targets[@]}"; do
  patch=fuzz/planted/$t.patch
  git apply "$patch"
  trap 'git apply -R "$patch"' EXIT
  start=$(date +%s)
  if scripts/fuzz.sh "$t" >"fuzz-artifacts/planted-$t.log" 2>&1; then
    echo "planted $t: NOT FOUND within the CI budget" >&2
    status=1
  else
    execs=$(grep -oE '^stat::number_of_executed_units: [0-9]+' "fuzz-artifacts/$t/fuzz.log" |
            grep -oE '[0-9]+$' || grep -oE '^#[0-9]+' "fuzz-artifacts/$t/fuzz.log" | tail -1 | tr -d '#')
    what=$(grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error|deadly signal' \
           "fuzz-artifacts/$t/fuzz.log" | sed 's/^==[0-9]*==//' | cut -c1-120)
    if [ -z "$what" ]; then
      echo "planted $t: the run failed without a finding (see fuzz-artifacts/planted-$t.log)" >&2
      status=1
    fi
    echo "planted $t: found after ${execs:-?} inputs, $(($(date +%s) - start)) s including the build: $what"
  fi
  git apply -R "$patch"
  trap - EXIT
done
exit $status
