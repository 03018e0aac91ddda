#!/usr/bin/env bash
# TREC CAR reference row (issue 21): a cross-encoder of this project, zero-shot, reranks BM25's top 40
# paragraphs of every outline query (title + heading path) of test200; scored like BM25's top 40
# with `ansel eval-trec --trec-eval` on hierarchical and top-level qrels, with a paired
# randomization test on hierarchical AP. Writes docs/results/trec-car/MODEL.top40.run.gz and
# docs/results/trec-car-rerank.md (scores cached in target/trec-car-rerank: rerun to rewrite the page).
#   MODEL=minilm-l6-mpnet-distilled-int8 bash scripts/bench-trec-car-rerank.sh
# Needs python3 with cbor2 (VENV, default bench/.venv-trec-car, created when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${DATA:-../shared/data/trec-car/test200-v1.5}
model=${MODEL:-minilm-l6-mpnet-distilled-int8}
venv=${VENV:-bench/.venv-trec-car}
work=target/trec-car-rerank
bm25=docs/results/trec-car/bm25.top40.run.gz
ansel=target/release/ansel
[ -x "$ansel" ] || cargo build --release -q -p ansel
"$venv/bin/python" -c 'import cbor2' 2>/dev/null || { python3 -m venv "$venv" && "$venv/bin/pip" install -q cbor2==6.3.0; }
mkdir -p "$work"
name=$(basename "$model")
"$venv/bin/python" bench/trec_car_rerank.py lists "$data/train.test200.cbor.paragraphs" "$bm25" "$work/lists.jsonl"
if [ ! -s "$work/$name.scores.jsonl" ]; then
  start=$(date +%s)
  "$ansel" rank --data "$work/lists.jsonl" --model "$model" >"$work/$name.scores.jsonl.tmp"
  echo $(($(date +%s) - start)) >"$work/$name.seconds"
  mv "$work/$name.scores.jsonl.tmp" "$work/$name.scores.jsonl"
fi
seconds=$(cat "$work/$name.seconds")
python3 bench/trec_car_rerank.py run "$work/$name.scores.jsonl" "$name" "$work/$name.run"
gzip -c "$work/$name.run" >"docs/results/trec-car/$name.top40.run.gz"
for level in hierarchical toplevel; do
  for run in "$bm25" "$work/$name.run"; do
    "$ansel" eval-trec --qrels "$data/train.test200.cbor.$level.qrels" --run "$run" --trec-eval --json |
      python3 -c 'import json,sys; r=json.load(sys.stdin); r.update(level=sys.argv[1]); print(json.dumps(r))' "$level"
  done
  "$ansel" eval-trec --qrels "$data/train.test200.cbor.$level.qrels" --run "$bm25" --trec-eval --per-query >"$work/bm25.$level.q"
  "$ansel" eval-trec --qrels "$data/train.test200.cbor.$level.qrels" --run "$work/$name.run" --trec-eval --per-query >"$work/$name.$level.q"
done >"$work/$name.metrics.jsonl"
python3 - "$work" "$name" "$model" "$seconds" <<'PY'
import json, random, sys
work, name, model, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [json.loads(l) for l in open(f"{work}/{name}.metrics.jsonl")]

def ap(path):
    return {f[1]: float(f[2]) for f in (l.split() for l in open(path)) if f[0] == "map" and f[1] != "all"}

def paired(a, b, rounds=10000, seed=7):
    """Two-sided paired randomization test of mean(b - a) over the queries both score."""
    d = [b[q] - a[q] for q in a if q in b]
    observed = abs(sum(d))
    rng = random.Random(seed)
    hits = sum(abs(sum(x if rng.random() < 0.5 else -x for x in d)) >= observed for _ in range(rounds))
    return sum(d) / len(d), (hits + 1) / (rounds + 1), len(d)

out = ["# TREC CAR: a cross-encoder reranking BM25's top 40 (reference row)\n",
       "Produced by `bash scripts/bench-trec-car-rerank.sh` (`MODEL=...`). test200 v1.5: 1,987 outline queries",
       "(title + heading path), 4,689 paragraphs. BM25 (tantivy, `ansel-lab trec-car bm25`) retrieves; the",
       f"model (`{model}`, used zero-shot: it never saw TREC CAR; paragraphs cut at its max_len) reorders each",
       "query's top 40. Both runs are scored on the same 40 paragraphs a query with `ansel eval-trec --trec-eval`",
       "(trec_eval -c: unjudged paragraphs non-relevant, judged queries missing from a run score 0). The",
       "article qrels judge whole-article queries, which these section-query runs do not hold: left out.",
       f"Reranking took {seconds} s on this 2-core machine. Runs: `docs/results/trec-car/bm25.top40.run.gz`,",
       f"`docs/results/trec-car/{name}.top40.run.gz`.\n",
       "| qrels | run | queries | MAP | R-Prec | NDCG@10 | MRR |", "|---|---|---|---|---|---|---|"]
for r in rows:
    m = r["mean"]
    run = "BM25 top 40" if "bm25" in r["run"] else f"`{name}` over it"
    out.append(f"| {r['level']} | {run} | {r['queries']} | {m['map']:.4f} | {m['Rprec']:.4f} | {m['ndcg_cut_10']:.4f} | {m['recip_rank']:.4f} |")
out.append("\nPaired randomization test of per-query AP (10,000 rounds, two-sided):\n")
for level in ("hierarchical", "toplevel"):
    diff, p, n = paired(ap(f"{work}/bm25.{level}.q"), ap(f"{work}/{name}.{level}.q"))
    out.append(f"- {level}: mean AP difference {diff:+.4f} over {n} queries, p = {p:.4f}")
open("docs/results/trec-car-rerank.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
