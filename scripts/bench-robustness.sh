#!/usr/bin/env bash
# The robustness battery (issue 22), bounded to a few minutes: overload, slow and idle clients,
# max-size requests, shutdown with stalled clients (ansel serve on loopback), a 200 MB and a 2 GB
# input to `ansel index`, and a full disk (a 3 MB tmpfs; needs root, skipped otherwise). Writes
# docs/results/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ansel
python3 bench/robustness.py target/release/ansel "${OUT:-docs/results/robustness.md}"
