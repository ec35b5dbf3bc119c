#!/usr/bin/env bash
# The EAGLE-3 run reports (models/DRAFTERS.md, README "Benchmarks"): the bundled EAGLE-3 head
# against the bundled draft model at the same block size (k = 4 and 8), and --draft auto with and
# without it, greedy and temperature 0.8 (where the head's drafts also run as argmax, one-hot q:
# llama.cpp's way), 16 prompts of prompts-code.jsonl, 128 tokens per run, 5 measured repeats + 1
# warm-up round, arm order rotating, 2 threads, on
#   - zoo-target Q8_0 (bundled) and
#   - zoo-wide Q8_0 (scripts/build-zoo-wide.sh) with the head widened for it by
#     tools/train_drafter `widen` (needs python3-torch).
# Both drafters run in Q8_0 like the targets: the bundled Q8_0 head (models/, `augur quantize` of
# the F16 one) and zoo-draft quantized here. `augur bench run` writes a report only after it passes
# the evidence gate. About 35 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/augur
shared=${AUGUR_SHARED:-../shared}  # as the tests read it
out=bench/reports
scripts/build-zoo-wide.sh >/dev/null
draft=build/models/zoo-draft-q8_0.gguf
[ -f "$draft" ] || "$bin" quantize "$shared/models/zoo-draft-f16.gguf" "$draft" Q8_0 >/dev/null
head=models/zoo-target-eagle3-q8_0.gguf
wide_head=build/models/zoo-wide-eagle3-q8_0.gguf
/usr/bin/python3 tools/train_drafter/augur-train-drafter widen --drafter models/zoo-target-eagle3-f16.gguf \
  --wide-target build/models/zoo-wide-f16.gguf --narrow-target "$shared/models/zoo-target-f16.gguf" \
  -o build/models/zoo-wide-eagle3-f16.gguf --check
"$bin" quantize build/models/zoo-wide-eagle3-f16.gguf "$wide_head" Q8_0 >/dev/null

run() {  # name model head n_gen temp
  local arms=ar,spec:model:4,spec:eagle3:4,spec:model:8,spec:eagle3:8
  arms+=,spec:auto:model+ngram+layerskip,spec:auto:model+eagle3+ngram+layerskip
  if [ "$5" != 0 ]; then arms+=,spec:eagle3-argmax:8; fi
  "$bin" bench run -m "$2" -md "$draft" --draft-head "$3" --arms "$arms" \
    --prompts "$shared/models/prompts-code.jsonl" --max-prompts 16 --n-gen "$4" --repeats 5 \
    --warmup 1 --temp "$5" -t 2 --out "$out/$1-t$5.json" --svg "$out/$1-t$5"
}

for temp in 0 0.8; do
  run eagle3-zoo-q8_0 models/zoo-target-q8_0.gguf "$head" 128 "$temp"
  run eagle3-zoo-wide-q8_0 build/models/zoo-wide-q8_0.gguf "$wide_head" 128 "$temp"
done
