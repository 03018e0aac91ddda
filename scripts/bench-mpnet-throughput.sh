#!/usr/bin/env bash
# MPNet cross-encoder inference throughput (issue 19 item 6): ansel's int8/fp32 ONNX graphs vs
# PyTorch fp32 and PyTorch dynamic int8 on the same weights and the same [BATCH, 64|128] batches,
# plus Python onnxruntime on ansel's graphs and on onnxruntime's transformer-optimized form of
# them, all in one Python process, round-robin; and ansel's own engine (`ansel bench`) in its own
# processes right before and after. Writes docs/results/mpnet-throughput.{md,jsonl}.
#
#   bash scripts/bench-mpnet-throughput.sh                 # venv bench/.venv-mpnet (created)
#   VENV=/work/gpuvenv ITERS=3 bash scripts/bench-mpnet-throughput.sh   # reuse a venv, quick try
#
# Env: ITERS (timed batches, default 20), BATCH (pairs per batch, default 16: with 7 engines x 2
# lengths, 32 would take ~25 minutes on 2 cores), HF (Hugging Face model dir,
# runs/mpnet-squad-tanda-gpu), INT8 (ansel int8 model dir), DATA (WikiQA-test.tsv), WAIT_MAX
# (seconds to wait for other engineers' ansel/cargo/rustc processes to end, 2700), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-bench/.venv-mpnet}
# PyTorch needs the weights as a Hugging Face directory: the run `train-cross-encoder-gpu.sh tanda`
# writes (not committed; only its int8 export is).
hf=${HF:-runs/mpnet-squad-tanda-gpu}
[ -d "$hf" ] || { echo "no $hf: run scripts/train-cross-encoder-gpu.sh tanda first (or set HF)" >&2; exit 1; }
int8=${INT8:-models/mpnet-base-squad-tanda-int8}
fp32=target/mpnet-tanda-fp32
data=${DATA:-../shared/data/wikiqa/WikiQA-test.tsv}
iters=${ITERS:-20}
out=${OUT:-docs/results/mpnet-throughput}
work=$fp32/bench
ansel=target/release/ansel
start=$(date +%s)
load_start=$(cat /proc/loadavg)

if ! "$venv/bin/python" -c 'import torch, transformers, onnxruntime, onnx' 2>/dev/null; then
  python3 -m venv "$venv"
  # The CPU build of torch: the default PyPI wheel pulls gigabytes of CUDA libraries.
  "$venv/bin/pip" install -q torch==2.11.0 --index-url "${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
  "$venv/bin/pip" install -q transformers==5.17.0 onnxruntime==1.31.1 onnx tokenizers safetensors numpy
fi
py="$venv/bin/python"
bash scripts/fetch-onnxruntime.sh
[ -x "$ansel" ] || cargo build --release -p ansel

# ansel's fp32 graph of the same weights (the int8 one is committed).
"$ansel" quantize --model "$hf" --precision fp32 --out "$fp32"
mkdir -p "$work" "$(dirname "$out")"
export HF="$hf" INT8="$int8" FP32="$fp32" DATA="$data" ITERS="$iters" BATCH="${BATCH:-16}" OUT="$out"
"$py" bench/mpnet_throughput.py prepare "$work"

# The machine is shared: wait (up to WAIT_MAX s) until no one else's eval/bench or build runs.
waited=0
while pgrep -x ansel >/dev/null || pgrep -x cargo >/dev/null || pgrep -x rustc >/dev/null; do
  if [ "$waited" -ge "${WAIT_MAX:-2700}" ]; then echo "still busy after ${waited}s; running anyway"; break; fi
  sleep 30
  waited=$((waited + 30))
done
echo "waited ${waited}s; load average $(cat /proc/loadavg)"

# ansel's own engine, one process per (length, precision); 2 threads (libtorch's count, which
# ansel's ONNX Runtime sessions take). One untimed warm-up pass, then ITERS timed passes.
ansel_side() {
  : >"$work/ansel-$1.jsonl"
  for len in 64 128; do
    for prec in fp32 int8; do
      dir=$fp32; [ "$prec" = int8 ] && dir=$int8
      report=$(OMP_NUM_THREADS=2 "$ansel" bench --data "$work/len$len.jsonl" --model "$dir" --repeat "$iters")
      echo "{\"len\": $len, \"precision\": \"$prec\", \"loadavg\": \"$(cat /proc/loadavg)\", \"report\": $report}" | tee -a "$work/ansel-$1.jsonl"
    done
  done
}
ansel_side before
"$py" bench/mpnet_throughput.py time "$work"
ansel_side after
# Same inputs: ansel's scores of the JSON lines vs Python onnxruntime's logits on the same graphs.
for len in 64 128; do
  OMP_NUM_THREADS=2 "$ansel" rank --data "$work/len$len.jsonl" --model "$fp32" >"$work/rank-fp32-len$len.jsonl"
  OMP_NUM_THREADS=2 "$ansel" rank --data "$work/len$len.jsonl" --model "$int8" >"$work/rank-int8-len$len.jsonl"
done

# What the report needs from this shell, kept beside the timings (`report` can be rerun from them).
cat >"$work/run.json" <<JSON
{"cpu": "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)",
 "ansel": "$("$ansel" --version) (target/release/ansel; ort 2.0.0-rc.15 + ONNX Runtime 1.31.1, vendor/onnxruntime)",
 "loadavg_script_start": "$load_start", "loadavg_script_end": "$(cat /proc/loadavg)",
 "waited_seconds": $waited, "wall_seconds": $(($(date +%s) - start))}
JSON
"$py" bench/mpnet_throughput.py report "$work"
