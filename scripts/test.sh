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
# The pinned Python tools of the client and OpenAPI checks install (mostly network) while cargo
# builds; both checks wait for it below.
venvs_log=target/test-venvs.log
mkdir -p target
{ bash scripts/test-clients.sh --venv-only && bash scripts/test-openapi.sh --venv-only; } >"$venvs_log" 2>&1 &
venvs=$!
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
bash scripts/test-spark.sh   # ansel.spark on local[2] Spark (pinned pyspark, Java 17)
# Real reranking clients (cohere SDK, rerankers) against a running server.
wait "$venvs" || { cat "$venvs_log" >&2; echo "installing the clients' and OpenAPI tools failed" >&2; exit 1; }
bash scripts/test-clients.sh
# The OpenAPI document validates, and schemathesis finds no 5xx or schema violation (bounded run).
bash scripts/test-openapi.sh
