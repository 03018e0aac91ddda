# Sourced by scripts that need a running server: indexes examples/corpus into a temporary folder,
# starts `ansel serve` on a free loopback port with the flags given to start_sample_server, and sets
# `addr` (host:port) and `server` (its pid); the EXIT trap stops it and removes the folder.
#   source scripts/serve-sample.sh; start_sample_server --model wo-rr
bin=${bin:-target/release/ansel}
work=$(mktemp -d)
server=""
stop_sample_server() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap stop_sample_server EXIT

start_sample_server() {
  "$bin" index --index "$work/index" examples/corpus >/dev/null
  "$bin" serve --index "$work/index" --addr 127.0.0.1:0 "$@" >"$work/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$work/serve.log" && break
    sleep 0.1
  done
  addr=$(sed -n 's|^ansel serve: listening on http://||p' "$work/serve.log")
  [ -n "$addr" ] || { cat "$work/serve.log" >&2; echo "the server did not start" >&2; exit 1; }
}
