#!/usr/bin/env bash
# The server's throughput reports (docs/bench-report.md, kind "serve"): `augur bench serve`, arm
# ar (--draft none) against arm spec (--draft auto with the bundled draft model), 1, 4 and 16
# concurrent streaming clients x 2 greedy requests of 64 tokens each, 5 measured repeats per arm
# and client count (arms alternating), --parallel 16 sessions, 2 threads:
#   - zoo-wide Q8_0 (420M parameters, memory-bound; built by scripts/build-zoo-wide.sh);
#   - the bundled zoo-target Q8_0 (29M, fits in the L3 cache).
# Run it on a quiet machine: the figures are end-to-end wall times. Extra arguments go to every
# `augur bench serve` (e.g. --repeats 1 --clients 1,2 -n 8 for a quick check; such a run writes
# its reports under build/bench-serve-check/ instead of bench/reports/).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/augur
shared=${AUGUR_SHARED:-../shared}  # as the tests read it
out=bench/reports
[[ $# -gt 0 ]] && out=build/bench-serve-check
mkdir -p "$out"
scripts/build-zoo-wide.sh >/dev/null

serve() {  # name model
  "$bin" bench serve -m "$2" -md "$shared/models/zoo-draft-f16.gguf" --draft auto \
    --prompts "$shared/models/prompts-code.jsonl" --clients 1,4,16 --parallel 16 --requests 2 \
    -n 64 --repeats 5 -t 2 -o "$out/serve-$1.json" --chart "$out/serve-$1.svg" "${@:3}"
}

serve zoo-wide-q8_0 build/models/zoo-wide-q8_0.gguf "$@"
serve zoo-q8_0 models/zoo-target-q8_0.gguf "$@"
