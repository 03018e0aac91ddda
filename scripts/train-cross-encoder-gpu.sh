#!/usr/bin/env bash
# The GPU runs behind models/mpnet-base-squad-tanda-int8 and models/minilm-l6-mpnet-distilled-int8
# (bench/cross_encoder_gpu.py: PyTorch + transformers on one GPU; the CPU route is
# scripts/train-cross-encoder.sh). Steps:
#   bash scripts/train-cross-encoder-gpu.sh data     # ansel JSON lines of every set read, into data/gpu
#   bash scripts/train-cross-encoder-gpu.sh tanda    # MPNet: SQuAD-sent transfer, adapt mixes, best on dev
#   bash scripts/train-cross-encoder-gpu.sh adapt-alone  # the same adapt mixes from the base alone (dev only)
#   bash scripts/train-cross-encoder-gpu.sh teacher  # the MPNet model's logits for the training lists,
#                                                    # into bench/teacher-logits (committed: 0.9 MB)
#   bash scripts/train-cross-encoder-gpu.sh distill  # MiniLM-L6 taught by those logits (+ gold labels);
#                                                    # (the trainer runs on a CPU too; not timed here)
#   bash scripts/train-cross-encoder-gpu.sh ship     # int8 ONNX of both (ansel quantize) into models/
#                                                    # (mpnet-base-squad-tanda-int8, minilm-l6-mpnet-distilled-int8)
# The GPU steps need python3 with torch, transformers, tokenizers, safetensors and numpy. The run
# of 2026-11-26 (H100, lent for 15 minutes) moved data and weights in 64 MB pieces by hand. TRANSFER_SECONDS
# and ADAPT_SECONDS bound the phases (each stops at the step count its measured rate allows);
# `tanda ... --resume` starts after a finished transfer phase. BASE, GPU_DATA and OUT_DIR move the
# base model, the data and the output elsewhere. A device call sends at most 64 MiB and models/ is far
# more: `bash scripts/device-tree.sh slim` before the call (carry the data and the base it reads),
# `restore` after it.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
gpu=${GPU_DATA:-data/gpu}
tanda=runs/mpnet-squad-tanda-gpu
student=runs/minilm-mpnet-distilled-gpu
dev=(--dev "wikiqa-dev=$gpu/wikiqa-dev.jsonl.gz" --dev "trecqa-dev-filtered=$gpu/trecqa-dev-filtered.jsonl.gz"
  --dev "squad-dev-x-500=$gpu/squad-dev-x-500.jsonl.gz")
adapt=(--adapt "wikiqa+trecqa=$gpu/wikiqa-train.jsonl.gz+$gpu/trecqa-train-all.jsonl.gz")
logits=${TEACHER_LOGITS:-bench/teacher-logits}
train_sets="$gpu/squad-train.jsonl.gz+$gpu/wikiqa-train.jsonl.gz+$gpu/trecqa-train-all.jsonl.gz"
case "${1:-}" in
  data)
    bash scripts/squad-sent-data.sh
    mkdir -p "$gpu"
    # Each set as ansel JSON lines without the context fields (prev/next) the pair input never reads.
    export_set() {
      [ -f "$gpu/$1" ] && return
      "$ansel" convert --data "$2" --out "$gpu/$1.full"
      python3 - "$gpu/$1.full" "$gpu/$1" <<'PY'
import gzip, json, sys
with open(sys.argv[1], encoding="utf-8") as src, gzip.open(sys.argv[2], "wt", encoding="utf-8") as dst:
    for line in src:
        q = json.loads(line)
        cands = [{k: c[k] for k in ("text", "label") if k in c} for c in q["candidates"]]
        dst.write(json.dumps({"question": q["question"], "candidates": cands}) + "\n")
PY
      rm "$gpu/$1.full"
    }
    export_set squad-train.jsonl.gz data/squad-sent/train.jsonl.gz
    export_set squad-dev-x-500.jsonl.gz data/squad-sent/dev-x-500.jsonl
    export_set wikiqa-train.jsonl.gz "$data/wikiqa/WikiQA-train.tsv"
    export_set wikiqa-dev.jsonl.gz "$data/wikiqa/WikiQA-dev.tsv"
    export_set trecqa-train-all.jsonl.gz "$data/trecqa/jsonl/train-all.jsonl.gz"
    export_set trecqa-dev-filtered.jsonl.gz "$data/trecqa/jsonl/dev-filtered.jsonl"
    du -sh "$gpu"/* ;;
  tanda)
    [ -n "${BASE:-}" ] || bash scripts/fetch-mpnet.sh
    python3 bench/cross_encoder_gpu.py --base "${BASE:-vendor/models/all-mpnet-base-v2}" \
      --transfer "$gpu/squad-train.jsonl.gz" \
      --adapt "wikiqa=$gpu/wikiqa-train.jsonl.gz" "${adapt[@]}" "${dev[@]}" \
      --transfer-seconds "${TRANSFER_SECONDS:-270}" --adapt-seconds "${ADAPT_SECONDS:-45}" \
      --freeze-word-embeddings --name mpnet-base-squad-tanda --out "${OUT_DIR:-$tanda}" "${@:2}" ;;
  adapt-alone)
    # TANDA's FT baseline, for the comparison on dev: each adapt mix trained from all-mpnet-base-v2
    # itself, with no SQuAD transfer before it. Nothing is shipped; the logs and cards go to
    # docs/results/mpnet-adapt-alone (squad-transfer.md's "adapting alone" table reads them).
    [ -n "${BASE:-}" ] || bash scripts/fetch-mpnet.sh
    alone() { # alone NAME ARGS...: one run into runs/mpnet-adapt-alone-NAME, its record committed
      python3 bench/cross_encoder_gpu.py --base "${BASE:-vendor/models/all-mpnet-base-v2}" "${dev[@]}" \
        --freeze-word-embeddings --name "mpnet-base-adapt-alone-$1" --out "runs/mpnet-adapt-alone-$1" "${@:2}"
      mkdir -p docs/results/mpnet-adapt-alone
      cp "runs/mpnet-adapt-alone-$1/train-log.jsonl" "docs/results/mpnet-adapt-alone/$1.train-log.jsonl"
      cp "runs/mpnet-adapt-alone-$1/model.json" "docs/results/mpnet-adapt-alone/$1.model.json"
    }
    alone tanda-recipe --adapt "wikiqa=$gpu/wikiqa-train.jsonl.gz" "${adapt[@]}" --adapt-lr 1e-5 --adapt-seconds 45
    alone ft-2ep --adapt "wikiqa=$gpu/wikiqa-train.jsonl.gz" "${adapt[@]}" --adapt-lr 2e-5 --adapt-epochs 2 --adapt-seconds 120
    alone ft-2ep-full "${adapt[@]}" --adapt-lr 2e-5 --adapt-epochs 2 --adapt-seconds 240 ;;
  teacher)
    python3 bench/cross_encoder_gpu.py score "${TEACHER:-$tanda}" bench/teacher-logits ${train_sets//+/ } ;;
  distill)
    python3 bench/cross_encoder_gpu.py --base "${BASE:-vendor/models/all-minilm-l6-v2}" \
      --transfer "$train_sets" --teacher "$logits/squad-train.npy+$logits/wikiqa-train.npy+$logits/trecqa-train-all.npy" \
      "${adapt[@]}" "${dev[@]}" --transfer-batch 128 --transfer-lr 8e-5 --adapt-lr 2e-5 \
      --transfer-seconds "${TRANSFER_SECONDS:-125}" --adapt-seconds "${ADAPT_SECONDS:-20}" \
      --freeze-word-embeddings --name minilm-l6-mpnet-distilled --out "${OUT_DIR:-$student}" "${@:2}" ;;
  ship)
    "$ansel" quantize --model "$tanda" --precision int8 --out models/mpnet-base-squad-tanda-int8
    "$ansel" quantize --model "$student" --precision int8 --out models/minilm-l6-mpnet-distilled-int8 ;;
  *) echo "usage: $0 data|tanda|adapt-alone|teacher|distill|ship" >&2; exit 2 ;;
esac
