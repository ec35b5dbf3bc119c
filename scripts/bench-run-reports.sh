#!/usr/bin/env bash
# The speculative-decoding run reports (README "Benchmarks"): zoo-target Q8_0 with the bundled
# draft model, every arm (AR, draft model, n-gram, layer-skip) over all prompts of
# prompts-code.jsonl, 5 measured repeats + 1 warm-up, 128 tokens, greedy and temperature 0.8.
# `augur bench run` writes a report only after it passes the evidence gate. About 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/augur
shared=${AUGUR_SHARED_DIR:-../shared}
out=bench/reports
for temp in 0 0.8; do
  "$bin" bench run -m models/zoo-target-q8_0.gguf -md models/zoo-draft-f16.gguf \
    --arms ar,spec:model:3,spec:ngram:3,spec:layerskip:2:2 \
    --prompts "$shared/models/prompts-code.jsonl" --n-gen 128 --repeats 5 --warmup 1 \
    --temp "$temp" -t 2 --out "$out/zoo-q8_0-t$temp.json" --svg "$out/zoo-q8_0-t$temp"
done
