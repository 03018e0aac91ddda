#!/usr/bin/env bash
# Fetches ONNX Runtime's shared library (what the `ort` crate loads at run time for the int8/fp32
# ONNX cross-encoder, crates/ansel-onnx) from the PyPI `onnxruntime` wheel into vendor/onnxruntime/lib.
# Pinned to 1.31.1, the ONNX Runtime release ort 2.0.0-rc.15 is built against. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.31.1
dest=vendor/onnxruntime
stamp="$dest/.complete-onnxruntime-$version"
[ -f "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== fetching ONNX Runtime $version from PyPI (onnxruntime wheel)"
pip download -q --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  "onnxruntime==$version" -d "$work"
unzip -q "$work"/onnxruntime-"$version"-*.whl 'onnxruntime/capi/libonnxruntime.so*' -d "$work/ort"
rm -rf "$dest" "$dest.partial"
mkdir -p "$dest.partial/lib"
lib=$(ls "$work"/ort/onnxruntime/capi/libonnxruntime.so* | head -n 1)
cp "$lib" "$dest.partial/lib/libonnxruntime.so"
mv "$dest.partial" "$dest"
touch "$stamp"
du -sh "$dest"
