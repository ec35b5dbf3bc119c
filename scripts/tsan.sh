#!/usr/bin/env bash
# The threaded tests under ThreadSanitizer (docs/reliability.md), outside CI (a third full build):
# builds build-tsan/ (clang, -DAUGUR_TSAN=ON) and runs the tests whose threads share state: the
# thread pool and the kernels it splits, the forward batcher and the models' threaded forwards,
# the generator with every drafter kind, and the server (slot pool, streaming, shutdown, load).
# Any data race TSan reports fails the test that raced.
#
#   scripts/tsan.sh [CTEST ARGS]    other tests than the default selection, e.g. -R ThreadPool
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DAUGUR_TSAN=ON >/dev/null
ninja -C build-tsan augur augur_kernels_tests augur_model_tests augur_engine_tests \
  augur_server_tests

# halt_on_error: a race ends the process with TSan's exit code, so CTest counts the test failed.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
jobs=$(nproc)
if [ $# -gt 0 ]; then
  exec ctest --test-dir build-tsan --output-on-failure -j "$jobs" "$@"
fi
status=0
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -E '^isa_' \
  -R 'ThreadPool|Matmul|ForwardBatcher|FixtureTest|Generator|SpecStop|SpecEquivalence.*/tiny_(llama|qwen3moe|qwen35)$|SpecRollback' || status=1
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L server || status=1
exit $status
