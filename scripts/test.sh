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
cargo clippy -q --all-targets -- -D warnings
bash scripts/fetch-onnxruntime.sh   # the ONNX cross-encoder tests load libonnxruntime.so (idempotent)
cargo test -q --workspace
