#!/usr/bin/env bash
# Trains the SQuAD span reader (issue 42) and converts it to the shipped int8 ONNX graph:
#   1. data/squad-spans/{train,dev,test}.jsonl: SQuAD v1.1 train as span records, split by article
#      exactly as data/squad-sent (scripts/squad-sent-data.sh) split it;
#   2. runs/minilm-l6-squad-span: MiniLM-L6 (the SQuAD-transfer cross-encoder's weights) with a
#      start/end head, reading the sentence with 16 words of context each side, trained on the
#      answer sentences and each record's hardest no-answer sentence ("no span" = [CLS]);
#      2500 steps x 32 took 4,466 s on 2 cores (74 min; 12-33 readings/s as other work came and
#      went): dev F1 0.73 after 0.5 epoch;
#   3. runs/minilm-l6-squad-span-2 (STAGE=2): from the first run's weights, 4500 more steps (1.5
#      epochs) on the records with the no-span sentence of one record in four kept, so that three
#      steps in four teach spans where one in two did (train-quarter-negatives.jsonl), lr 4e-5;
#      about 1 step (30-36 readings) a second on 2 cores alone. The run of 2026-11-29 took 4,719 s:
#      dev F1 0.727, 0.751, 0.755, 0.755, 0.769, 0.777, 0.772, 0.773, 0.775 at steps 500-4500 (the
#      first run's best: 0.732); step 3000's weights are kept (EM 0.601, F1 0.777);
#   3b. runs/minilm-l6-squad-span-3 (STAGE=3): from stage 2's weights, 4500 more steps on the same
#      file in another order (seed 5) at half the peak lr (2e-5), since stage 2's dev F1 flattened
#      after step 3000 at 4e-5. The run of 2026-11-29 took 5,971 s (other work beside it for half
#      of it; 25-37 readings/s): dev F1 0.765, 0.772, 0.777, 0.778, 0.776, 0.781, 0.774 (the epoch's
#      end, step 3046), 0.774, 0.779, 0.778 at steps 500-4500; step 3000's weights are kept (EM
#      0.608, F1 0.781). The curve is flat: about 0.78 is what MiniLM-L6 reaches on this data;
#   4. models/minilm-l6-squad-span-int8: the int8 ONNX graph of the last stage run, calibrated on
#      dev records.
# STAGE=N (default 1) trains up to stage N, each from the one before. runs/ need not outlive a
# session: where no earlier stage finished on this machine, the shipped reader's int8 graph (stage
# N-1's) is dequantized (bench/dequantize_onnx.py) and stands in for it, within half a quantization
# step of its weights. Each card lists the data and bases of every stage before it.
# Each run is resumable: rerun the script to continue after a kill. Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
lab=target/release/ansel-lab
run=${RUN:-runs/minilm-l6-squad-span}
run2=${RUN2:-runs/minilm-l6-squad-span-2}
run3=${RUN3:-runs/minilm-l6-squad-span-3}
out=${OUT:-models/minilm-l6-squad-span-int8}
cargo build --release -q -p ansel -p ansel-lab
source scripts/span-reader-lib.sh
squad_span_data

ended() { grep -q '"event":"end"' "$1/train-log.jsonl" 2>/dev/null; }
# train RUN NAME BASE TRAIN-FILE FLAGS...: one reader run, resumed from its checkpoint if there is one.
train() {
  local dir=$1 name=$2 base=$3 file=$4
  shift 4
  ended "$dir" && return
  local resume=()
  [ -f "$dir/checkpoint/state.json" ] && resume=(--resume)
  "$ansel" train --model span-extractor --base "$base" --train "$file" \
    --dev data/squad-spans/dev.jsonl --dev-records 1000 --out "$dir" --name "$name" \
    --context-words 16 --no-span --max-len 144 --batch-size 32 --patience 4 --threads 2 \
    "$@" "${resume[@]}"
}

# MPNET=1: an MPNet reader instead (issue 42's "MPNet where a GPU is available"; here on 2 cores,
# resumed across sessions), from the shipped MPNet cross-encoder's weights (its int8 graph
# dequantized, as stage 1 starts from the SQuAD-transfer cross-encoder), stage 1's recipe at a
# smaller peak lr for 1000 steps (32,000 readings, a fifth of an epoch); its int8 graph goes to
# runs/, not models/ (MPNet costs several times MiniLM-L6 a reading: an opt-in reader or a teacher,
# not `ask`'s default). The run begun 2026-11-29 read 4.1-5.6 readings/s on 2 cores alone (0.3-1.1
# with other work beside it), so 1000 steps take about 2 hours and span sessions: dev EM / F1
# 0.535 / 0.741 at step 200, 0.571 / 0.764 at step 400, 0.613 / 0.788 at step 600, 0.616 / 0.794
# at step 800 and 0.618 / 0.794 at step 1000 (finished 2026-11-30; 21,760 s of training), no-span
# accuracy 0.864 to 0.906 (the same evaluation of the shipped MiniLM reader's stage 3: 0.608 /
# 0.781, 0.858); rerun to resume. Its int8 graph loses most of that (eval-reader, 1000 dev
# records: EM / F1 0.409 / 0.606, against 0.616 / 0.790 for its fp32 graph, `ansel quantize
# --precision fp32`), where the MiniLM reader's int8 graph costs 0.012 EM: read it in fp32. What
# costs it is the feed-forward output projection of every layer (its input, the GELU output,
# quantized to uint8 per tensor): those 12 layers read in float (bench/onnx_float_layers.py
# INT8 FP32 OUT 'layer\.[0-9]+\.output\.dense$') give 0.563 / 0.737 at about 1.5x int8's time;
# on 200 records (int8 0.375), one of them alone in float gives 0.365-0.445 (layers 0, 3, 6, 9,
# 11), all query/key/value projections 0.47, all feed-forward input projections 0.47; the same 6
# layers of the MiniLM reader in float change little (0.590 / 0.767 against 0.589 / 0.760, 1000
# records). Both graphs are made and calibrated as the MiniLM reader's is (`calibrate`,
# scripts/span-reader-lib.sh); `OTHER=runs/mpnet-base-squad-span-fp32 bash
# scripts/bench-span-reader.sh` measures the one to read.
if [ "${MPNET:-0}" = 1 ]; then
  tanda=runs/mpnet-base-squad-tanda-dequantized
  bash scripts/dequantize-onnx.sh models/mpnet-base-squad-tanda-int8 "$tanda"
  mpnet_run=${MPNET_RUN:-runs/mpnet-base-squad-span}
  train "$mpnet_run" mpnet-base-squad-span "$tanda" data/squad-spans/train.jsonl \
    --lr 3e-5 --warmup 0.05 --max-steps 1000 --eval-every 200 --checkpoint-every 25
  for precision in int8 fp32; do
    "$ansel" quantize --model "$mpnet_run" --out "runs/mpnet-base-squad-span-$precision" --precision "$precision"
    calibrate "runs/mpnet-base-squad-span-$precision"
  done
  exit 0
fi

fewer=data/squad-spans/train-quarter-negatives.jsonl
if [ ! -f "$fewer" ]; then
  python3 -c 'import json, sys
with open(sys.argv[2], "w") as out:
    for i, line in enumerate(open(sys.argv[1])):
        r = json.loads(line)
        if i % 4:
            r["negative"] = None
        out.write(json.dumps(r, ensure_ascii=False) + "\n")' data/squad-spans/train.jsonl "$fewer.tmp"
  mv "$fewer.tmp" "$fewer"
fi

# stage K BASE: trains stage K's run from BASE.
stage() {
  case $1 in
    1) train "$run" minilm-l6-squad-span "$2" data/squad-spans/train.jsonl \
         --lr 5e-5 --warmup 0.1 --max-steps 2500 --eval-every 250 --checkpoint-every 50 ;;
    2) train "$run2" minilm-l6-squad-span "$2" "$fewer" \
         --lr 4e-5 --warmup 0.05 --max-steps 4500 --eval-every 500 --checkpoint-every 100 --seed 3 ;;
    3) train "$run3" minilm-l6-squad-span "$2" "$fewer" \
         --lr 2e-5 --warmup 0.05 --max-steps 4500 --eval-every 500 --checkpoint-every 100 --seed 5 ;;
  esac
}
runs=("" "$run" "$run2" "$run3")
last_stage=${STAGE:-1}
base=models/minilm-l6-squad-transfer
first=1
# The base of the first stage to train is the latest earlier stage that finished on this machine;
# where none did (runs/ does not outlive a session), the shipped graph, which is stage
# LAST_STAGE-1's, dequantized afresh (it changes when a stage ships).
for ((k = last_stage - 1; k >= 1; k--)); do
  if ended "${runs[$k]}"; then
    base=${runs[$k]} first=$((k + 1))
    break
  fi
done
if [ "$first" = 1 ] && [ "$last_stage" -gt 1 ]; then
  base=runs/minilm-l6-squad-span-from-int8 first=$last_stage
  echo "no earlier stage on this machine: stage $last_stage starts from $out, dequantized into $base" >&2
  rm -rf "$base"
  bash scripts/dequantize-onnx.sh "$out" "$base"
fi
for k in $(seq "$first" "$last_stage"); do
  stage "$k" "$base"
  base=${runs[$k]}
done
last=$base
"$ansel" quantize --model "$last" --out "$out" --precision int8
calibrate "$out"
