#!/usr/bin/env bash
# Runs every check a commit must pass: formatting, clippy with warnings as errors, and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy -q --all-targets -- -D warnings
cargo test -q --workspace
