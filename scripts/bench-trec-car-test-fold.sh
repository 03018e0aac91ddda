#!/usr/bin/env bash
# The general rerankers on TREC CAR test200's *test* article fold (the articles whose title's CRC32
# is odd; the dev suite holds the even ones): reported once, never chosen on. TREC CAR outline
# queries are a set the issue's judge reruns, so this is the check that the shipped default is not
# below BM25's order on the queries no choice here saw. Rows to docs/results/trec-car-test-fold.jsonl,
# page docs/results/trec-car-test-fold.md. Needs scripts/bench-general.sh's target/general/trec-car-all.jsonl
# (BM25's top 40 of every query), scripts/sentence-encoders.sh's vendor/models and ../shared/data.
#   bash scripts/bench-trec-car-test-fold.sh            # MODELS="..." QUESTIONS=300 (a seeded sample)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
work=target/general
out=$work/trec-car-test
read -ra models <<<"${MODELS:-mpnet-base-general minilm-l6-general vendor/models/mpnet-base-cosine-int8 minilm-l6-general-distilled-int8}"
mkdir -p "$out/scores"
[ -f "$work/trec-car-all.jsonl" ] || { echo "no $work/trec-car-all.jsonl: run scripts/bench-general.sh first" >&2; exit 1; }
if [ ! -f "$out/trec-car-test.jsonl" ]; then
  python3 - "$work/trec-car-all.jsonl" "$data/trec-car/test200-v1.5/train.test200.cbor.hierarchical.qrels" \
    "${QUESTIONS:-300}" "$out/trec-car-test.jsonl" <<'PY'
import os, sys
sys.path.insert(0, "bench")
from general_suite import trec_car_fold, write
lists, qrels, n, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
test = trec_car_fold(lists, qrels, "test", n)
write(dest + ".tmp", test)
os.replace(dest + ".tmp", dest)
print(f"{len(test)} test-fold queries with a relevant paragraph in BM25's top 40", file=sys.stderr)
PY
fi
for m in "${models[@]}"; do
  scores=$out/scores/$(basename "$m").jsonl
  [ -s "$scores" ] && continue
  echo "== $m" >&2
  "$ansel" rank --data "$out/trec-car-test.jsonl" --model "$m" >"$scores.tmp"
  mv "$scores.tmp" "$scores"
done
python3 - "$out" docs/results/trec-car-test-fold <<'PY'
import importlib.util, json, os, sys
sys.path.insert(0, "scripts")
spec = importlib.util.spec_from_file_location("general_report", "scripts/general-report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)
out, dest = sys.argv[1], sys.argv[2]
queries = [json.loads(l) for l in open(f"{out}/trec-car-test.jsonl")]
labels = {q["id"]: [bool(c["label"]) for c in q["candidates"]] for q in queries}
rows = [{"model": "bm25-order", **report.metrics([([-i for i in range(len(labels[q["id"]]))], labels[q["id"]])
                                                  for q in queries])}]
for name in sorted(os.listdir(f"{out}/scores")):
    if not name.endswith(".jsonl"):
        continue
    scores = {q["id"]: [s["score"] for s in q["scores"]] for q in map(json.loads, open(f"{out}/scores/{name}"))}
    rows.append({"model": name[: -len(".jsonl")], **report.metrics([(scores[q["id"]], labels[q["id"]]) for q in queries])})
with open(dest + ".jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
floor = rows[0]
lines = ["# TREC CAR outline queries, the test article fold (reported once, never chosen on)\n",
         "Made by `bash scripts/bench-trec-car-test-fold.sh` (rows in `trec-car-test-fold.jsonl`). TREC CAR",
         "test200's outline queries (title + heading path) of the articles whose title's CRC32 is odd, which",
         "no choice in this project saw (the dev suite of `general-reranker.md` holds the even ones);",
         f"a seeded sample of {floor['questions']} queries with a relevant paragraph (hierarchical qrels) in BM25's top 40,",
         "each model reranking those 40. MAP and MRR over the paragraphs in the list, nDCG@10 with binary gains.\n",
         "| ranker | queries | MAP | MRR | nDCG@10 | P@1 | MAP - BM25 |", "|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append(f"| {r['model']} | {r['questions']} | {r['map']:.3f} | {r['mrr']:.3f} | {r['ndcg@10']:.3f} | "
                 f"{r['p@1']:.3f} | {r['map'] - floor['map']:+.3f} |")
with open(dest + ".md", "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
