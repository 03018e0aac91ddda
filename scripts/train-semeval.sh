#!/usr/bin/env bash
# Trains networks for SemEval-2016 Task 3 subtask C on its train data and scores them on dev
# (rows appended to docs/results/semeval-cqa.jsonl; then scripts/bench-semeval.sh REPORT_ONLY=1
# rewrites the page). Models go to target/semeval-models/<name>/ with TRAINING.md beside the
# weights (data, split, command); nothing is written to models/.
#
# Data (target/semeval-data/):
# - train part 2 (v3.2, 67 original questions) and the v2.0 train part 1 (103 original questions,
#   no task A labels). 48 of part 1's original questions (and 2 more in its tune part) are the dev
#   set's own questions (v2.0's first 50 became v3.x dev): every original question whose text is a
#   dev original question is dropped, so nothing of dev is trained or tuned on.
# - a tuning split by original question, seeded (SEED, default 1; 10%), recorded in
#   *.split.json by `ansel convert --tune-out`: early stopping reads tune, never dev.
# - ED (the thesis' extended data, ch. 8.2.1): task A lists of train part 2 (a related question over
#   its comments, labels to the related question) added to task C's, without the threads whose
#   related question is also one of dev's.
#
# Models: ansel's RelCNN (thesis 3.4: CNN sentence encoders with word-overlap embeddings and an MLP,
# point-wise BCE), the closest family ansel has to the chapter-8 single network <q_new, c_rel>
# (differences in docs/results/semeval-cqa.md). The multi-task triplet network is not built.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/semeval2016-cqa
ansel=target/release/ansel
seed=${SEED:-1}
out=target/semeval-data
models=target/semeval-models
rows=docs/results/semeval-cqa.jsonl
mkdir -p "$out" "$models"
[ -x "$ansel" ] || cargo build --release -q -p ansel
part1=$data/train/SemEval2016-Task3-CQA-QL-train-part1.v2.0-OLD.xml.gz
part2=$data/train/SemEval2016-Task3-CQA-QL-train-part2.xml.gz
dev=$data/dev/SemEval2016-Task3-CQA-QL-dev.xml.gz

split() { # file task name
  "$ansel" convert --data "$1" --task "$2" --out "$out/$3-$2-train.jsonl" \
    --tune-out "$out/$3-$2-tune.jsonl" --tune-fraction 0.1 --seed "$seed"
}
split "$part2" a part2
split "$part2" c part2
split "$part1" c part1
"$ansel" convert --data "$dev" --task b --out "$out/dev-b.jsonl"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
read = lambda name: [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
dev = read("dev-b")
dev_questions = {q["question"] for q in dev}
dev_related = {c["text"] for q in dev for c in q["candidates"]}
report = {}
def write(name, questions):
    with open(f"{out}/{name}.jsonl", "w") as f:
        for q in questions:
            f.write(json.dumps(q) + "\n")
    report[name] = {"questions": len(questions), "pairs": sum(len(q["candidates"]) for q in questions),
                    "positives": sum(c.get("label") in (1, True) for q in questions for c in q["candidates"])}
for part in ("train", "tune"):
    p1 = read(f"part1-c-{part}")
    kept = [q for q in p1 if q["question"] not in dev_questions]
    report[f"part1-c-{part} dropped as dev questions"] = len(p1) - len(kept)
    write(f"c-{part}", read(f"part2-c-{part}") + kept)
    a = read(f"part2-a-{part}")
    ed = [q for q in a if q["question"] not in dev_related]
    report[f"part2-a-{part} dropped as dev related questions"] = len(a) - len(ed)
    write(f"c-ed-{part}", read(f"c-{part}") + ed)
json.dump(report, open(f"{out}/data.json", "w"), indent=1)
print(json.dumps(report, indent=1))
PY

train() { # name train tune extra-args...
  local name=$1 train=$2 tune=$3
  shift 3
  local dir=$models/$name
  if [ ! -f "$dir/model.json" ]; then
    local cmd=("$ansel" train --model relcnn --loss pointwise --train "$out/$train.jsonl"
      --dev "$out/$tune.jsonl" --out "$dir" --seed "$seed" "$@")
    start=$(date +%s)
    nice -n 10 "${cmd[@]}"
    {
      echo "# $name"
      echo
      echo "Trained by \`bash scripts/train-semeval.sh\` in $(($(date +%s) - start)) s on $(date -u +%F)."
      echo
      echo "    ${cmd[*]}"
      echo
      echo "Train: \`$out/$train.jsonl\`; early stopping on \`$out/$tune.jsonl\` (the tune split, seed $seed:"
      echo "the original question ids are in \`$out/*-tune.jsonl.split.json\`). Data counts: \`$out/data.json\`."
      echo "SemEval-2016 Task 3 train part 2 (v3.2) and the v2.0 train part 1 without dev's questions."
    } >"$dir/TRAINING.md"
    cp "$out/data.json" "$dir/data.json"
    cp "$out"/*-tune.jsonl.split.json "$dir/"
  fi
  python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l)).get("task")=="c" and r.get("model")==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$dir" && return
  start=$(date +%s.%N)
  res=$("$ansel" eval --data "$dev" --task c --model "$dir" --json --semeval-dir target/semeval-runs/dev-c)
  secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start")
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(task="c", file="dev/SemEval2016-Task3-CQA-QL-dev.xml.gz", seconds=float(sys.argv[2]), trained=sys.argv[3])
print(json.dumps(r))' "$res" "$secs" "$name" >>"$rows"
}
fused() { # model-dir-name: the trained model fused with rr (the search engine's rank, which the
  # thesis' networks get as a rank-position embedding and ansel's RelCNN does not see)
  local spec=$models/$1+rr
  python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l)).get("task")=="c" and r.get("model")==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$spec" && return
  res=$("$ansel" eval --data "$dev" --task c --model "$spec" --json --semeval-dir target/semeval-runs/dev-c)
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(task="c", file="dev/SemEval2016-Task3-CQA-QL-dev.xml.gz", seconds=None, trained=sys.argv[2])
print(json.dumps(r))' "$res" "$1 + rr" >>"$rows"
}
# <q_new, c_rel> on task C's train (Table 8.2 "CNN Train"), then with the extended data ("Train + ED"):
# 5 epochs (ansel's default), then 15 with patience 4; then 15 epochs with a BiRNN over each
# question's candidates in the search engine's order (thesis ch. 7), which gives the network the rank.
train relcnn-c c-train c-tune
train relcnn-c-ed c-ed-train c-ed-tune
train relcnn-c-ed-15ep c-ed-train c-ed-tune --epochs 15 --patience 4
train relcnn-c-ed-birnn c-ed-train c-ed-tune --epochs 15 --patience 4 --rnn birnn
for m in relcnn-c relcnn-c-ed relcnn-c-ed-15ep relcnn-c-ed-birnn; do fused $m; done
REPORT_ONLY=1 bash scripts/bench-semeval.sh >/dev/null
