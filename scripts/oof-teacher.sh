#!/usr/bin/env bash
# Out-of-fold teacher scores of WikiQA train for distillation (issue 4, cross-fitting):
# the train questions are dealt into K folds (seeded, by question); for each fold a
# cross-encoder is trained TANDA-style (from runs/minilm-trecqa-transfer-all, the recipe of
# models/minilm-l6-tanda-all-2ep) on the other folds, and scores the fold it never saw.
# Each fold's scores are an `ansel rank` JSON-lines file; `ansel train` reads them all with
# one `--teacher-scores FILE` per fold. Resumable: finished fold models and score
# files are kept; an interrupted fold training continues with --resume.
#
#   K=2 bash scripts/oof-teacher.sh            # -> target/oof-teacher/k2/scores-{0,1}.jsonl
#   K=2 PARALLEL=1 bash scripts/oof-teacher.sh # train the folds side by side (one thread each)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-tanda-all-2ep   # left models/ for the span reader
K=${K:-2}
SEED=${SEED:-42}
PARALLEL=${PARALLEL:-0}
data=../shared/data/wikiqa
base=runs/minilm-trecqa-transfer-all
out=target/oof-teacher/k$K
bin=target/release/ansel
[ -x "$bin" ] || cargo build --release -p ansel
[ -f "$base/model.json" ] || { echo "$base is missing: bash scripts/train-cross-encoder.sh transfer-all" >&2; exit 1; }
mkdir -p "$out"

# Deal the questions (ids in file order, shuffled with SEED) round-robin into K folds; copy
# lines verbatim so every fold file is a valid WikiQA TSV.
python3 - "$data/WikiQA-train.tsv" "$out" "$K" "$SEED" <<'PY'
import random, sys, os
src, out, k, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
header, rows = lines[0], lines[1:]
ids = list(dict.fromkeys(r.split("\t", 1)[0] for r in rows))
order = ids[:]
random.Random(seed).shuffle(order)
fold = {q: i % k for i, q in enumerate(order)}
for f in range(k):
    for name, keep in ((f"fold-{f}.tsv", lambda q: fold[q] == f),
                       (f"without-{f}.tsv", lambda q: fold[q] != f)):
        path = os.path.join(out, name)
        text = header + "".join(r for r in rows if keep(r.split("\t", 1)[0]))
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            open(path + ".tmp", "w", encoding="utf-8").write(text)
            os.replace(path + ".tmp", path)
print(f"{len(ids)} questions in {k} folds (seed {seed})", file=sys.stderr)
PY

train_fold() {
  local f=$1 dir="$out/ce-without-$1"
  [ -f "$dir.done" ] && return
  local resume=()
  [ -d "$dir/checkpoint" ] && resume=(--resume)
  "$bin" train --model cross-encoder --lr 3e-5 --batch-size 16 --accumulate 2 --threads 1 --seed 42 \
    --base "$base" --train "$out/without-$f.tsv" --dev "$data/WikiQA-dev.tsv" --out "$dir" \
    --epochs 2 --eval-every 90 --name "minilm-l6-tanda-all-2ep-without-fold-$f-of-$K" "${resume[@]}" \
    > "$out/train-$f.log" 2>&1
  touch "$dir.done"
}

score_fold() {
  local s="$out/scores-$1.jsonl"
  [ -s "$s" ] || { "$bin" rank --model "$out/ce-without-$1" --data "$out/fold-$1.tsv" > "$s.tmp" && mv "$s.tmp" "$s"; }
}

# each_fold STEP: STEP every fold, side by side with PARALLEL=1.
each_fold() {
  local pids=() f
  for f in $(seq 0 $((K - 1))); do
    if [ "$PARALLEL" = 1 ]; then "$1" "$f" & pids+=($!); else "$1" "$f"; fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
}
each_fold train_fold
each_fold score_fold
flags=$(for f in $(seq 0 $((K - 1))); do printf -- '--teacher-scores %s ' "$out/scores-$f.jsonl"; done)
echo "out-of-fold teacher scores: ansel train ... $flags" >&2

# Summary for the sweep report (docs/results/cosinenet-sweep.md, round 5): each fold model's dev
# MAP, and the WikiQA-train MAP / P@1 (answered questions) of the out-of-fold scores and of every
# teacher whose scores of WikiQA train are cached in target/teacher-scores (t1's are in sample).
python3 - "$data/WikiQA-train.tsv" "$out" "$K" > "$out/summary.json.tmp" <<'PY'
import glob, json, os, sys
train, out, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
labels = {}
for line in open(train, encoding="utf-8").read().splitlines()[1:]:
    f = line.split("\t")
    labels.setdefault(f[0], {})[f[4]] = f[6] == "1"
def quality(files):
    aps, p1 = [], []
    for path in files:
        for line in open(path):
            r = json.loads(line)
            ranked = [labels[r["id"]][c["id"]] for c in sorted(r["scores"], key=lambda c: -c["score"])]
            hits, total = 0, 0.0
            for i, rel in enumerate(ranked, 1):
                if rel:
                    hits += 1
                    total += hits / i
            if hits:
                aps.append(total / hits)
                p1.append(float(ranked[0]))
    return {"questions": len(aps), "MAP": sum(aps) / len(aps), "P@1": sum(p1) / len(p1)}
summary = {"folds": k, "fold_dev_MAP": [], "out_of_fold_train": quality([f"{out}/scores-{f}.jsonl" for f in range(k)])}
for f in range(k):
    card = json.load(open(f"{out}/ce-without-{f}/model.json"))
    summary["fold_dev_MAP"].append(card["training"]["metrics"]["dev MAP"])
summary["teachers_train"] = []
for meta in sorted(glob.glob("target/teacher-scores/*.meta.json")):
    m = json.load(open(meta))
    if m["data"].endswith("wikiqa/WikiQA-train.tsv"):
        row = {"teacher": m["teacher"], **quality([meta.replace(".meta.json", ".jsonl")])}
        card = os.path.join(m["teacher"], "model.json")
        if os.path.exists(card):
            row["card dev MAP"] = json.load(open(card)).get("training", {}).get("metrics", {}).get("dev MAP")
        summary["teachers_train"].append(row)
print(json.dumps(summary, indent=1))
PY
mv "$out/summary.json.tmp" "$out/summary.json"
cat "$out/summary.json" >&2
