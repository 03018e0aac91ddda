#!/usr/bin/env bash
# Real reranking clients against `ansel serve`: the official cohere Python SDK (ClientV2 and
# Client) and the rerankers library, pinned, in a venv of their own (target/clients-venv), with
# the server requiring an API key. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/clients-venv
if ! "$venv/bin/python" -c "import cohere, rerankers" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q cohere==7.3.1 rerankers==0.10.0
fi
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -q -p ansel
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$bin" index --index "$work/index" examples/corpus >/dev/null
ANSEL_API_KEY=client-test-key "$bin" serve --index "$work/index" --model wo-rr --addr 127.0.0.1:0 >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 300); do
  grep -q "listening on" "$work/serve.log" && break
  sleep 0.1
done
addr=$(sed -n 's|^ansel serve: listening on http://||p' "$work/serve.log")
[ -n "$addr" ] || { cat "$work/serve.log" >&2; exit 1; }
"$venv/bin/python" bench/client_compat.py "http://$addr" client-test-key
