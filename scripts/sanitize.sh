#!/usr/bin/env bash
# The test suite under ASan+UBSan, as CI runs it (docs/reliability.md): builds build-fuzz/
# (clang, -DAUGUR_FUZZ=ON: every source under ASan, UBSan and libFuzzer's coverage hooks; the same
# build scripts/fuzz.sh fuzzes with) and runs the tests there. Slow tests run a reduced size in a
# sanitized build (tests/support/sanitized_build.h); those that stay slow even so (listed below)
# run only with --all, which takes over an hour. Of the isa_* labels (every exactness test again
# on each forced kernel path; the kernels label's tests already run each path's kernels) CI keeps
# one sample per label: the batch-invariance tests of the tiny fixtures, which run every kernel
# kind (float, Q8_0/Q4_0 integer, MoE, recurrent) at many batch shapes on that path.
#
#   scripts/sanitize.sh                 every label, without the slow tests (CI)
#   scripts/sanitize.sh --all           every test
#   scripts/sanitize.sh [CTEST ARGS]    e.g. -L engine, or -R SpecStatistics
set -euo pipefail
cd "$(dirname "$0")/.."

# Sampling-law tests (hundreds of sampled runs each), the zoo models' long greedy runs, and the
# short benchmark: each one's code paths also run, at smaller sizes, in tests that stay here.
# (The drafter cache-state checks stay since they became linear: 143 s on 2 cores under ASan.)
slow='^(SpecStatistics\.|ShortBench\.|ZooModels/|Models/SpecEquivalence\..*/zoo_|isa_scalar:Models/SpecEquivalence)'

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DAUGUR_FUZZ=ON >/dev/null
ninja -C build-fuzz

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The isa_* tests CI leaves out (all but the tiny fixtures' batch invariance).
isa_rest='^isa_[a-z0-9]+:(AllFixtures/|Models/SpecEquivalence\.|ChiSquare\.|Drafters/|Fixtures/|SpecRollbackChecker\.|Types/|Models/BatchInvariance\..*/zoo_)'

args=("$@")
if [ $# -eq 0 ]; then
  args=(-E "$slow|$isa_rest")
elif [ "$1" = --all ]; then
  args=("${@:2}")
fi
ctest --test-dir build-fuzz --output-on-failure -j "$(nproc)" "${args[@]}"
