#!/usr/bin/env bash
# The speculative-decoding run reports (README "Benchmarks", docs/policy.md): fixed drafters and
# the auto policy against AR, greedy and temperature 0.8, 16 prompts of prompts-code.jsonl,
# 5 measured repeats + 1 warm-up round, arm order rotating, 2 threads:
#   - zoo-wide Q8_0 and F16 (420M parameters, memory-bound; built by scripts/build-zoo-wide.sh)
#     with the bundled draft model, 64 tokens per run;
#   - the bundled zoo-target Q8_0 (29M, fits in the L3 cache), 128 tokens per run.
# `augur bench run` writes a report only after it passes the evidence gate. The policy's per-cycle
# logs go to build/policy-logs/ (docs/policy.md summarises them). About 60 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/augur
shared=${AUGUR_SHARED:-../shared}  # as the tests read it
out=bench/reports
logs=build/policy-logs
mkdir -p "$logs"
scripts/build-zoo-wide.sh >/dev/null

run() {  # name model n_gen arms temp
  "$bin" bench run -m "$2" -md models/zoo-draft-f16.gguf --arms "$4" \
    --prompts "$shared/models/prompts-code.jsonl" --max-prompts 16 --n-gen "$3" --repeats 5 \
    --warmup 1 --temp "$5" -t 2 --out "$out/$1-t$5.json" --svg "$out/$1-t$5" \
    --policy-log "$logs/$1-t$5.jsonl"
}

# F16 streams twice the bytes per token: fewer fixed arms keep its runs to about 10 minutes each.
for temp in 0 0.8; do
  run zoo-wide-q8_0 build/models/zoo-wide-q8_0.gguf 64 \
    ar,spec:model:2,spec:model:4,spec:ngram:4,spec:auto "$temp"
  run zoo-wide-f16 build/models/zoo-wide-f16.gguf 64 ar,spec:model:3,spec:auto "$temp"
  run zoo-q8_0 models/zoo-target-q8_0.gguf 128 \
    ar,spec:model:3,spec:ngram:3,spec:layerskip:2:2,spec:auto "$temp"
done
