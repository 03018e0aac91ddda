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
# The general MPNet cross-encoder (issue 40): all-mpnet-base-v2 taught the general mixture of
# scripts/train-general-student.sh (SQuAD passages as questions and keywords, SemEval forum threads,
# the AS2 lists) by the shipped default's scores (mpnet-base-general: the TANDA model + 6 x (20 x for
# keywords) all-mpnet-base-v2's cosine, read in windows) beside the gold labels. The base and the
# result travel as int8 packs in parts (bench/device_pack.py), over four calls made back to back
# while the machine is warm (30 s); budget about 10 of the 15 device minutes:
#   bash scripts/train-cross-encoder-gpu.sh general-prepare   # here: data/gpu-general, the base's pack
#       # (the teacher's scores of the 36,604 pairs: 58 min on 2 cores, 2026-11-29, an MPNet reader
#       # training beside it for half of it; data/gpu-general is 12 MB, the pack 106 MB in 3 parts)
#   bash scripts/device-tree.sh slim                          # then the four device calls:
#     1. carry [target/device/mpnet-base/pack.json, target/device/mpnet-base/part-000]
#        command: bash scripts/train-cross-encoder-gpu.sh general-check
#     2. carry [target/device/mpnet-base/part-001]             command: true
#     3. carry [target/device/mpnet-base/part-002, data/gpu-general]
#        command: bash scripts/train-cross-encoder-gpu.sh general-train   (126 s on an H200; $OUT: parts 0-3)
#     4. command: bash scripts/train-cross-encoder-gpu.sh general-fetch   ($OUT: the other parts)
#     (2026-11-29, H200: calls 1-4 held the machine 242 s, its start included; 3 epochs trained in
#     102 s at 1,128 pairs/s. While warm, `TRANSFER_EPOCHS=1` and `TRANSFER_EPOCHS=5` general-train
#     + general-fetch added 96 s and 252 s: 576 s of the 900 in all)
#   bash scripts/device-tree.sh restore
#   bash scripts/train-cross-encoder-gpu.sh general-receive FILES_AT...  # here: each call's files_at,
#       # into runs/mpnet-base-general-ce-float, runs/mpnet-base-general-ce-int8 and its windowed card
#       # runs/mpnet-base-general-ce; then MODELS="runs/mpnet-base-general-ce" SCORE_ONLY=1 bash
#       # scripts/bench-general.sh and python3 scripts/general-ce-report.py target/general NAME...
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
general=data/gpu-general
general_run=runs/mpnet-general-gpu
base_pack=target/device/mpnet-base
general_pack=target/device/mpnet-general-out
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
  general-prepare)
    DATA_ONLY=1 bash scripts/train-general-student.sh
    mkdir -p "$general"
    mix=target/general-student/mix.jsonl suite=target/general/suite
    for f in "$mix" "$suite"/{squad-keyword,semeval-cqa,wikiqa-dev,trecqa-dev-f}.jsonl; do
      gzip -c "$f" >"$general/$(basename "$f").gz"
    done
    # The teacher's score of every candidate, in file order (what --teacher reads).
    if [ ! -f "$general/mix-teacher.npy" ]; then
      if [ ! -f "$general/mix-teacher.jsonl" ]; then
        "$ansel" rank --data "$mix" --model mpnet-base-general >"$general/mix-teacher.jsonl.tmp"
        mv "$general/mix-teacher.jsonl.tmp" "$general/mix-teacher.jsonl"
      fi
      python3 - "$general/mix-teacher.jsonl" "$general/mix-teacher.npy" <<'PY'
import json, sys
import numpy as np
scores = [s["score"] for line in open(sys.argv[1]) for s in json.loads(line)["scores"]]
np.save(sys.argv[2] + ".tmp.npy", np.asarray(scores, dtype=np.float16))
PY
      mv "$general/mix-teacher.npy.tmp.npy" "$general/mix-teacher.npy"
    fi
    bash scripts/fetch-mpnet.sh
    [ -f "$base_pack/pack.json" ] || python3 bench/device_pack.py pack vendor/models/all-mpnet-base-v2 "$base_pack" \
      --part-mib 40 --files config.json,tokenizer.json,model.safetensors
    du -sh "$general" "$base_pack"/* ;;
  general-check)
    # Device call 1: the GPU, the Python packages the trainer needs, and the parts so far.
    nvidia-smi --query-gpu=name,memory.total --format=csv
    python3 -c 'import torch, transformers, tokenizers, safetensors, numpy; print(torch.__version__, transformers.__version__, torch.cuda.is_available())'
    ls -la "$base_pack" ;;
  general-train)
    python3 bench/device_pack.py unpack "$base_pack" target/device/all-mpnet-base-v2
    python3 bench/cross_encoder_gpu.py --base target/device/all-mpnet-base-v2 \
      --transfer "$general/mix.jsonl.gz" --teacher "$general/mix-teacher.npy" --gold-weight "${GOLD_WEIGHT:-0.5}" \
      --dev "squad-keyword=$general/squad-keyword.jsonl.gz" --dev "semeval-cqa=$general/semeval-cqa.jsonl.gz" \
      --dev "wikiqa-dev=$general/wikiqa-dev.jsonl.gz" --dev "trecqa-dev-f=$general/trecqa-dev-f.jsonl.gz" \
      --transfer-epochs "${TRANSFER_EPOCHS:-3}" --transfer-seconds "${TRANSFER_SECONDS:-240}" --transfer-lr 2e-5 \
      --describe "mixture=scripts/train-general-student.sh's: SQuAD passage ranking over the split's train articles (half questions, half keywords; BM25's top 8), SemEval-2016 task A train part 2, WikiQA train, TrecQA train-all (300 lists), SQuAD-sent train (1500 lists); 36,604 pairs" \
      --describe "teacher_model=mpnet-base-general as shipped (mpnet-base-squad-tanda-int8's logit + 6 x, 20 x for keyword queries, mpnet-base-cosine-int8's cosine; candidates over 80 words read in windows), scored by ansel rank" \
      --freeze-word-embeddings --name mpnet-base-general-ce --out "$general_run" "${@:2}"
    # 15.5 MiB parts: four and the manifest fit one call's 64 MiB back.
    python3 bench/device_pack.py pack "$general_run" "$general_pack" --part-mib 15.5 \
      --files config.json,tokenizer.json,model.safetensors,model.json,reference.json,summary.json,train-log.jsonl
    cp "$general_pack"/pack.json "$general_pack"/part-00[0-3] "${OUT:?run on the device machine}"/ ;;
  general-fetch)
    find "$general_pack" -name 'part-*' ! -name 'part-00[0-3]' -exec cp {} "${OUT:?run on the device machine}"/ \; ;;
  general-receive)
    # FILES_AT...: the folders the device calls' files landed in, in any order. NAME names the
    # result (runs/NAME-float, runs/NAME-int8 and the windowed card runs/NAME) when one device
    # session trains several variants.
    name=${NAME:-mpnet-base-general-ce}
    rm -rf "$general_pack" && mkdir -p "$general_pack"
    for dir in "${@:2}"; do cp "$dir"/pack.json "$dir"/part-* "$general_pack"/ 2>/dev/null || true; done
    python3 bench/device_pack.py unpack "$general_pack" "runs/$name-float"
    "$ansel" quantize --model "runs/$name-float" --precision int8 --out "runs/$name-int8"
    python3 scripts/windowed-card.py "runs/$name-int8"  # read in windows, as the default
    ;;
  *) echo "usage: $0 data|tanda|adapt-alone|teacher|distill|ship|general-prepare|general-check|general-train|general-fetch|general-receive" >&2; exit 2 ;;
esac
