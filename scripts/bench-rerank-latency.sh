#!/usr/bin/env bash
# Latency of a reranker inside `ask` at 10 and 30 candidates (docs/results/rerank-latency.{md,jsonl}):
# `ansel eval-ask` over the held-out SQuAD articles (data/squad-index-dev, first N questions of
# data/squad-sent/dev-ask.jsonl), BM25 retrieving 100 sentences and keeping K for the model. The two
# settings alternate, ROUNDS times each, in one session, so their ratio is measured under the same
# load; each row is one run's median and p99 ms per question. Rows accumulate (one per run).
#   MODELS="mpnet-base-squad-tanda-int8" bash scripts/bench-rerank-latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
rows=docs/results/rerank-latency.jsonl
n=${QUESTIONS:-100}
[ -x "$ansel" ] || cargo build --release -q -p ansel
bash scripts/squad-sent-data.sh
questions=$(mktemp)
trap 'rm -f "$questions"' EXIT
head -n "$n" data/squad-sent/dev-ask.jsonl >"$questions"
read -ra models <<<"${MODELS:-mpnet-base-squad-tanda-int8}"
load() { cut -d' ' -f1-3 /proc/loadavg; }
for m in "${models[@]}"; do
  for round in $(seq "${ROUNDS:-2}"); do
    for keep in 10 30; do
      echo "== $m, $keep candidates, round $round" >&2
      before=$(load)
      result=$("$ansel" eval-ask --index data/squad-index-dev --questions "$questions" --model "$m" --keep "$keep" --json)
      python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(keep=int(sys.argv[2]), round=int(sys.argv[3]), load_before=sys.argv[4], load_after=sys.argv[5], date=sys.argv[6]); print(json.dumps(r))' \
        "$result" "$keep" "$round" "$before" "$(load)" "$(date -u +%F)" >>"$rows"
    done
  done
done
python3 - "$rows" docs/results/rerank-latency.md <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = ["# Reranker latency inside `ask`: 10 against 30 candidates\n",
       "Produced by `bash scripts/bench-rerank-latency.sh` (rows in `rerank-latency.jsonl`). `ansel eval-ask` over",
       "the 22 held-out SQuAD dev articles, the first n questions of `data/squad-sent/dev-ask.jsonl`; BM25 retrieves",
       "100 sentences and keeps K for the model; 2 threads on this 2-core machine. The settings alternate in one",
       "session; ms are per question (median and p99 of one run), P@1 of the answer sentence. How the models were",
       "made and how they rank: [squad-transfer.md](squad-transfer.md).\n",
       "| model | K | n | date | P@1 | median ms | p99 ms | load avg before / after (? not recorded) |", "|---|---|---|---|---|---|---|---|"]
for r in rows:
    out.append(f"| `{r['model']}` | {r['keep']} | {r['questions']} | {r['date']} | {r['P@1']:.2f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | {r['load_before']} / {r.get('load_after', '?')} |")
out.append("\nMedian over runs of each run's median ms (ratio 30 / 10 candidates):\n")
out += ["| model | 10 candidates | 30 candidates | ratio |", "|---|---|---|---|"]
for m in dict.fromkeys(r["model"] for r in rows):
    med = {k: statistics.median(r["p50_ms"] for r in rows if r["model"] == m and r["keep"] == k) for k in (10, 30)}
    out.append(f"| `{m}` | {med[10]:.0f} | {med[30]:.0f} | {med[30] / med[10]:.2f} |")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
