#!/usr/bin/env bash
# The CPU speed reports (docs/kernels.md, "Measured"): for zoo-target in F16, Q8_0 and Q4_0,
# `bench roofline` (read bandwidth, decode tok/s at 1 and 2 threads against the roofline, prefill
# of 512 tokens against the peak FMA rate) and `bench verify-curve` (T_V(M) for M = 1..16 at
# contexts 256 and 1024, 2 threads; per-token costs of the draft model, layer-skip 2 and 4
# and n-gram drafting). The Q4_0 model is made with `augur quantize` from the F16
# one. Then the same for zoo-wide F16 and Q8_0 (memory-bound, scripts/build-zoo-wide.sh), at
# context 256. Reports go to bench/reports/ only after passing the evidence gate. About 20
# minutes; `--wide-only` runs only zoo-wide; `--out DIR` writes the reports there instead (one
# folder per CPU when bench/reports/ already holds another machine's, e.g. bench/reports/amd-epyc).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/augur
shared=${AUGUR_SHARED:-../shared}  # as the tests read it
out=bench/reports
wide_only=""
while [ $# -gt 0 ]; do
  case $1 in
    --wide-only) wide_only=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--wide-only] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
q4_0=build/zoo-target-q4_0.gguf
[ -n "$wide_only" ] || [ -f "$q4_0" ] || "$bin" quantize "$shared/models/zoo-target-f16.gguf" "$q4_0" Q4_0

targets=("f16:$shared/models/zoo-target-f16.gguf" "q8_0:models/zoo-target-q8_0.gguf" "q4_0:$q4_0")
[ -n "$wide_only" ] && targets=()
for spec in "${targets[@]}"; do
  name=${spec%%:*}
  model=${spec#*:}
  "$bin" bench roofline -m "$model" --threads 1,2 --prefill 512 \
    --out "$out/zoo-$name-roofline.json"
  "$bin" bench verify-curve -m "$model" -md models/zoo-draft-f16.gguf --layerskip 2,4 \
    --ctx 256,1024 -t 2 \
    --out "$out/zoo-$name-verify-curve.json" --svg "$out/zoo-$name-verify-curve"
done

scripts/build-zoo-wide.sh >/dev/null
for name in f16 q8_0; do
  model=build/models/zoo-wide-$name.gguf
  "$bin" bench roofline -m "$model" --threads 1,2 --prefill 512 \
    --out "$out/zoo-wide-$name-roofline.json"
  "$bin" bench verify-curve -m "$model" -md models/zoo-draft-f16.gguf --layerskip 2,4 \
    --ctx 256 -t 2 \
    --out "$out/zoo-wide-$name-verify-curve.json" --svg "$out/zoo-wide-$name-verify-curve"
done
