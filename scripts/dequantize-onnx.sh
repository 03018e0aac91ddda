#!/usr/bin/env bash
# bench/dequantize_onnx.py SRC OUT in a virtual environment with its pins (numpy, onnx from PyPI):
# an int8 ONNX graph of ansel's back as fp32 weights. Skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1 out=$2 venv=target/onnx-venv
[ -f "$out/model.safetensors" ] && exit 0
"$venv/bin/python" -c 'import numpy, onnx' 2>/dev/null \
  || { python3 -m venv "$venv" && "$venv/bin/pip" install -q numpy==2.4.6 onnx==1.23.2; }
"$venv/bin/python" bench/dequantize_onnx.py "$src" "$out"
