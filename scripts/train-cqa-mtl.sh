#!/usr/bin/env bash
# The thesis' chapter-8 networks on SemEval-2016 Task 3 (ansel-lab cqa-train), each scored on
# dev task C with `ansel eval --task c` (rows appended to docs/results/semeval-cqa.jsonl; then
# REPORT_ONLY=1 scripts/bench-semeval.sh rewrites the page):
# - <q_new, c_rel>: the single network (--inputs pair --tasks c);
# - <q_new, q_rel, c_rel>: the joint input, task C only (--inputs triplet --tasks c);
# - MTL (ABC): the joint input with the three heads (--inputs triplet --tasks abc).
# All on train part 2 (v3.2) + the v2.0 train part 1 without dev's questions, plus the extended
# data from train part 2's task A threads (dev's related questions excluded); early stopping on a
# seeded 10% of the original questions of each train file (tuning lists, never dev), patience 10.
# Env: SEEDS (default "1 2 3"), VARIANTS (default "single triplet mtl"), THREADS.
# Models go to target/cqa-models/<variant>-s<seed>/ (model.json records data, arguments, seed,
# tune MAP); nothing is written to models/. Resumable: a finished model is not retrained.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/semeval2016-cqa
seeds=${SEEDS:-1 2 3}
variants=${VARIANTS:-single triplet mtl}
rows=docs/results/semeval-cqa.jsonl
dev=$data/dev/SemEval2016-Task3-CQA-QL-dev.xml.gz
ansel=target/release/ansel
lab=target/release/ansel-lab
[ -x "$ansel" ] && [ -x "$lab" ] || cargo build --release -q -p ansel -p ansel-lab
for seed in $seeds; do
  for variant in $variants; do
    case $variant in
      single) opts=(--inputs pair --tasks c) ;;
      triplet) opts=(--inputs triplet --tasks c) ;;
      mtl) opts=(--inputs triplet --tasks abc) ;;
      *) echo "unknown variant $variant" >&2; exit 2 ;;
    esac
    dir=target/cqa-models/$variant-s$seed
    if [ ! -f "$dir/model.json" ]; then
      nice -n 10 "$lab" cqa-train "${opts[@]}" --seed "$seed" --threads "${THREADS:-1}" --resume \
        --train "$data/train/SemEval2016-Task3-CQA-QL-train-part2.xml.gz" \
                "$data/train/SemEval2016-Task3-CQA-QL-train-part1.v2.0-OLD.xml.gz" \
        --extended "$data/train/SemEval2016-Task3-CQA-QL-train-part2-subtaskA.xml.gz" \
        --exclude "$dev" --max-epochs 60 --out "$dir" --name "cqa-$variant" > /dev/null
    fi
    python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l)).get("task")=="c" and r.get("model")==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$dir" && continue
    start=$(date +%s.%N)
    res=$("$ansel" eval --data "$dev" --task c --model "$dir" --json)
    secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
card = json.load(open(sys.argv[4] + "/model.json"))
t = card["training"]
r.update(task="c", file="dev/SemEval2016-Task3-CQA-QL-dev.xml.gz", seconds=float(sys.argv[2]), trained=sys.argv[3],
         train_seconds=t["train_seconds"], epochs=t["epochs_completed"], best_epoch=t["best_epoch"],
         tune_map=t["metrics"]["tune_official_map_c"], seed=t["seed"])
print(json.dumps(r))' "$res" "$secs" "cqa-$variant" "$dir" >>"$rows"
  done
done
