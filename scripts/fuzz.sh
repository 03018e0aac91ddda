#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) for SECONDS each (default 60) with cargo-fuzz on the
# nightly toolchain: the data readers, the sentence splitter, index's document reader, the HTTP routes.
#   SECONDS_EACH=300 bash scripts/fuzz.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(data_formats sentence_splitter index_documents server_requests)
for target in "${targets[@]}"; do
  echo "== $target"
  cargo +nightly fuzz run -O "$target" -- -max_total_time="${SECONDS_EACH:-60}" -rss_limit_mb=2048 2>&1 |
    grep -E "^Done|ERROR|SUMMARY|panicked" || true
done
