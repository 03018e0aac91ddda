#!/usr/bin/env bash
# The Python package against the CLI: Ranker.score's overhead per question, and Spark local[2]
# throughput (PAIRS pairs with wo-rr, DEFAULT_PAIRS with the default model) against `ansel rank`.
# Writes docs/results/python.md (rows in target/bench-python/python.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/ansel ] || cargo build --release -p ansel
bash scripts/test-spark.sh >/dev/null   # installs the package with its Spark extras, and checks it
target/python-venv/bin/python bench/python_bindings.py target/bench-python docs/results/python.md
cat docs/results/python.md
