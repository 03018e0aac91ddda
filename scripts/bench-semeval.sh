#!/usr/bin/env bash
# SemEval-2016 Task 3 (community QA, Qatar Living) on dev, subtasks A, B and C: the lexical
# baselines and the committed cross-encoders, scored by ansel's metrics and by the task's official
# scorer (ansel eval --task ...). Writes docs/results/semeval-cqa.{md,jsonl}.
# - dev is the evaluation set (the test XML is not public; its gold files are): task A on
#   dev-subtaskA.xml (244 threads, repeats removed), B and C on dev.xml (50 original questions).
# - The official scorer is checked on the test gold files: their own scores (the search engine's)
#   must give the IR baselines the task paper and the thesis report.
# - Each run's .pred file is rescored by an independent Python port of the scorer's MAP.
# Rows already in the .jsonl are kept, so the script resumes (MODELS=... picks models; REPORT_ONLY=1
# rewrites the page). MPNet is slow on 2 cores (~13 min for the three tasks): SKIP_MPNET=1 leaves it out.
# Needs ../shared/data/semeval2016-cqa.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${ANSEL_SHARED_DATA:-../shared/data}/semeval2016-cqa
ansel=target/release/ansel
rows=docs/results/semeval-cqa.jsonl
runs=target/semeval-runs
[ -x "$ansel" ] || cargo build --release -q -p ansel
mkdir -p docs/results "$runs"
touch "$rows"
dev=$data/dev/SemEval2016-Task3-CQA-QL-dev.xml.gz
dev_a=$data/dev/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml.gz
default_models="rr wo idf-wo wo-rr bm25 minilm-l6-mpnet-distilled-int8"
[ -n "${SKIP_MPNET:-}" ] || default_models="$default_models mpnet-base-squad-tanda-int8"
read -ra models <<<"${MODELS:-$default_models}"

have() { python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l)).get("task")==sys.argv[2] and r.get("model")==sys.argv[3] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1" "$2"; }

if [ -z "${REPORT_ONLY:-}" ]; then
  # The scorer against the official IR baselines (test gold files).
  for t in A B C; do
    gold=$(ls "$data"/test-gold/*subtask$t.relevancy)
    if ! have "test-$t" "IR baseline (gold file scores)"; then
      "$ansel" eval-semeval --gold "$gold" --json |
        python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r.update(task=sys.argv[1], model="IR baseline (gold file scores)", gold=sys.argv[2]); print(json.dumps(r))' "test-$t" "${gold#"$data"/}" >>"$rows"
    fi
  done
  for t in a b c; do
    file=$dev
    [ "$t" = a ] && file=$dev_a
    for m in "${models[@]}"; do
      have "$t" "$m" && continue
      echo "task $t: $m" >&2
      start=$(date +%s.%N)
      out=$(nice -n 10 "$ansel" eval --data "$file" --task "$t" --model "$m" --json --semeval-dir "$runs/dev-$t")
      secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start")
      # The official MAP again, from the .pred file, by a Python port of the scorer's metrics.map.
      check=$(python3 - "$runs/dev-$t/gold.relevancy" "$runs/dev-$t/$(echo "$m" | sed 's/[^A-Za-z0-9_-]/_/g').pred" <<'PY'
import sys
from collections import defaultdict
gold = [l.split() for l in open(sys.argv[1]) if l.strip()]
pred = [l.split() for l in open(sys.argv[2]) if l.strip()]
assert [g[:2] for g in gold] == [p[:2] for p in pred], "ids differ"
lists = defaultdict(list)
for g, p in zip(gold, pred):
    lists[g[0]].append((g[4], float(p[3])))
total = 0.0
for cands in lists.values():
    ranked = [rel for rel, _ in sorted(cands, key=lambda c: c[1], reverse=True)][:10]
    precisions, correct = [], 0
    for i, rel in enumerate(ranked):
        if rel == "true":
            correct += 1
            precisions.append(correct / (i + 1))
    total += sum(precisions) / len(precisions) if precisions else 0.0
print(total / len(lists))
PY
)
      python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(task=sys.argv[2], file=sys.argv[3], seconds=float(sys.argv[4]), python_official_map=round(float(sys.argv[5]), 6))
assert abs(r["semeval"]["MAP"] - r["python_official_map"]) < 1e-5, (r["semeval"]["MAP"], r["python_official_map"])
print(json.dumps(r))' "$out" "$t" "${file#"$data"/}" "$secs" "$check" >>"$rows"
    done
  done
fi
python3 scripts/semeval-report.py "$rows" docs/results/semeval-cqa.md
cat docs/results/semeval-cqa.md
