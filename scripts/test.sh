#!/usr/bin/env bash
# The whole test suite, as CI runs it: a Release build with every test, then an
# ASan+UBSan build running the hostile-input and core tests and the fuzz corpus replays, then
# bounded fuzzing of every input surface.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
ctest --test-dir build --output-on-failure -j "$jobs"
# Every committed benchmark report must pass the evidence gate.
shopt -s nullglob
reports=(bench/reports/*.json)
if [ ${#reports[@]} -gt 0 ]; then
  build/bin/augur bench check "${reports[@]}"
fi

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DAUGUR_SANITIZE=ON >/dev/null
ninja -C build-asan augur augur_gguf_tests augur_cli_tests augur_chat_tests augur_server_tests \
  augur_fuzz
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'gguf|cli|chat|fuzz'
# The server's hostile-input, shutdown and request-parsing tests (the server runs sanitized too).
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L server \
  -R 'HostileRequests|ServeShutdown|ServeHealth|CompletionRequest|TextStream|PrefixStore|PrefixCache'

# Bounded fuzzing of every input surface (clang, libFuzzer, ASan+UBSan; docs/reliability.md).
scripts/fuzz.sh
