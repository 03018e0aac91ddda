#!/usr/bin/env bash
# ONNX Runtime's intra-op threads spinning during a run (the default, parked when the run ends)
# against not spinning (ANSEL_ORT_SPIN=0), in the same session, alternating:
#   - `ansel eval-ask` with the default cascade and span reader over the held-out SQuAD dev
#     articles (500 questions, one at a time): P@1, span EM and latency per question;
#   - `bash scripts/bench-server.sh` (8 connections on loopback): /rerank and /ask under load;
#   - `ansel eval` on WikiQA test with the two int8 cross-encoders of the cascade: offline scoring
#     (wall seconds, model loading included).
# Rows in docs/results/ort-spinning.jsonl, the page docs/results/ort-spinning.md.
# ROUNDS=N (default 2) rounds of eval-ask. Needs ../shared/data (scripts/squad-sent-data.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
rows=docs/results/ort-spinning.jsonl
cargo build --release -q -p ansel -p ansel-lab
bash scripts/squad-sent-data.sh
: >"$rows"
# row SETTING ROUND JSON: one measured row, tagged with the setting and the machine's load.
row() {
  python3 -c 'import json, os, sys
r = json.loads(sys.argv[3])
print(json.dumps({"spin": sys.argv[1], "round": int(sys.argv[2]), "load1": os.getloadavg()[0], **r}))' "$@" >>"$rows"
}
for round in $(seq "${ROUNDS:-2}"); do
  for spin in 0 1; do
    echo "== eval-ask, ANSEL_ORT_SPIN=$spin, round $round" >&2
    report=$(ANSEL_ORT_SPIN=$spin "$ansel" eval-ask --index data/squad-index-dev \
      --questions data/squad-sent/dev-ask.jsonl --json | tail -1)
    row "$spin" "$round" "$report"
  done
done
for spin in 0 1; do
  echo "== bench-server, ANSEL_ORT_SPIN=$spin" >&2
  page=$(mktemp)
  ANSEL_ORT_SPIN=$spin OUT="$page" bash scripts/bench-server.sh >/dev/null
  # The endpoint rows of its table: | `/rerank` | requests | 200 | 503 | p50 | p99 | max | 200/s |
  server=$(python3 -c 'import json, re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"\| `(/rerank|/ask)` \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", line)
    if m:
        rows[m[1]] = {"requests": int(m[2]), "ok": int(m[3]), "shed": int(m[4]), "p50_ms": float(m[5]),
                      "p99_ms": float(m[6]), "ok_per_s": float(m[8])}
if set(rows) != {"/rerank", "/ask"}:
    sys.exit(f"{sys.argv[1]}: no /rerank and /ask rows")
print(json.dumps({"server": rows}))' "$page")
  rm -f "$page"
  row "$spin" 1 "$server"
done
for model in minilm-l6-general-distilled-int8 mpnet-base-squad-tanda-int8; do
  for spin in 0 1; do
    echo "== eval WikiQA test, $model, ANSEL_ORT_SPIN=$spin" >&2
    report=$(ANSEL_ORT_SPIN=$spin python3 -c 'import json, subprocess, sys, time
start = time.monotonic()
out = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True).stdout
# The row of the table that names the model: model, questions, P@1, MAP, ...
cells = next(l.split() for l in out.splitlines() if l.split()[:1] == [sys.argv[-1]])
print(json.dumps({"eval": sys.argv[-1], "seconds": time.monotonic() - start, "questions": int(cells[1]),
                  "MAP": float(cells[3])}))' \
      "$ansel" eval --data "${ANSEL_SHARED_DATA:-../shared/data}/wikiqa/WikiQA-test.tsv" --model "$model")
    row "$spin" 1 "$report"
  done
done
python3 bench/ort_spinning_report.py "$rows" >docs/results/ort-spinning.md
echo "wrote docs/results/ort-spinning.md" >&2
