#!/usr/bin/env bash
# Trains the SQuAD span reader (issue 42) and converts it to the shipped int8 ONNX graph:
#   1. data/squad-spans/{train,dev,test}.jsonl: SQuAD v1.1 train as span records, split by article
#      exactly as data/squad-sent (scripts/squad-sent-data.sh) split it;
#   2. runs/minilm-l6-squad-span: MiniLM-L6 (the SQuAD-transfer cross-encoder's weights) with a
#      start/end head, reading the sentence with 16 words of context each side, trained on the
#      answer sentences and each record's hardest no-answer sentence ("no span" = [CLS]);
#      resumable (rerun to continue after a kill);
#   3. models/minilm-l6-squad-span-int8: the int8 ONNX graph, calibrated on dev records.
# On 2 cores: 2500 steps x 32 took 4,466 s (74 min; 12-33 readings/s as other work came and went).
# Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
lab=target/release/ansel-lab
run=${RUN:-runs/minilm-l6-squad-span}
out=${OUT:-models/minilm-l6-squad-span-int8}
cargo build --release -q -p ansel -p ansel-lab
bash scripts/squad-sent-data.sh
[ -f data/squad-spans/train.jsonl ] ||
  "$lab" squad-spans --data "$data/squad/train-v1.1.rebuilt.json.gz" --split data/squad-sent/split.json --out data/squad-spans
resume=()
[ -f "$run/checkpoint/state.json" ] && resume=(--resume)
if ! grep -q '"event":"end"' "$run/train-log.jsonl" 2>/dev/null; then
  "$ansel" train --model span-extractor --base models/minilm-l6-squad-transfer \
    --train data/squad-spans/train.jsonl --dev data/squad-spans/dev.jsonl --dev-records 1000 \
    --out "$run" --name minilm-l6-squad-span --context-words 16 --no-span --max-len 144 \
    --batch-size 32 --lr 5e-5 --warmup 0.1 --max-steps 2500 --eval-every 250 --checkpoint-every 50 \
    --patience 4 --threads 2 "${resume[@]}"
fi
"$ansel" quantize --model "$run" --out "$out" --precision int8
# The calibration is fitted on dev records (1000, an even sample), never on test.
"$ansel" eval-reader --data data/squad-spans/dev.jsonl --reader "$out" --records 1000 --calibrate
