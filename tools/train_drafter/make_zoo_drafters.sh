#!/bin/sh
# Reproduces models/zoo-target-eagle3-{f16,q8_0}.gguf and models/zoo-target-dflash-f16.gguf (+ manifests) and
# the tiny test drafters.
# usage: tools/train_drafter/make_zoo_drafters.sh ZOO_MODELS_DIR AUGUR_BINARY [WORK_DIR]
# ZOO_MODELS_DIR holds zoo-target-f16.gguf, zoo-draft-f16.gguf and prompts-code.jsonl.
set -eu
ZOO=${1:?zoo models dir}
AUGUR=${2:?augur binary}
WORK=${3:-${TMPDIR:-/tmp}/augur-zoo-drafters}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
mkdir -p "$WORK"
rm -f "$WORK"/zoo-target-eagle3-f16.gguf* "$WORK"/zoo-target-dflash-f16.gguf*

# taps: auto = 2-minute probes of [2,4,5] (llama.cpp default L-3) and [2,4,7] (L-1), keep the better
/usr/bin/python3 "$HERE/augur-train-drafter" train-eagle3 \
    -m "$ZOO/zoo-target-f16.gguf" --augur "$AUGUR" --prompts "$ZOO/prompts-code.jsonl" \
    -o "$WORK/zoo-target-eagle3-f16.gguf" --target-layers auto --probe-minutes 2 --minutes 20 \
    --baseline "$ZOO/zoo-draft-f16.gguf"
# second stage: resume the checkpoint (step 480 here) and train until 29 wall-clock minutes in total;
# the cosine LR is re-read from the new budget, so it rises from 10% to ~30% of peak and decays again
/usr/bin/python3 "$HERE/augur-train-drafter" train-eagle3 \
    -m "$ZOO/zoo-target-f16.gguf" --augur "$AUGUR" --prompts "$ZOO/prompts-code.jsonl" \
    -o "$WORK/zoo-target-eagle3-f16.gguf" --target-layers 2,4,7 --minutes 29 --resume \
    --baseline "$ZOO/zoo-draft-f16.gguf"
# stages 3-5: fine-tune on the target's own continuations (selfgen.py): 1024 windows of a corpus
# prefix and the greedy continuation (stage 3: 15 min, 75 % of the windows, peak LR 1e-3), then the
# same plus 1024 sampled at temperature 0.8 (stage 4: 28 min, 80 %, LR 1e-3; stage 5: 35 min, 80 %,
# LR 5e-4, and a loss term for the sampled acceptance sum_x min(p', q') at temperature 0.8,
# --accept-weight 1); 4 unrolled steps. Each stage starts from the previous stage's exported file.
for stage in 3 4 5; do
    prev="$WORK/zoo-target-eagle3-f16.gguf"
    cp "$prev" "$WORK/eagle3-stage$((stage - 1)).gguf"
    case $stage in
        3) temps=0; frac=0.75; minutes=15; lr=1e-3; accept=0 ;;
        4) temps=0,0.8; frac=0.8; minutes=28; lr=1e-3; accept=0 ;;
        5) temps=0,0.8; frac=0.8; minutes=35; lr=5e-4; accept=1 ;;
    esac
    /usr/bin/python3 "$HERE/augur-train-drafter" train-eagle3 \
        -m "$ZOO/zoo-target-f16.gguf" --augur "$AUGUR" --prompts "$ZOO/prompts-code.jsonl" \
        -o "$WORK/zoo-target-eagle3-f16.gguf" --init-from "$WORK/eagle3-stage$((stage - 1)).gguf" \
        --selfgen 1024 --selfgen-temps $temps --selfgen-frac $frac --ttt-steps 4 --lr $lr \
        --accept-weight $accept --minutes $minutes --baseline "$ZOO/zoo-draft-f16.gguf"
done
cp "$WORK/zoo-target-eagle3-f16.gguf" "$WORK/zoo-target-eagle3-f16.gguf.manifest.json" "$REPO/models/"
# the Q8_0 copy the drafter reports run (drafting reads half the bytes; tau is unchanged)
rm -f "$REPO/models/zoo-target-eagle3-q8_0.gguf"
"$AUGUR" quantize "$REPO/models/zoo-target-eagle3-f16.gguf" "$REPO/models/zoo-target-eagle3-q8_0.gguf" Q8_0
/usr/bin/python3 "$HERE/augur-train-drafter" manifest "$REPO/models/zoo-target-eagle3-q8_0.gguf"

# DFlash: 2 layers, taps [2,5,8] (8 = final hidden after output_norm), block 8, mask <unk> (id 0),
# random init, one 34-minute run (wall clock, so the step count depends on the machine's load)
/usr/bin/python3 "$HERE/augur-train-drafter" train-dflash \
    -m "$ZOO/zoo-target-f16.gguf" --augur "$AUGUR" --prompts "$ZOO/prompts-code.jsonl" \
    -o "$WORK/zoo-target-dflash-f16.gguf" --target-layers 2,5,L --n-layers 2 --block-size 8 \
    --mask-token-id 0 --minutes 34 --baseline "$ZOO/zoo-draft-f16.gguf"
cp "$WORK/zoo-target-dflash-f16.gguf" "$WORK/zoo-target-dflash-f16.gguf.manifest.json" "$REPO/models/"

/usr/bin/python3 "$HERE/make_reference_eagle3.py" --out-dir "$REPO/tests/data/drafters"
/usr/bin/python3 "$HERE/make_reference_dflash.py" --out-dir "$REPO/tests/data/drafters"
sha256sum "$REPO/models/zoo-target-eagle3-f16.gguf" "$REPO/models/zoo-target-dflash-f16.gguf"

# zoo-wide (/work/shared/models/make_wide.py, zoo-target in a 4x wider shell): with ZOO_WIDE set to
# zoo-wide-f16.gguf, widen the drafters for it (widen.py; EAGLE-3 keeps D = 512 and carries zoo-target's
# token_embd/output, DFlash becomes 2048 wide) into the folder of ZOO_WIDE, with a float64 --check
if [ -n "${ZOO_WIDE:-}" ]; then
    for d in eagle3 dflash; do
        [ -f "$REPO/models/zoo-target-$d-f16.gguf" ] || continue
        /usr/bin/python3 "$HERE/augur-train-drafter" widen --drafter "$REPO/models/zoo-target-$d-f16.gguf" \
            --wide-target "$ZOO_WIDE" --narrow-target "$ZOO/zoo-target-f16.gguf" \
            -o "$(dirname "$ZOO_WIDE")/zoo-wide-$d-f16.gguf" --check
        sha256sum "$(dirname "$ZOO_WIDE")/zoo-wide-$d-f16.gguf"
    done
fi
