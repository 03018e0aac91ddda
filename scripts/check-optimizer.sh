#!/usr/bin/env bash
# Checks of the one optimizer (ansel_torch::AdamW) and of resumable training on real data; writes
# docs/results/optimizer.md.
# 1. Cosinenet list-wise + BiRNN on WikiQA with the committed models/cosinenet-wikiqa settings (seed 2):
#    dev MAP now against the committed card's (trained with tch's nn::Adam before the switch).
# 2. The same run killed with SIGKILL right after its first epoch's checkpoint, then `--resume`d:
#    are the final weights byte-identical to the uninterrupted run's?
# 3. Only with BEFORE=path/to/an/older/ansel (BEFORE_DESC: what it is, for the page): 2-step
#    cross-encoder and bi-encoder runs (MiniLM-L6) with both binaries, checkpoint weights and
#    optimizer moments compared byte for byte (the shared training loop must not change a number).
# Runs live in target/check-optimizer/ and are reused when their model.json is there (FRESH=1: start over).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}/wikiqa
cargo build --release -q -p ansel
ansel=target/release/ansel
runs=target/check-optimizer
[[ -n ${FRESH:-} ]] && rm -rf "$runs"
mkdir -p "$runs"
out=docs/results/optimizer.md
card_map() { python3 -c "import json,sys; print('%.4f' % json.load(open(sys.argv[1]))['training']['metrics']['dev MAP'])" "$1"; }

common=(train --model cosinenet --loss listwise --rnn birnn --threads 1 --seed 2 --keep-checkpoint
  --train "$data/WikiQA-train.tsv" --dev "$data/WikiQA-dev.tsv")
[[ -f $runs/full/model.json ]] || "$ansel" "${common[@]}" --out "$runs/full"
if [[ ! -f $runs/cut/model.json ]]; then
  rm -rf "$runs/cut" "$runs/cut.training" "$runs/killed-after"
  "$ansel" "${common[@]}" --out "$runs/cut" &
  pid=$!
  # The checkpoint directory is swapped in whole, so once state.json is there the epoch is complete.
  until [[ -f $runs/cut.training/checkpoint/state.json ]]; do sleep 0.2; done
  kill -9 "$pid"
  wait "$pid" || true
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['epochs_done'])" \
    "$runs/cut.training/checkpoint/state.json" >"$runs/killed-after"
  "$ansel" "${common[@]}" --out "$runs/cut" --resume
fi
killed_after=$(cat "$runs/killed-after")
same() { cmp -s "$1" "$2" && echo "identical" || echo "DIFFERENT"; }
last_same=$(same "$runs/full.training/checkpoint/last.safetensors" "$runs/cut.training/checkpoint/last.safetensors")
best_same=$(same "$runs/full/weights.safetensors" "$runs/cut/weights.safetensors")

{
  echo "# One optimizer: ansel_torch::AdamW, and exact resumption"
  echo
  echo "Produced by \`bash scripts/check-optimizer.sh\` ($(date -u +%F), shared 2-core machine, one thread)."
  echo
  echo "## Cosinenet (list-wise, BiRNN) on WikiQA, committed settings, seed 2"
  echo
  echo "The efficient models trained with tch's \`nn::Adam\` (libtorch's C++ Adam), whose moments were not"
  echo "saved. They now train with \`ansel_torch::AdamW\` (weight decay 0, so Adam), whose moments are saved"
  echo "with each epoch's checkpoint, and libtorch's RNG is re-seeded from the seed and the epoch at the"
  echo "start of every epoch after the first. Both change the numerics (the same update in another order"
  echo "of float operations; other dropout masks from epoch 2 on), so the same seed no longer reproduces"
  echo "the committed model bit for bit. Dev MAP of the best epoch:"
  echo
  echo "| run | dev MAP |"
  echo "|---|---|"
  echo "| committed \`models/cosinenet-wikiqa\` (nn::Adam) | $(card_map models/cosinenet-wikiqa/model.json) |"
  echo "| this branch, uninterrupted | $(card_map "$runs/full/model.json") |"
  echo "| this branch, killed -9 after epoch $killed_after, then \`--resume\` | $(card_map "$runs/cut/model.json") |"
  echo
  echo "Last-epoch weights, uninterrupted vs killed + resumed: **$last_same** (byte comparison of"
  echo "\`checkpoint/last.safetensors\`); best weights (\`weights.safetensors\`): **$best_same**."
} >"$out"

if [[ -n ${BEFORE:-} ]]; then
  seeds=(1 2 3)
  rows=()
  for seed in "${seeds[@]}"; do
    args=(train --model cosinenet --loss listwise --rnn birnn --threads 1 --seed "$seed"
      --train "$data/WikiQA-train.tsv" --dev "$data/WikiQA-dev.tsv")
    [[ -f $runs/before-s$seed/model.json ]] || "$BEFORE" "${args[@]}" --out "$runs/before-s$seed"
    if [[ $seed == 2 ]]; then after=$runs/full; else
      [[ -f $runs/after-s$seed/model.json ]] || "$ansel" "${args[@]}" --out "$runs/after-s$seed"
      after=$runs/after-s$seed
    fi
    rows+=("| $seed | $(card_map "$runs/before-s$seed/model.json") | $(card_map "$after/model.json") |")
  done
  mean() { python3 -c "import json,sys; v=[json.load(open(p))['training']['metrics']['dev MAP'] for p in sys.argv[1:]]; print('%.4f' % (sum(v)/len(v)))" "$@"; }
  {
    echo
    echo "Three seeds, the binary before the switch (\`BEFORE=$BEFORE\`, tch's nn::Adam; ${BEFORE_DESC:-an older build})"
    echo "against this one:"
    echo
    echo "| seed | dev MAP, nn::Adam | dev MAP, ansel_torch::AdamW |"
    echo "|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo "| mean | $(mean "$runs"/before-s{1,2,3}/model.json) | $(mean "$runs"/after-s{1,3}/model.json "$runs/full/model.json") |"
    echo
    echo "The old optimizer's own seed-to-seed spread is $(python3 -c "import json,sys; v=[json.load(open(p))['training']['metrics']['dev MAP'] for p in sys.argv[1:]]; print('%.4f' % (max(v)-min(v)))" "$runs"/before-s{1,2,3}/model.json)"
    echo "(max - min over the three seeds); the per-seed differences above are of that size and go both"
    echo "ways, so three seeds do not show whether the switch costs anything. (The committed model is"
    echo "seed 2, the best of these three before the switch.)"
  } >>"$out"

  head -400 "$data/WikiQA-dev.tsv" >"$runs/dev-small.tsv"
  ce=(train --model cross-encoder --base vendor/models/all-minilm-l6-v2 --threads 1 --seed 1
    --train "$data/WikiQA-train.tsv" --dev "$runs/dev-small.tsv" --max-pairs 64 --max-steps 2
    --batch-size 8 --accumulate 2)
  bi=(train --model bi-encoder --base vendor/models/all-minilm-l6-v2 --threads 1 --seed 1 --max-len 64
    --train "$data/WikiQA-train.tsv" --dev "$runs/dev-small.tsv" --max-steps 2 --batch-size 16
    --head-lr-factor 10)
  rows=()
  for kind in ce bi; do
    declare -n cmd=$kind
    for side in before after; do
      bin=$ansel
      [[ $side == before ]] && bin=$BEFORE
      if [[ ! -f $runs/$kind-$side/model.json ]]; then
        rm -rf "$runs/$kind-$side"
        "$bin" "${cmd[@]}" --out "$runs/$kind-$side"
      fi
    done
    for f in "$runs/$kind-before/checkpoint/"*.safetensors; do
      rows+=("| $kind | checkpoint/$(basename "$f") | $(same "$f" "$runs/$kind-after/checkpoint/$(basename "$f")") |")
    done
  done
  {
    echo
    echo "## Transformer trainers: shared loop against the previous code"
    echo
    echo "2 optimizer steps of MiniLM-L6 on WikiQA train (dev: the first 399 rows of WikiQA dev), the"
    echo "binary before the shared loop (\`BEFORE=$BEFORE\`, ${BEFORE_DESC:-an older build}) against this one, checkpoint files compared"
    echo "byte for byte. ce: cross-encoder (64 pairs, batch 8, accumulate 2); bi: bi-encoder (batch 16,"
    echo "head learning rate x10)."
    echo
    echo "| trainer | file | before vs after |"
    echo "|---|---|---|"
    printf '%s\n' "${rows[@]}"
  } >>"$out"
fi
cat "$out"
