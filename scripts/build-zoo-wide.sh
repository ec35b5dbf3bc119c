#!/usr/bin/env bash
# Builds zoo-wide (420M parameters: zoo-target's function in a 4x wider shell, see
# shared/models/make_wide.py) as F16 and Q8_0 under build/models/, the memory-bound target the
# speculative-decoding benchmarks are measured on. Skips files that already exist.
# Needs python3-numpy (apt-get install -y python3-numpy) and a built augur. About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${AUGUR_SHARED:-../shared}  # as the tests read it
out=build/models
mkdir -p "$out"
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  echo "build-zoo-wide: needs python3-numpy (apt-get install -y python3-numpy)" >&2
  exit 1
fi
if [[ ! -f $out/zoo-wide-f16.gguf ]]; then
  /usr/bin/python3 "$shared/models/make_wide.py" --src "$shared/models/zoo-target-f16.gguf" \
    --out "$out/zoo-wide-f16.gguf.tmp"
  mv "$out/zoo-wide-f16.gguf.tmp" "$out/zoo-wide-f16.gguf"
fi
if [[ ! -f $out/zoo-wide-q8_0.gguf ]]; then
  build/bin/augur quantize "$out/zoo-wide-f16.gguf" "$out/zoo-wide-q8_0.gguf.tmp" Q8_0
  mv "$out/zoo-wide-q8_0.gguf.tmp" "$out/zoo-wide-q8_0.gguf"
fi
ls -l "$out"/zoo-wide-*.gguf
