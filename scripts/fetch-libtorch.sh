#!/usr/bin/env bash
# Fetches the CPU part of libtorch 2.13 (what the tch crate links) from PyPI wheels into vendor/libtorch.
# PyPI's torch wheel is the CUDA build: we keep its headers and CPU libraries, and take the two small
# CUDA runtime libraries that libtorch_cpu.so still links from their own wheels. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=vendor/libtorch
stamp="$dest/.complete-torch-2.13.0"
[ -f "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== fetching libtorch 2.13.0 from PyPI (torch, nvidia-cuda-runtime, nvidia-cuda-cupti wheels)"
pip download -q --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_25_x86_64 --platform manylinux_2_17_x86_64 \
  torch==2.13.0 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85 -d "$work"
rm -rf "$dest" "$dest.partial"
mkdir -p "$dest.partial/lib"
unzip -q "$work"/torch-2.13.0-*.whl 'torch/include/*' 'torch/lib/libc10.so' 'torch/lib/libtorch_cpu.so' \
  'torch/lib/libtorch.so' 'torch/lib/libgomp.so.1' -d "$work/torch"
mv "$work/torch/torch/include" "$dest.partial/include"
mv "$work/torch/torch/lib/"* "$dest.partial/lib/"
for wheel in "$work"/nvidia_cuda_runtime-*.whl "$work"/nvidia_cuda_cupti-*.whl; do
  unzip -q -o "$wheel" 'nvidia/cu13/lib/libcudart.so.13' 'nvidia/cu13/lib/libcupti.so.13' -d "$work/cuda" 2>/dev/null || true
done
mv "$work/cuda/nvidia/cu13/lib/"* "$dest.partial/lib/"
mv "$dest.partial" "$dest"
touch "$stamp"
du -sh "$dest"
