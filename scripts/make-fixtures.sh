#!/usr/bin/env bash
# Remakes crates/ansel/tests/fixtures/cross-encoders: tiny random BERT, RoBERTa, XLM-RoBERTa and
# MPNet cross-encoders as Hugging Face directories and two ONNX exports, with the token ids and
# logits transformers (on torch) and onnxruntime compute for a few pairs (bench/make_fixtures.py).
# Run by hand when the fixtures change; CI reads the committed files and never installs torch.
#
# The venv (target/fixtures-venv, about 5 GB) pins every version. PyPI's Linux torch wheel is the
# CUDA build: pip installs it with its CUDA libraries from PyPI (nothing else is reachable here);
# they are loaded, never used (the fixtures are computed on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/fixtures-venv
pins=(torch==2.13.0 transformers==5.23.0 onnxruntime==1.31.1 onnx==1.23.2 onnxscript==0.7.2 tokenizers==0.23.3 safetensors==0.8.0)
if ! "$venv/bin/python" -c "import torch, transformers, onnxruntime, onnx" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "${pins[@]}"
fi
out=crates/ansel/tests/fixtures/cross-encoders
CUDA_VISIBLE_DEVICES="" "$venv/bin/python" bench/make_fixtures.py "$out"
