#!/usr/bin/env bash
# The thesis' chapter 5 on SemEval-2016 Task 3 subtask B (question-question similarity): a
# tree-kernel SVM (`ansel-lab tk`; subset tree kernel, and the partial tree kernel as a second
# teacher) trained on the gold pairs labels unlabelled question pairs
# (`ansel-lab question-pairs`: every training text with its 10 best BM25 matches among the
# others); RelCNN (`ansel train --model relcnn --loss pointwise`) is trained on gold alone, on
# the TK-labelled pairs alone, on both, and pre-trained on the TK labels then fine-tuned on gold
# (lr / 10). Controls: the gold CNN as the labeller (self-training), and every pair labelled
# relevant (what more pairs, mostly relevant, give without any teacher). Dev task B, official MAP. Writes docs/results/tk-student.{md,jsonl}; work files under $WORK.
# Gold training pairs: train part 2 and the v2.0 part 1 without dev's original questions (part 1
# holds all 50); a seeded 15% of each file's original questions is the tuning set (early
# stopping), never dev. No text of dev or tune enters the unlabelled pool.
# Env: SEEDS (default 1 to 10), THREADS (default 2), WORK (default target/tk-student).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/semeval2016-cqa
WORK=${WORK:-target/tk-student}
seeds=${SEEDS:-1 2 3 4 5 6 7 8 9 10}
ansel=target/release/ansel
lab=target/release/ansel-lab
nice -n 10 cargo build -q --release -p ansel -p ansel-lab
bash scripts/spacy-venv.sh > /dev/null
d=$WORK/data
mkdir -p "$d"
dev_xml=$data/dev/SemEval2016-Task3-CQA-QL-dev.xml.gz
if [ ! -f "$d/unlabelled.jsonl" ]; then
  "$ansel" convert --data "$dev_xml" --task b --out "$d/dev.jsonl"
  for part in part1.v2.0-OLD part2; do
    "$ansel" convert --data "$data/train/SemEval2016-Task3-CQA-QL-train-$part.xml.gz" --task b \
      --out "$d/train-$part.jsonl" --tune-out "$d/tune-$part.jsonl" --tune-fraction 0.15 --seed 1
  done
  # Part 1 (v2.0) holds dev's original questions: drop them from training and tuning.
  python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
dev = {json.loads(l)["question"] for l in open(f"{d}/dev.jsonl")}
for split in ("train", "tune"):
    kept = [l for part in ("part1.v2.0-OLD", "part2") for l in open(f"{d}/{split}-{part}.jsonl")
            if json.loads(l)["question"] not in dev]
    open(f"{d}/{split}.jsonl", "w").writelines(kept)
    print(f"{split}: {len(kept)} original questions", file=sys.stderr)
PY
  "$lab" question-pairs --from "$d/train.jsonl" --exclude "$d/tune.jsonl" "$d/dev.jsonl" \
    --out "$d/unlabelled.jsonl"
fi
parsed=$d/parsed.jsonl
[ -f "$parsed" ] || nice -n 10 target/spacy-venv/bin/python scripts/parse-shallow.py \
  "$d/train.jsonl" "$d/tune.jsonl" "$d/dev.jsonl" "$d/unlabelled.jsonl" --out "$parsed"
[ -f "$WORK/tk/report.json" ] || nice -n 10 "$lab" tk --parsed "$parsed" --train "$d/train.jsonl" \
  --eval "$d/tune.jsonl" "$d/dev.jsonl" --label "$d/unlabelled.jsonl" --out "$WORK/tk" --threads "${THREADS:-2}"
# The same with the partial tree kernel (the thesis' kernel), a second teacher.
[ -f "$WORK/tk-ptk/report.json" ] || nice -n 10 "$lab" tk --kernel ptk --parsed "$parsed" --train "$d/train.jsonl" \
  --eval "$d/tune.jsonl" "$d/dev.jsonl" --label "$d/unlabelled.jsonl" --out "$WORK/tk-ptk" --threads "${THREADS:-2}"
tk_labelled=$WORK/tk/unlabelled.jsonl.labelled.jsonl
ptk_labelled=$WORK/tk-ptk/unlabelled.jsonl.labelled.jsonl
all_relevant=$WORK/all-relevant.jsonl
[ -f "$all_relevant" ] || python3 -c '
import json, sys
for line in open(sys.argv[1]):
    q = json.loads(line)
    for c in q["candidates"]:
        c["label"] = 1
    print(json.dumps(q))' "$d/unlabelled.jsonl" > "$all_relevant"

# train NAME TRAIN_FILE SEED [extra ansel train flags]: a RelCNN, early stopping on tune.
train() {
  local name=$1 file=$2 seed=$3
  shift 3
  local out=$WORK/models/$name-s$seed
  [ -f "$out/model.json" ] && return
  local start=$SECONDS
  nice -n 10 "$ansel" train --model relcnn --loss pointwise --train "$file" --dev "$d/tune.jsonl" \
    --out "$out" --seed "$seed" --threads "${THREADS:-2}" "$@" > /dev/null
  echo "$((SECONDS - start))" > "$out.seconds"
}
lr=$(python3 -c "print(2e-3 / 10)")
for seed in $seeds; do
  train cnn-gold "$d/train.jsonl" "$seed"
  # Self-training control: the gold CNN labels the same pairs (positive where p > 0.5).
  cnn_labelled=$WORK/cnn-labelled-s$seed.jsonl
  if [ ! -f "$cnn_labelled" ]; then
    "$ansel" rank --data "$d/unlabelled.jsonl" --model "$WORK/models/cnn-gold-s$seed" \
      > "$WORK/cnn-scores-s$seed.jsonl"
    python3 - "$d/unlabelled.jsonl" "$WORK/cnn-scores-s$seed.jsonl" "$cnn_labelled" <<'PY'
import json, sys
qs = [json.loads(l) for l in open(sys.argv[1])]
scores = {r["id"]: [c["score"] for c in r["scores"]] for r in map(json.loads, open(sys.argv[2]))}
with open(sys.argv[3] + ".tmp", "w") as out:
    for q in qs:
        for c, s in zip(q["candidates"], scores[q["id"]]):
            c["label"] = int(s > 0)  # a logit above 0: probability above 0.5
        out.write(json.dumps(q) + "\n")
import os; os.replace(sys.argv[3] + ".tmp", sys.argv[3])
PY
  fi
  cat "$tk_labelled" "$d/train.jsonl" > "$WORK/tk-plus-gold.jsonl"
  cat "$ptk_labelled" "$d/train.jsonl" > "$WORK/ptk-plus-gold.jsonl"
  cat "$cnn_labelled" "$d/train.jsonl" > "$WORK/cnn-plus-gold.jsonl"
  cat "$all_relevant" "$d/train.jsonl" > "$WORK/all-plus-gold.jsonl"
  train "cnn-tk" "$tk_labelled" "$seed"
  train "cnn-tk-ft" "$d/train.jsonl" "$seed" --init "$WORK/models/cnn-tk-s$seed" --lr "$lr"
  train "cnn-tk+gold" "$WORK/tk-plus-gold.jsonl" "$seed"
  train "cnn-ptk" "$ptk_labelled" "$seed"
  train "cnn-ptk-ft" "$d/train.jsonl" "$seed" --init "$WORK/models/cnn-ptk-s$seed" --lr "$lr"
  train "cnn-ptk+gold" "$WORK/ptk-plus-gold.jsonl" "$seed"
  train "cnn-cnn" "$cnn_labelled" "$seed"
  train "cnn-cnn-ft" "$d/train.jsonl" "$seed" --init "$WORK/models/cnn-cnn-s$seed" --lr "$lr"
  train "cnn-cnn+gold" "$WORK/cnn-plus-gold.jsonl" "$seed"
  train "cnn-all+gold" "$WORK/all-plus-gold.jsonl" "$seed"
done
python3 scripts/tk-student-report.py "$WORK" "$dev_xml" $seeds
