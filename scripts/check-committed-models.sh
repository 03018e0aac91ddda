#!/usr/bin/env bash
# Scores WikiQA dev with every committed model (models/*) and writes the metrics and every
# candidate's score, so that a refactoring can be checked to leave all of them unchanged.
#
#   bash scripts/check-committed-models.sh run DIR [ANSEL]   # scores into DIR (default binary:
#                                                           # target/release/ansel)
#   bash scripts/check-committed-models.sh compare BEFORE AFTER [REPORT [NOTE]]
#       # compares two such folders; writes REPORT (default docs/results/committed-models-dev.md),
#       # with NOTE (which builds were compared) under its title
#
# One torch thread (OMP_NUM_THREADS=1), so that both runs sum in the same order. Needs
# ../shared/data (or $ANSEL_SHARED_DATA).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
dev="$data/wikiqa/WikiQA-dev.tsv"
case "${1:-}" in
run)
  dir=${2:?usage: check-committed-models.sh run DIR [ANSEL]}
  ansel=${3:-target/release/ansel}
  [ -x "$ansel" ] || cargo build --release -q -p ansel
  mkdir -p "$dir"
  : > "$dir/metrics.jsonl"
  for model in models/*/; do
    name=$(basename "$model")
    echo "== $name" >&2
    OMP_NUM_THREADS=1 "$ansel" eval --data "$dev" --model "models/$name" --json \
      --trec-dir "$dir/$name" >> "$dir/metrics.jsonl"
  done
  ;;
compare)
  before=${2:?usage: check-committed-models.sh compare BEFORE AFTER [REPORT]}
  after=${3:?usage: check-committed-models.sh compare BEFORE AFTER [REPORT]}
  report=${4:-docs/results/committed-models-dev.md}
  python3 - "$before" "$after" "${5:-}" > "$report" <<'PY'
import json, pathlib, sys
before, after = map(pathlib.Path, sys.argv[1:3])
note = sys.argv[3]

def metrics(d):
    return {pathlib.Path(r["model"]).name: r for r in map(json.loads, open(d / "metrics.jsonl"))}

def scores(d, name):
    out = {}
    for run in (d / name).glob("*.run"):
        for line in open(run):
            q, _, c, _, s, _ = line.split()
            out[(q, c)] = float(s)
    return out

mb, ma = metrics(before), metrics(after)
print("# Committed models on WikiQA dev, before and after a change\n")
print("Produced by `bash scripts/check-committed-models.sh run DIR` on the two builds, then")
print("`bash scripts/check-committed-models.sh compare BEFORE AFTER`: `ansel eval --data")
print("../shared/data/wikiqa/WikiQA-dev.tsv --model models/NAME` (release build, one torch thread),")
print("and every candidate's score from its `--trec-dir` run file.\n")
if note:
    print(note + "\n")
print("| model | questions | MAP before | MAP after | MRR before | MRR after | P@1 before | P@1 after | candidates | max abs score diff |")
print("|---|---|---|---|---|---|---|---|---|---|")
same = True
for name in sorted(set(mb) | set(ma)):
    b, a = mb.get(name), ma.get(name)
    sb, sa = scores(before, name), scores(after, name)
    keys = set(sb) | set(sa)
    missing = len(keys - (set(sb) & set(sa)))
    diff = max((abs(sb[k] - sa[k]) for k in set(sb) & set(sa)), default=float("nan"))
    same &= missing == 0 and diff == 0.0 and b is not None and a is not None
    cell = lambda r, m: f"{r[m]:.4f}" if r else "missing"
    print(f"| {name} | {(a or b)['questions']} | {cell(b, 'MAP')} | {cell(a, 'MAP')} | {cell(b, 'MRR')} | {cell(a, 'MRR')} "
          f"| {cell(b, 'P@1')} | {cell(a, 'P@1')} | {len(keys)}{f' ({missing} unmatched)' if missing else ''} | {diff:.3g} |")
print()
print("Every score identical: " + ("yes." if same else "**no** (see the last column)."))
PY
  cat "$report"
  ;;
*)
  echo "usage: check-committed-models.sh run DIR [ANSEL] | compare BEFORE AFTER [REPORT]" >&2
  exit 2
  ;;
esac
