#!/usr/bin/env bash
# A fast student that keeps general relevance (issue 40): one MiniLM-L6 cross-encoder, the cost of
# `ask`'s pruning model, distilled from the student fusion (minilm-l6-mpnet-distilled-int8's logit +
# 10 x all-MiniLM-L6-v2's cosine, read whole: no windows) on a mixture of
#   - SQuAD passage ranking over the split's *train* articles (half questions, half keywords;
#     bench/general_suite.py train), BM25's top 8;
#   - SemEval-2016 task A train (part 2: forum question -> comments);
#   - WikiQA train, TrecQA train-all (300 lists), SQuAD-sent train (1500 lists): the AS2 skill.
# Pointwise: target 0.3 x gold + 0.7 x sigmoid(a x teacher + b), (a, b) a Platt fit to the gold
# labels. Starts from minilm-l6-squad-transfer.
# Dev (checkpoint choice): 100 squad-keyword lists, WikiQA dev, 100 SemEval dev lists.
# Also writes runs/minilm-l6-general-distilled: the student read in windows (80 words every 60) as
# the shipped fusions read long passages. Phase 2 and SHIP=1 (below) made the shipped
# models/minilm-l6-general-distilled-int8 (docs/results/general-reranker.md). On 2 cores: 36,604 pairs, 1144 steps, 45 min at 14-22 pairs/s,
# after 8.5 min of teacher scoring. Resumable: rerun the script after a kill. Then
# `MODELS="runs/minilm-l6-general-distilled-int8 runs/minilm-l6-general-distilled" bash
# scripts/bench-general.sh` puts both on the dev suite. DATA_ONLY=1 stops after the mixture.
# Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
work=target/general-student
run=${RUN:-runs/minilm-l6-general-student}
out=${OUT:-runs/minilm-l6-general-distilled-int8}
cargo build --release -q -p ansel
bash scripts/squad-sent-data.sh
[ -f target/general/suite/suite.json ] || REPORT_ONLY=1 bash scripts/bench-general.sh
mkdir -p "$work/teacher"
if [ ! -f "$work/mix.jsonl" ]; then
  python3 bench/general_suite.py train --squad "$data/squad/train-v1.1.rebuilt.json.gz" \
    --split data/squad-sent/split.json --out "$work" --questions 1000 --k 8
  "$ansel" convert --task a --out "$work/semeval-train.jsonl" \
    --data "$data/semeval2016-cqa/train/SemEval2016-Task3-CQA-QL-train-part2-subtaskA.xml.gz"
  "$ansel" convert --data "$data/wikiqa/WikiQA-train.tsv" --out "$work/wikiqa-train.jsonl"
  "$ansel" convert --data "$data/trecqa/jsonl/train-all.jsonl.gz" --out "$work/trecqa-train.jsonl"
  zcat data/squad-sent/train.jsonl.gz >"$work/squad-sent-train.jsonl"
  python3 bench/mix_lists.py --seed 11 --out "$work/mix.jsonl" \
    passage="$work/squad-passage-train.jsonl:0:8" semeval="$work/semeval-train.jsonl:0:10" \
    wikiqa="$work/wikiqa-train.jsonl:0:12" trecqa="$work/trecqa-train.jsonl:300:20" \
    squad-sent="$work/squad-sent-train.jsonl:1500:8"
  suite=target/general/suite
  python3 bench/mix_lists.py --seed 5 --out "$work/devmix.jsonl" keyword="$suite/squad-keyword.jsonl:100:30" \
    wikiqa="$suite/wikiqa-dev.jsonl:0:40" semeval="$suite/semeval-cqa.jsonl:100:10"
fi
# DATA_ONLY=1: the mixture alone (scripts/train-cross-encoder-gpu.sh general-prepare reads it).
[ "${DATA_ONLY:-0}" = 1 ] && exit 0
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
# The teacher: the former student fusion (the AS2-only student's logit + 10 x all-MiniLM-L6-v2's
# cosine, the student reading 128 tokens: no windows); models/minilm-l6-general is now the fusion
# of the student this script makes.
python3 - "$work/teacher/model.json" <<'PY'
import json, sys
members = [{"model": "../../../models/minilm-l6-mpnet-distilled-int8", "weight": 1.0},
           {"model": "../../../vendor/models/minilm-l6-cosine-int8", "weight": 10.0}]
card = {"kind": "pair-fusion", "name": "minilm-l6-general-128", "ansel_version": "0.1.0",
        "config": {"members": members},
        "training": {"train_data": [], "dev_data": "target/general/suite", "hyperparameters": {
            "score": "logit of minilm-l6-mpnet-distilled-int8 + 10 x cosine of minilm-l6-cosine-int8"},
            "seed": 7, "epochs_completed": 0, "best_epoch": None, "metrics": {}, "train_seconds": 0.0,
            "machine": "nothing trained", "base": ["minilm-l6-mpnet-distilled-int8", "minilm-l6-cosine-int8"]}}
json.dump(card, open(sys.argv[1], "w"), indent=1)
PY
# One distillation phase, resumable: distill RUN BASE MIX WEIGHT LR SEED OUT trains RUN from BASE
# on MIX (the teacher's weight in the target WEIGHT), then OUT (int8) and its windowed card.
distill() {
  local run=$1 base=$2 mix=$3 weight=$4 lr=$5 seed=$6 out=$7 resume=()
  [ -f "$run/checkpoint/state.json" ] && resume=(--resume)
  if ! grep -q '"event":"end"' "$run/train-log.jsonl" 2>/dev/null; then
    "$ansel" train --model cross-encoder --base "$base" \
      --train "$mix" --dev "$work/devmix.jsonl" --out "$run" --name "$(basename "$run")" \
      --teacher "$work/teacher" --distill-weight "$weight" --temperature 1 --teacher-cache "$work/teacher-cache" \
      --lr "$lr" --batch-size 16 --accumulate 2 --threads 2 --seed "$seed" --epochs 1 --eval-every 200 \
      "${resume[@]}"
  fi
  [ -f "$out/model.json" ] || "$ansel" quantize --model "$run" --out "$out" --precision int8
  python3 scripts/windowed-card.py "$out"  # the student read in windows, beside OUT
}
distill "$run" models/minilm-l6-squad-transfer "$work/mix.jsonl" 0.7 3e-5 42 "$out"
# Phase 2 (PHASE2=1): an AS2-heavier continuation of the student above, because inside `ask` it
# put the answer first 0.018 less often than the shipped student (docs/results/general-reranker.md).
# From runs/minilm-l6-general-student, one epoch on 2400 SQuAD-sent train lists + 600 passage, 150
# SemEval and 300 WikiQA lists (another seed), W 0.5 (more weight on the gold AS2 labels), lr 2e-5.
[ "${PHASE2:-0}" = 1 ] || exit 0
run2=${RUN2:-runs/minilm-l6-general-student-as2}
out2=${OUT2:-runs/minilm-l6-general-distilled-as2-int8}
if [ ! -f "$work/mix-as2.jsonl" ]; then
  python3 bench/mix_lists.py --seed 23 --out "$work/mix-as2.jsonl" \
    squad-sent="$work/squad-sent-train.jsonl:2400:8" passage="$work/squad-passage-train.jsonl:600:8" \
    semeval="$work/semeval-train.jsonl:150:10" wikiqa="$work/wikiqa-train.jsonl:300:12"
fi
distill "$run2" "$run" "$work/mix-as2.jsonl" 0.5 2e-5 43 "$out2"
# SHIP=1: models/minilm-l6-general-distilled-int8 is the phase-2 student, its card named so and
# holding phase 1's training record (the student replaced minilm-l6-mpnet-distilled-int8 as `ask`'s
# pruning model; docs/results/general-reranker.md, "A distilled general student").
[ "${SHIP:-0}" = 1 ] || exit 0
ship=models/minilm-l6-general-distilled-int8
rm -rf "$ship.tmp" && cp -r "$out2" "$ship.tmp"
python3 - "$ship.tmp" "$run/model.json" <<'PY'
import json, sys
path, phase1 = sys.argv[1] + "/model.json", json.load(open(sys.argv[2]))
card = json.load(open(path))
card["name"] = "minilm-l6-general-distilled-int8"
card["config"]["source"] = "runs/minilm-l6-general-student-as2 (scripts/train-general-student.sh)"
card["training"]["phases"] = [
    {"phase": "general distillation", "run": "runs/minilm-l6-general-student", **phase1["training"]},
    {"phase": "AS2-heavier continuation", "run": "runs/minilm-l6-general-student-as2"}]
json.dump(card, open(path, "w"), indent=2)
PY
rm -rf "$ship" && mv "$ship.tmp" "$ship"
