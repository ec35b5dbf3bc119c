#!/usr/bin/env bash
# The whole test suite, as CI runs it: a Release build with every test, then the whole suite
# again under ASan+UBSan, then bounded fuzzing of every input surface (in the same sanitized build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build
ctest --test-dir build --output-on-failure -j "$jobs"
# Every committed benchmark report must pass the evidence gate, the per-CPU folders' included.
mapfile -t reports < <(find bench/reports -name '*.json' | sort)
if [ ${#reports[@]} -gt 0 ]; then
  build/bin/augur bench check "${reports[@]}"
fi

# Every test again under ASan+UBSan (clang; the slowest at a reduced size), in the build that
# the fuzzing below uses too.
scripts/sanitize.sh

# Bounded fuzzing of every input surface (clang, libFuzzer, ASan+UBSan; docs/reliability.md).
scripts/fuzz.sh
