#!/usr/bin/env bash
# The test suite under ASan+UBSan, as CI runs it (docs/reliability.md): builds build-fuzz/
# (clang, -DAUGUR_FUZZ=ON: every source under ASan, UBSan and libFuzzer's coverage hooks; the same
# build scripts/fuzz.sh fuzzes with) and runs the tests there. Slow tests run a reduced size in a
# sanitized build (tests/support/sanitized_build.h); those that stay slow even so (listed below)
# and the isa_* labels (every exactness test again on each forced kernel path: the kernels
# label's tests already run each path's kernels) run only with --all, which takes over an hour.
#
#   scripts/sanitize.sh                 every label but isa_*, without the slow tests (CI)
#   scripts/sanitize.sh --all           every test
#   scripts/sanitize.sh [CTEST ARGS]    e.g. -L engine, or -R SpecStatistics
set -euo pipefail
cd "$(dirname "$0")/.."

# Sampling-law tests (hundreds of sampled runs each), the drafter cache-state checks (a fresh
# forward over the whole context after every cycle), the zoo models' long greedy runs, and the
# short benchmark: each one's code paths also run, at smaller sizes, in tests that stay here.
slow='^(SpecStatistics\.|PairHeadCacheState\.|DFlashCacheState\.|ShortBench\.|ZooModels/|Models/SpecEquivalence\..*/zoo_|isa_scalar:Models/SpecEquivalence)'

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DAUGUR_FUZZ=ON >/dev/null
ninja -C build-fuzz

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
args=("$@")
if [ $# -eq 0 ]; then
  args=(-E "$slow" -LE '^isa_')
elif [ "$1" = --all ]; then
  args=("${@:2}")
fi
ctest --test-dir build-fuzz --output-on-failure -j "$(nproc)" "${args[@]}"
