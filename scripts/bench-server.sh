#!/usr/bin/env bash
# Bounded load test of `ansel serve` on loopback (127.0.0.1 only): indexes the sample corpus,
# starts the server on a free port, sends at most 20000 requests per endpoint (stopping early
# after 20 s each) plus malformed and oversized requests, checks the server is still healthy,
# stops it with SIGTERM and writes docs/results/server-load.md. The report names the models the
# server ranked with (its /health).
#   MODEL=SPEC OUT=FILE bash scripts/bench-server.sh   # another rerank model (e.g. a peer run), another file
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p ansel -p ansel-lab
bin=./target/release/ansel
lab=./target/release/ansel-lab
out=${OUT:-docs/results/server-load.md}
# shellcheck source=scripts/serve-sample.sh
source scripts/serve-sample.sh
start_sample_server ${MODEL:+--model "$MODEL"}

timeout 90 "$lab" bench-server --addr "$addr" --questions examples/corpus-questions.jsonl \
  --requests 20000 --concurrency 8 --max-seconds 20 --out "$out"

kill -TERM "$server"
wait "$server"   # graceful shutdown exits 0; anything else fails the script
server=""
if [ -n "${MODEL:-}" ]; then
  printf '\nServer: `ansel serve --index INDEX --model %s`.\n' "$MODEL" >>"$out"
else
  printf '\nServer: `ansel serve --index INDEX` (its default models, crates/ansel/src/models.rs).\n' >>"$out"
fi
echo "wrote $out"
