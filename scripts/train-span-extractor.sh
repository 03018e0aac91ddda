#!/usr/bin/env bash
# Trains the two span extractors compared in docs/results/extractive-qa.md, from the pretrained
# MiniLM-L6 (vendor/models/all-minilm-l6-v2), one thread each, resumable (run again to continue):
#   runs/reader/gold       TrecQA TRAIN.xml gold answer spans, early stopping on DEV.xml gold spans
#   runs/reader/synthetic  SEDAN setting: cloze questions generated from the sentences of TRAIN.xml
#                          and DEV.xml (no human labels or spans)
#   runs/reader/synthetic-gold  runs/reader/synthetic (head and encoder) fine-tuned on the gold spans
# Usage: bash scripts/train-span-extractor.sh [gold|synthetic|synthetic-gold]...
# (default: all three, one after the other)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/trecqa/xml
ansel=${ANSEL_BIN:-target/release/ansel}
[ -x "$ansel" ] || cargo build --release -q -p ansel
base=${ANSEL_READER_BASE:-vendor/models/all-minilm-l6-v2}
mkdir -p runs/reader
for which in "${@:-gold synthetic synthetic-gold}"; do
  for w in $which; do
    out=runs/reader/$w
    resume=()
    [ -f "$out/checkpoint/state.json" ] && resume=(--resume)
    case $w in
      # lr 5e-5 for 4 epochs (runs/reader/gold-lr5e-5: dev F1 0.309, still rising) underfits the
      # 348 gold spans; twice the rate over 8 epochs.
      gold) extra=(--epochs 8 --lr 1e-4) ;;
      synthetic) extra=(--synthetic --max-pairs 1200 --epochs 1 --eval-every 25 --lr 5e-5) ;;
      synthetic-gold) extra=(--epochs 4 --lr 1e-4) ;;
      *) echo "unknown run $w (gold, synthetic or synthetic-gold)" >&2; exit 2 ;;
    esac
    b=$base
    [ "$w" = synthetic-gold ] && b=runs/reader/synthetic
    "$ansel" train --model span-extractor --base "$b" --train "$data/TRAIN.xml" --dev "$data/DEV.xml" \
      --out "$out" --threads 1 --batch-size 16 --accumulate 2 --patience 2 --checkpoint-every 10 \
      --name "span-extractor-$w" "${extra[@]}" "${resume[@]}" >"$out.card.json" 2>"$out.log" || {
      echo "training $w failed; see $out.log" >&2; exit 1; }
  done
done
