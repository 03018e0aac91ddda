#!/usr/bin/env bash
# The cross-encoder training runs behind docs/results/cross-encoder.md, as they were run
# (2-core shared CPU; each run resumable with the same command plus --resume).
#   bash scripts/train-cross-encoder.sh adapt      # all-MiniLM-L6-v2 fine-tuned on WikiQA train
#   bash scripts/train-cross-encoder.sh transfer   # TANDA step 1: TrecQA TRAIN-ALL (12k-pair subset)
#   bash scripts/train-cross-encoder.sh tanda      # TANDA step 2: adapt the transferred model on WikiQA
#   bash scripts/train-cross-encoder.sh context    # LOCT context input on WikiQA
#   bash scripts/train-cross-encoder.sh squad-transfer  # TANDA step 1 on SQuAD-sent (scripts/squad-sent-data.sh)
#   bash scripts/train-cross-encoder.sh squad-tanda     # TANDA step 2 from squad-transfer, 2 WikiQA epochs
#   bash scripts/train-cross-encoder.sh mpnet-squad-transfer  # the same step 1 from all-mpnet-base-v2
#       (scripts/fetch-mpnet.sh): ~3 pairs/s on one core here, so its 320 steps x 32 = 10,240 pairs
#       take ~1-1.5 h plus evaluations: what fits beside other work in one 3-hour session
#   bash scripts/train-cross-encoder.sh transfer-all   # TANDA step 1 on all of TRAIN-ALL (one epoch)
#   bash scripts/train-cross-encoder.sh tanda-all      # TANDA step 2 from transfer-all, 1 WikiQA epoch
#   bash scripts/train-cross-encoder.sh tanda-all-2ep  # the same for 2 epochs (models/minilm-l6-tanda-all-2ep)
#   bash scripts/train-cross-encoder.sh tanda-all-3ep  # the same for 3 epochs (a teacher for issue 4's round 5)
#   bash scripts/train-cross-encoder.sh tanda-all-context  # tanda-all-2ep with the LOCT context input
#   bash scripts/train-cross-encoder.sh tanda-all-context-segments  # the same, context in a segment of its own
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA:-../shared/data}
base=${BASE:-vendor/models/all-minilm-l6-v2}
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -p ansel
export OMP_NUM_THREADS=1
wiki=(--train "$data/wikiqa/WikiQA-train.tsv" --dev "$data/wikiqa/WikiQA-dev.tsv")
common=(--model cross-encoder --lr 3e-5 --batch-size 16 --accumulate 2 --threads 1 --seed 42)
case "${1:-}" in
  adapt)
    "$bin" train "${common[@]}" --base "$base" "${wiki[@]}" --out runs/minilm-wikiqa \
      --epochs 3 --eval-every 90 --name minilm-l6-wikiqa "${@:2}" ;;
  transfer)
    "$bin" train "${common[@]}" --base "$base" --train "$data/trecqa/jsonl/train-all.jsonl.gz" \
      --dev "$data/trecqa/jsonl/dev-filtered.jsonl" --out runs/minilm-trecqa-transfer \
      --epochs 1 --max-pairs 12000 --eval-every 75 --name minilm-l6-trecqa-transfer "${@:2}" ;;
  tanda)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer "${wiki[@]}" --out runs/minilm-tanda \
      --epochs 1 --max-steps 100 --eval-every 50 --name minilm-l6-tanda "${@:2}" ;;
  transfer-all)
    "$bin" train "${common[@]}" --base "$base" --train "$data/trecqa/jsonl/train-all.jsonl.gz" \
      --dev "$data/trecqa/jsonl/dev-filtered.jsonl" --out runs/minilm-trecqa-transfer-all \
      --epochs 1 --eval-every 200 --name minilm-l6-trecqa-transfer-all "${@:2}" ;;
  tanda-all)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer-all "${wiki[@]}" --out runs/minilm-tanda-all \
      --epochs 1 --eval-every 90 --name minilm-l6-tanda-all "${@:2}" ;;
  tanda-all-2ep)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer-all "${wiki[@]}" --out runs/minilm-tanda-all-2ep \
      --epochs 2 --eval-every 90 --name minilm-l6-tanda-all-2ep "${@:2}" ;;
  tanda-all-3ep)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer-all "${wiki[@]}" --out runs/minilm-tanda-all-3ep \
      --epochs 3 --eval-every 90 --name minilm-l6-tanda-all-3ep "${@:2}" ;;
  tanda-all-context)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer-all "${wiki[@]}" --out runs/minilm-tanda-all-context \
      --context --max-len 192 --epochs 2 --eval-every 90 --name minilm-l6-tanda-all-loct "${@:2}" ;;
  tanda-all-context-segments)
    "$bin" train "${common[@]}" --base runs/minilm-trecqa-transfer-all "${wiki[@]}" --out runs/minilm-tanda-all-context-segments \
      --context --context-segments --max-len 192 --epochs 2 --eval-every 90 --name minilm-l6-tanda-all-loct-segments "${@:2}" ;;
  squad-transfer)
    "$bin" train "${common[@]}" --base "$base" --train data/squad-sent/train.jsonl.gz \
      --dev data/squad-sent/dev-x-500.jsonl --out runs/minilm-squad-transfer \
      --epochs 1 --max-steps 2500 --eval-every 500 --name minilm-l6-squad-transfer "${@:2}" ;;
  squad-tanda)
    "$bin" train "${common[@]}" --base runs/minilm-squad-transfer "${wiki[@]}" --out runs/minilm-squad-tanda \
      --epochs 2 --eval-every 90 --name minilm-l6-squad-tanda "${@:2}" ;;
  mpnet-squad-transfer)
    bash scripts/fetch-mpnet.sh
    "$bin" train "${common[@]}" --base vendor/models/all-mpnet-base-v2 --train data/squad-sent/train.jsonl.gz \
      --dev data/squad-sent/dev-x-150.jsonl --out runs/mpnet-squad-transfer --max-len 96 \
      --epochs 1 --max-steps 320 --eval-every 160 --name mpnet-base-squad-transfer "${@:2}" ;;
  context)
    "$bin" train "${common[@]}" --base "$base" "${wiki[@]}" --out runs/minilm-wikiqa-context \
      --context --epochs 3 --eval-every 90 --name minilm-l6-wikiqa-loct "${@:2}" ;;
  *) echo "usage: $0 adapt|transfer|tanda|transfer-all|tanda-all|tanda-all-2ep|tanda-all-3ep|tanda-all-context|tanda-all-context-segments|context|squad-transfer|squad-tanda|mpnet-squad-transfer [extra ansel train flags]" >&2; exit 2 ;;
esac
