#!/usr/bin/env bash
# Real reranking clients against `ansel serve`: the official cohere Python SDK (ClientV2 and
# Client) and the rerankers library, pinned, in a venv of their own (target/clients-venv), with
# the server requiring an API key. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/clients-venv
# shellcheck source=scripts/pinned-venv.sh
source scripts/pinned-venv.sh
pinned_venv "$venv" cohere==7.3.1 rerankers==0.10.0
[ "${1:-}" = --prepare ] && exit 0  # scripts/test.sh installs it early, in the background
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -q -p ansel
# shellcheck source=scripts/serve-sample.sh
source scripts/serve-sample.sh
ANSEL_API_KEY=client-test-key start_sample_server --model wo-rr --rerank-model none
"$venv/bin/python" bench/client_compat.py "http://$addr" client-test-key
