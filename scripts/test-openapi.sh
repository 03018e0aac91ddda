#!/usr/bin/env bash
# The OpenAPI document against the server it describes: fetches /openapi.json from `ansel serve`
# (on loopback, serving the tiny BERT cross-encoder fixture, so /tokenize has tokens to give),
# validates it with openapi-spec-validator, then lets schemathesis send generated requests, valid
# and invalid, to every route: at most 25 per route and 60 s of fuzzing. Any 5xx, any status code or
# content type the document does not list, or any response its schema does not allow fails the run.
# Both tools are pinned, in a venv of their own (target/openapi-venv). Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/openapi-venv
# shellcheck source=scripts/pinned-venv.sh
source scripts/pinned-venv.sh
pinned_venv "$venv" schemathesis==4.32.5 openapi-spec-validator==0.9.0
[ "${1:-}" = --prepare ] && exit 0  # scripts/test.sh installs it early, in the background
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -q -p ansel
# shellcheck source=scripts/serve-sample.sh
source scripts/serve-sample.sh
start_sample_server --model crates/ansel/tests/fixtures/cross-encoders/bert --rerank-model none --timeout-ms 10000
"$venv/bin/python" - "http://$addr/openapi.json" "$work/openapi.json" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    open(sys.argv[2], "wb").write(response.read())
PY
"$venv/bin/openapi-spec-validator" "$work/openapi.json"
# Deterministic generation (seeded), no example database left behind, one worker (the server's
# queue is not what is under test here); run in the temporary folder, where its cache goes.
(cd "$work" && timeout 120 "$OLDPWD/$venv/bin/st" run "http://$addr/openapi.json" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples 25 --max-time 60 --seed 24 --workers 1 --generation-database none \
  --request-timeout 15 --no-color)
