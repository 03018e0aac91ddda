#!/usr/bin/env bash
# End-to-end CASSIE runs behind the "End to end" section of docs/results/cassie.md, as they were
# run (2-core shared CPU, one intra-op thread). Both start from TANDA step 1
# (runs/minilm-trecqa-transfer-all, TrecQA only) exactly as the cross-encoder baselines
# runs/minilm-tanda-all (1 WikiQA epoch) and models/minilm-l6-tanda-all-2ep (2 epochs) did:
# WikiQA train, dev WikiQA dev, encoder lr 3e-5, ~32 candidates per optimizer step, seed 42.
# Every run samples the load average once a minute into OUT/loadavg.log (read by the bench).
#   bash scripts/train-cassie-e2e.sh full        # full CASSIE (OT + GCN + MI 0.3), one epoch
#                                                # (copied to runs/cassie-e2e-wikiqa-1ep)
#   EPOCHS=2 bash scripts/train-cassie-e2e.sh full --resume   # then a second epoch (resume)
#   bash scripts/train-cassie-e2e.sh no-mi       # the ablation: gamma = 0, one epoch
#   bash scripts/train-cassie-e2e.sh residual    # full CASSIE + the encoder's own logit (--residual):
#                                                # the head learns a correction of the cross-encoder
#   EPOCHS=2 bash scripts/train-cassie-e2e.sh residual  # the same over one 2-epoch schedule
#                                                # (runs/cassie-e2e-wikiqa-residual-2ep)
#   bash scripts/train-cassie-e2e.sh residual-no-gcn   # its ablation without the GCN: the candidate
#                                                # node alone, no context reaches the score
#   bash scripts/train-cassie-e2e.sh smoke       # 8 optimizer steps on 20 questions (minutes)
# TRANSFER=DIR points at the TANDA step 1 run (default runs/minilm-trecqa-transfer-all).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-tanda-all-2ep   # left models/ for the span reader
data=${DATA:-../shared/data}
base=${TRANSFER:-runs/minilm-trecqa-transfer-all}
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -p ansel
export OMP_NUM_THREADS=1
# Runs other than `full` of more than one epoch go to their own directory (NAME-2ep).
epochs=${EPOCHS:-1}
suffix=$([ "$epochs" = 1 ] || echo "-${epochs}ep")
wiki=(--train "$data/wikiqa/WikiQA-train.tsv" --dev "$data/wikiqa/WikiQA-dev.tsv")
common=(--model cassie --end-to-end --base "$base" --lr 3e-5 --head-lr 1e-3 --batch-size 16
  --accumulate 2 --threads 1 --seed 42 --checkpoint-every 10)
run() {
  local out=$1
  shift
  mkdir -p "$out"
  "$bin" train "${common[@]}" --out "$out" "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    echo "$(date -u +%FT%TZ) $(cat /proc/loadavg)" >> "$out/loadavg.log"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  done
  wait "$pid"
}
case "${1:-}" in
  full)
    run runs/cassie-e2e-wikiqa "${wiki[@]}" --epochs "$epochs" --eval-every 90 --name cassie-e2e-wikiqa "${@:2}"
    if [ "$epochs" = 1 ]; then
      # The one-epoch model, kept apart before a resumed second epoch replaces it.
      rm -rf runs/cassie-e2e-wikiqa-1ep && mkdir -p runs/cassie-e2e-wikiqa-1ep
      find runs/cassie-e2e-wikiqa -maxdepth 1 -type f -exec cp {} runs/cassie-e2e-wikiqa-1ep/ \;
    fi ;;
  residual) run "runs/cassie-e2e-wikiqa-residual$suffix" "${wiki[@]}" --epochs "$epochs" --eval-every 90 --residual --name "cassie-e2e-wikiqa-residual$suffix" "${@:2}" ;;
  residual-no-gcn) run "runs/cassie-e2e-wikiqa-residual-no-gcn$suffix" "${wiki[@]}" --epochs "$epochs" --eval-every 90 --residual --no-gcn --name "cassie-e2e-wikiqa-residual-no-gcn$suffix" "${@:2}" ;;
  no-mi) run "runs/cassie-e2e-wikiqa-no-mi$suffix" "${wiki[@]}" --epochs "$epochs" --eval-every 90 --no-mi --name "cassie-e2e-wikiqa-no-mi$suffix" "${@:2}" ;;
  smoke)
    work=runs/cassie-e2e-smoke
    mkdir -p "$work"
    head -200 "$data/wikiqa/WikiQA-train.tsv" > "$work/train.tsv"
    head -120 "$data/wikiqa/WikiQA-dev.tsv" > "$work/dev.tsv"
    rm -rf "$work/model"
    run "$work/model" --train "$work/train.tsv" --dev "$work/dev.tsv" --max-steps 8 --eval-every 4 \
      --name cassie-e2e-smoke "${@:2}" ;;
  *) echo "usage: $0 full|no-mi|residual|residual-no-gcn|smoke [extra ansel train flags]" >&2; exit 2 ;;
esac
