#!/usr/bin/env bash
# Bounded fuzzing, as CI runs it (docs/reliability.md): builds build-fuzz/ (clang, libFuzzer,
# ASan+UBSan), replays every committed crash reproducer, then runs each target for a fixed number
# of inputs from its committed corpus (fuzz/corpus/<target>, with its dictionary). Any crash,
# leak, sanitizer report, input slower than 2 s or allocation over 2 GiB fails the run; the
# reproducer is kept under fuzz-artifacts/<target>/.
#
#   scripts/fuzz.sh                  every target, the CI budget
#   scripts/fuzz.sh TARGET [ARGS]    one target; ARGS go to libFuzzer (e.g. -max_total_time=3600)
#   AUGUR_FUZZ_SCALE=N               N times the CI budget of runs
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs per target, sized to about two minutes in total on 2 cores (see docs/reliability.md for
# the rates they were sized from).
declare -A runs=([gguf_file]=200000 [model_load]=3000 [drafter_load]=600 [tokenizer]=60000
                 [chat_template]=60000 [server_request]=150000 [cli_parsers]=300000)
# Largest input per target: a GGUF seed is a few KB; a template a few tens of KB.
declare -A max_len=([gguf_file]=16384 [model_load]=256 [drafter_load]=256 [tokenizer]=4096
                    [chat_template]=65536 [server_request]=8192 [cli_parsers]=1024)
targets=(gguf_file model_load drafter_load tokenizer chat_template server_request cli_parsers)
scale=${AUGUR_FUZZ_SCALE:-1}

one=""
extra=()
if [ $# -gt 0 ]; then
  one=$1
  shift
  extra=("$@")
  [ -n "${runs[$one]:-}" ] || { echo "unknown fuzz target '$one' (one of: ${targets[*]})" >&2; exit 2; }
  targets=("$one")
fi

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DAUGUR_FUZZ=ON >/dev/null
ninja -C build-fuzz augur_fuzz

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${targets[@]}"; do
  bin=build-fuzz/bin/fuzz_$t
  artifacts=fuzz-artifacts/$t
  mkdir -p "$artifacts"
  # A fixed seed keeps the CI run repeatable: new bugs are for the long runs to find; CI keeps
  # what was fixed fixed. Pass -seed=N (or -seed=0 for a random one) to explore.
  limits=(-seed=1 -timeout=2 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="${max_len[$t]}"
          -artifact_prefix="$artifacts/" -dict=fuzz/dicts/$t.dict)
  # Every reproducer of a fixed crash first: one run each.
  if [ -d "tests/data/crashes/$t" ] && [ -n "$(ls -A "tests/data/crashes/$t")" ]; then
    if ! "$bin" "${limits[@]}" tests/data/crashes/$t/* >"$artifacts/replay.log" 2>&1; then
      echo "fuzz $t: a committed crash reproducer fails again (log: $artifacts/replay.log)" >&2
      status=1
      continue
    fi
  fi
  # New inputs go to a scratch copy; the committed corpus only changes by hand.
  work=build-fuzz/corpus/$t
  rm -rf "$work"
  mkdir -p "$work"
  cp fuzz/corpus/$t/* "$work/"
  n=$((runs[$t] * scale))
  start=$(date +%s)
  if "$bin" "${limits[@]}" -runs="$n" -print_final_stats=1 "${extra[@]}" "$work" \
      >"$artifacts/fuzz.log" 2>&1; then
    stats=$(grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$artifacts/fuzz.log" |
            sed 's/^stat:://' | tr -s ' ' | tr '\n' ' ')
    cov=$(grep -oE 'cov: [0-9]+' "$artifacts/fuzz.log" | tail -1)
    echo "fuzz $t: ok in $(($(date +%s) - start)) s; $cov; $stats"
  else
    echo "fuzz $t: FAILED (reproducer and log under $artifacts/):" >&2
    grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$artifacts/fuzz.log" | head -20 >&2
    status=1
  fi
done
exit $status
