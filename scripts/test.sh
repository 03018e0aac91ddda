#!/usr/bin/env bash
# Runs every check a commit must pass: formatting, clippy with warnings as errors, and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# The web page test drives headless Chromium; install it where we can (CI runs as root).
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing chromium for the web page test"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }
fi
cargo fmt --all -- --check
# The pinned Python tools of the Spark, client and OpenAPI checks download and install (network,
# little CPU) while cargo builds; those checks wait for it below.
prepare_log=target/test-prepare.log
mkdir -p target
{ bash scripts/test-spark.sh --prepare && bash scripts/test-clients.sh --prepare &&
  bash scripts/test-openapi.sh --prepare; } >"$prepare_log" 2>&1 &
prepared=$!
# Clippy and the tests use the release profile that scripts/setup.sh builds with: the dependencies
# (torch-sys's C++ wrapper above all) then compile once instead of once per profile, which halves CI.
cargo clippy -q --release --all-targets -- -D warnings
bash scripts/fetch-onnxruntime.sh   # the ONNX cross-encoder tests load libonnxruntime.so (idempotent)
cargo test -q --release --workspace
# The library and the Python package without libtorch (lexical and ONNX models only).
cargo clippy -q --release -p ansel-python --no-default-features -- -D warnings
cargo test -q --release -p ansel --lib --no-default-features
# The README's command lines name real subcommands and flags (the tests above built the binary).
python3 scripts/check-readme-commands.py README.md docs/guide/*.md
# The Python package, installed with pip into a fresh virtual environment.
bash scripts/test-python.sh
wait "$prepared" || { cat "$prepare_log" >&2; echo "preparing the Spark, client and OpenAPI checks failed" >&2; exit 1; }
bash scripts/test-spark.sh   # ansel.spark on local[2] Spark (pinned pyspark, Java 17)
# Real reranking clients (cohere SDK, rerankers) against a running server.
bash scripts/test-clients.sh
# The OpenAPI document validates, and schemathesis finds no 5xx or schema violation (bounded run).
bash scripts/test-openapi.sh
