#!/usr/bin/env bash
# Inference throughput of ansel's cross-encoder vs PyTorch on the same weights and inputs, plus
# correctness checks (token ids, embedding, logits). Also ONNX Runtime (ort, fp32 and int8
# dynamic quantization of the same weights, crates/ansel-onnx), timed in one process with tch,
# batch by batch in turn. Creates bench/.venv with torch 2.13.0 and
# transformers from PyPI on first use. Writes docs/results/cross-encoder-throughput.{md,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${BASE:-vendor/models/all-minilm-l6-v2}
data=${DATA:-../shared/data/wikiqa/WikiQA-test.tsv}
iters=${ITERS:-20}
if [ ! -x bench/.venv/bin/python ] || ! bench/.venv/bin/python -c 'import torch, transformers' 2>/dev/null; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install -q torch==2.13.0 transformers==4.57.6 numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash scripts/fetch-onnxruntime.sh
cargo run --release -q -p ansel-bert --example throughput -- "$base" "$data" "$work" "$iters"
cargo run --release -q -p ansel-onnx --example throughput -- "$work" "$iters"
mkdir -p docs/results
bench/.venv/bin/python bench/throughput.py "$base" "$work" docs/results/cross-encoder-throughput "$iters"
