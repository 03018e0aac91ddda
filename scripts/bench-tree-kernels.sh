#!/usr/bin/env bash
# The thesis' chapter-4 comparison on WikiQA and TrecQA: the tree-kernel SVM (CTK: shallow chunk
# trees with REL marks, a tree kernel; `ansel-lab tk`), RelCNN (`ansel train --model relcnn`)
# and their score combination (weight chosen on dev), with the subset tree kernel (STK, into
# $WORK/<set>/tk) and the partial tree kernel (PTK, the thesis' kernel; $WORK/<set>/ptk, about 7
# times STK's kernel time). Parses every text once with spaCy
# (scripts/spacy-venv.sh makes the pinned venv; scripts/parse-shallow.py). Writes
# docs/results/tree-kernels.{md,jsonl}; work files under $WORK (default target/tk).
# Env: DATASETS (default "wikiqa trecqa"), MAX_TRAIN_QUESTIONS (caps the SVM's training questions:
# the kernel matrix grows with the square of the pairs), THREADS (default 2), KERNELS (default
# "stk ptk").
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
WORK=${WORK:-target/tk}
datasets=${DATASETS:-wikiqa trecqa}
kernels=${KERNELS:-stk ptk}
ansel=target/release/ansel
lab=target/release/ansel-lab
nice -n 10 cargo build -q --release -p ansel -p ansel-lab
bash scripts/spacy-venv.sh > /dev/null
mkdir -p "$WORK/data"
for ds in $datasets; do
  case $ds in
    wikiqa) files=("$data/wikiqa/WikiQA-train.tsv" "$data/wikiqa/WikiQA-dev.tsv" "$data/wikiqa/WikiQA-test.tsv") ;;
    trecqa) files=("$data/trecqa/jsonl/train.jsonl" "$data/trecqa/jsonl/dev-filtered.jsonl" "$data/trecqa/jsonl/test-filtered.jsonl") ;;
    *) echo "unknown data set $ds" >&2; exit 2 ;;
  esac
  for i in 0 1 2; do
    split=(train dev test)
    out=$WORK/data/$ds-${split[$i]}.jsonl
    [ -f "$out" ] || "$ansel" convert --data "${files[$i]}" --out "$out"
  done
  parsed=$WORK/data/$ds-parsed.jsonl
  [ -f "$parsed" ] || nice -n 10 target/spacy-venv/bin/python scripts/parse-shallow.py \
    "$WORK/data/$ds-train.jsonl" "$WORK/data/$ds-dev.jsonl" "$WORK/data/$ds-test.jsonl" --out "$parsed"
  dir=$WORK/$ds
  mkdir -p "$dir"
  for kernel in $kernels; do
    out=$dir/tk; [ "$kernel" = stk ] || out=$dir/$kernel
    [ -f "$out/report.json" ] || nice -n 10 "$lab" tk --kernel "$kernel" --parsed "$parsed" \
      --train "$WORK/data/$ds-train.jsonl" --eval "$WORK/data/$ds-dev.jsonl" "$WORK/data/$ds-test.jsonl" \
      --out "$out" --threads "${THREADS:-2}" ${MAX_TRAIN_QUESTIONS:+--max-train-questions "$MAX_TRAIN_QUESTIONS"}
  done
  [ -f "$dir/relcnn/model.json" ] || nice -n 10 "$ansel" train --model relcnn --loss pointwise \
    --train "$WORK/data/$ds-train.jsonl" --dev "$WORK/data/$ds-dev.jsonl" --out "$dir/relcnn" --seed 1 > /dev/null
  for s in dev test; do
    [ -f "$dir/relcnn-$s.scores.jsonl" ] || "$ansel" rank --data "$WORK/data/$ds-$s.jsonl" --model "$dir/relcnn" \
      > "$dir/relcnn-$s.scores.jsonl"
  done
done
python3 scripts/tree-kernel-report.py "$WORK" $datasets
