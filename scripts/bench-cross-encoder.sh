#!/usr/bin/env bash
# Scores cross-encoder model directories on WikiQA test (answered and clean question sets) and
# TrecQA test-filtered; prints one JSON line per (model, set) and writes each model's lines to
# docs/results/cross-encoder-eval-<model>.jsonl.
#   bash scripts/bench-cross-encoder.sh [MODEL_DIR...]    (default: models/minilm-l6-*)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA:-../shared/data}
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -p ansel
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/minilm-l6-*)
mkdir -p docs/results
for m in "${models[@]}"; do
  out=docs/results/cross-encoder-eval-$(basename "$m").jsonl
  : > "$out.tmp"
  "$bin" eval --data "$data/wikiqa/WikiQA-test.tsv" --model "$m" --json | tee -a "$out.tmp"
  "$bin" eval --data "$data/wikiqa/WikiQA-test.tsv" --model "$m" --json --clean | tee -a "$out.tmp"
  "$bin" eval --data "$data/trecqa/jsonl/test-filtered.jsonl" --model "$m" --json --clean | tee -a "$out.tmp"
  mv "$out.tmp" "$out"
done
