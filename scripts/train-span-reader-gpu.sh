#!/usr/bin/env bash
# The span reader on a lent GPU (issue 42): an MPNet reader trained on all of SQuAD's training
# records, then the shipped MiniLM-L6 reader taught by it (its start/end distributions beside the
# gold span), in one device call; bench/span_reader_gpu.py does the training (PyTorch), on inputs
# ansel encoded (`ansel-lab span-inputs`), so both read in `ask` exactly what they trained on. The
# CPU route is scripts/train-span-reader.sh (MiniLM-L6 flat at dev F1 0.78 after 370k readings; the
# MPNet reader there reads about 5 a second).
#   bash scripts/train-span-reader-gpu.sh prepare     # here: data/gpu-span (the encoded records,
#       # gzipped: 154,545 training and 7,717 dev examples per tokenizer) and the two bases as int8
#       # packs (target/device/span-mpnet-base: 3 parts of 36 MiB, target/device/span-minilm-base:
#       # 1 part of 34 MiB, its word embeddings float16 as the shipped graph has them); 1.5 min on 2 cores (2026-11-30)
#   bash scripts/device-tree.sh slim                  # then five device calls, back to back (a
#       # call sends 64 MiB, the slim tree's code about 15 of them; data/gpu-span is 22 MB):
#     1. carry [target/device/span-mpnet-base/pack.json, target/device/span-mpnet-base/part-000]
#        command: bash scripts/train-span-reader-gpu.sh check
#     2. carry [target/device/span-mpnet-base/part-001, data/gpu-span/train-mpnet.jsonl.gz,
#               data/gpu-span/train-mpnet.json]                                  command: true
#     3. carry [target/device/span-mpnet-base/part-002, data/gpu-span/train-minilm.jsonl.gz,
#               data/gpu-span/train-minilm.json, data/gpu-span/dev-mpnet.jsonl.gz,
#               data/gpu-span/dev-mpnet.json, data/gpu-span/dev-minilm.jsonl.gz,
#               data/gpu-span/dev-minilm.json]                                   command: true
#     4. carry [target/device/span-minilm-base]
#        command: bash scripts/train-span-reader-gpu.sh train   ($OUT: the student's pack)
#     5. command: bash scripts/train-span-reader-gpu.sh fetch   ($OUT: the MPNet reader's pack)
#   bash scripts/device-tree.sh restore
#   bash scripts/train-span-reader-gpu.sh receive FILES_AT...  # here: each call's files_at, into
#       # runs/minilm-l6-squad-span-kd(-int8) and runs/mpnet-base-squad-span-gpu(-fp32), calibrated;
#       # then OTHER=runs/minilm-l6-squad-span-kd-int8 bash scripts/bench-span-reader.sh
# TEACHER_SECONDS (220) and STUDENT_SECONDS (120) bound the two trainings (each stops at the step
# count its measured rate allows) so that `train` stays inside one call's 10 minutes.
# A dry run on a CPU: SPAN_DATA=DIR (instead of data/gpu-span) with RECORDS=N (prepare encodes
# only the first N training records), DEV_EXAMPLES=N (dev examples each evaluation reads; 2000),
# PYTHON (an interpreter with torch; the device's python3 by default), OUT=DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
lab=target/release/ansel-lab
ansel=target/release/ansel
python=${PYTHON:-python3}
data=${SPAN_DATA:-data/gpu-span}
mpnet_base=runs/mpnet-base-squad-tanda-dequantized
minilm_base=runs/minilm-l6-squad-span-from-int8
mpnet_pack=target/device/span-mpnet-base
minilm_pack=target/device/span-minilm-base
teacher=runs/mpnet-base-squad-span-gpu
student=runs/minilm-l6-squad-span-kd
student_pack=target/device/span-student-out
teacher_pack=target/device/span-teacher-out
source scripts/span-reader-lib.sh
# What both readers read: the shipped reader's settings (models/minilm-l6-squad-span-int8's card).
settings=(--context-words 16 --max-len 144 --max-question-pieces 48 --max-answer-tokens 10)
case "${1:-}" in
  prepare)
    cargo build --release -q -p ansel -p ansel-lab
    squad_span_data
    # What was prepared from another shipped reader or another encoding is prepared again.
    stamp=$(cat models/minilm-l6-squad-span-int8/model.onnx crates/ansel-reader/src/{lib,input,squad}.rs |
      sha256sum | cut -c1-16)
    if [ "$(cat "$data/stamp" 2>/dev/null)" != "$stamp" ]; then
      rm -rf "$data" "$minilm_pack" "$minilm_base"
    fi
    bash scripts/dequantize-onnx.sh models/mpnet-base-squad-tanda-int8 "$mpnet_base"
    bash scripts/dequantize-onnx.sh models/minilm-l6-squad-span-int8 "$minilm_base"
    mkdir -p "$data"
    echo "$stamp" >"$data/stamp"
    for reader in mpnet:$mpnet_base minilm:$minilm_base; do
      name=${reader%%:*} base=${reader#*:}
      for split in train dev; do
        [ -f "$data/$split-$name.jsonl.gz" ] && continue
        records=()
        [ "$split" = train ] && records=(--records "${RECORDS:-0}")
        "$lab" span-inputs --base "$base" --data "data/squad-spans/$split.jsonl" --out target/span-inputs \
          --name "$split-$name" "${settings[@]}" "${records[@]}"
        cp "target/span-inputs/$split-$name.json" "$data/"
        gzip -c "target/span-inputs/$split-$name.jsonl" >"$data/$split-$name.jsonl.gz.tmp"
        mv "$data/$split-$name.jsonl.gz.tmp" "$data/$split-$name.jsonl.gz"
      done
    done
    [ -f "$mpnet_pack/pack.json" ] || python3 bench/device_pack.py pack "$mpnet_base" "$mpnet_pack" \
      --part-mib 36 --files config.json,tokenizer.json,model.safetensors,model.json
    [ -f "$minilm_pack/pack.json" ] || python3 bench/device_pack.py pack "$minilm_base" "$minilm_pack" \
      --part-mib 40 --files config.json,tokenizer.json,model.safetensors,model.json,span_head.safetensors \
      --float16 word_embeddings
    du -sh "$data" "$mpnet_pack"/* "$minilm_pack"/* ;;
  check)
    # Device call 1: the GPU, the trainer's packages, the parts so far.
    nvidia-smi --query-gpu=name,memory.total --format=csv
    "$python" -c 'import torch, transformers, tokenizers, safetensors, numpy; print(torch.__version__, transformers.__version__, torch.cuda.is_available())'
    ls -la "$mpnet_pack" "$minilm_pack" ;;
  train)
    work=target/device/span
    mkdir -p "$work"
    for f in "$data"/*.jsonl.gz; do gunzip -c "$f" >"$work/$(basename "$f" .gz)"; done
    cp "$data"/*.json "$work/"
    "$python" bench/device_pack.py unpack "$mpnet_pack" "$work/mpnet-base"
    "$python" bench/device_pack.py unpack "$minilm_pack" "$work/minilm-base"
    # The teacher: MPNet from the shipped TANDA cross-encoder's weights, as the CPU MPNet run starts.
    "$python" bench/span_reader_gpu.py train --base "$work/mpnet-base" --train "$work/train-mpnet.jsonl" \
      --dev "$work/dev-mpnet.jsonl" --out "$teacher" --name mpnet-base-squad-span --dev-examples "${DEV_EXAMPLES:-2000}" \
      --lr 3e-5 --batch 32 --epochs "${TEACHER_EPOCHS:-2}" --seconds "${TEACHER_SECONDS:-220}" --eval-every 2000
    "$python" bench/span_reader_gpu.py logits --model "$teacher" --inputs "$work/train-mpnet.jsonl" \
      --out "$work/teacher-logits.jsonl"
    # The student: the shipped MiniLM reader, taught the teacher's distributions beside the gold span.
    "$python" bench/span_reader_gpu.py train --base "$work/minilm-base" --train "$work/train-minilm.jsonl" \
      --dev "$work/dev-minilm.jsonl" --out "$student" --name minilm-l6-squad-span \
      --dev-examples "${DEV_EXAMPLES:-2000}" --teacher "$work/teacher-logits.jsonl" --alpha "${ALPHA:-0.7}" --temperature 2 \
      --lr 3e-5 --batch 32 --epochs "${STUDENT_EPOCHS:-2}" --seconds "${STUDENT_SECONDS:-120}" --eval-every 2000
    # 15.5 MiB parts: a call brings back 8 files of 16 MiB at most. The student's word embeddings
    # travel as float16 (ansel's reader graph keeps them float: int8 rows cost exact match), the
    # teacher's as int8 rows like its other weights (a teacher and a measurement, not shipped).
    files=config.json,tokenizer.json,model.safetensors,span_head.safetensors,model.json,summary.json,train-log.jsonl
    "$python" bench/device_pack.py pack "$student" "$student_pack" --part-mib 15.5 --files "$files" \
      --float16 word_embeddings
    "$python" bench/device_pack.py pack "$teacher" "$teacher_pack" --part-mib 15.5 --files "$files"
    cp "$student_pack"/* "${OUT:?run on the device machine}"/ ;;
  fetch)
    cp "$teacher_pack"/* "${OUT:?run on the device machine}"/ ;;
  receive)
    # FILES_AT...: the folders the device calls' files landed in (each holds one pack; it is
    # unpacked under the name of the run it was made from).
    for dir in "${@:2}"; do
      [ -f "$dir/pack.json" ] || continue
      name=$(python3 -c 'import json, os, sys; print(os.path.basename(json.load(open(sys.argv[1]))["source"].rstrip("/")))' "$dir/pack.json")
      python3 bench/device_pack.py unpack "$dir" "runs/$name"
      # An MPNet reader's int8 graph loses most of its exact match (scripts/train-span-reader.sh,
      # MPNET=1): it is read in fp32.
      precision=int8
      grep -q '"model_type": *"mpnet"' "runs/$name/config.json" && precision=fp32
      "$ansel" quantize --model "runs/$name" --precision "$precision" --out "runs/$name-$precision"
      calibrate "runs/$name-$precision"
    done ;;
  *) echo "usage: $0 prepare|check|train|fetch|receive" >&2; exit 2 ;;
esac
