#!/usr/bin/env bash
# Chooses the default models on measured evidence (docs/results/default-model.{md,jsonl}).
# - rank/eval: models that score each (question, sentence) pair on its own, compared on the dev
#   sets of docs/results/squad-transfer.jsonl (scripts/bench-squad-transfer.sh makes those rows);
# - ask/serve: cascades (BM25 retrieves, a model prunes, a model reranks what is kept) run by
#   `ansel eval-ask` with the dev questions of held-out SQuAD articles over two indexes: the 22
#   held-out dev articles, and every SQuAD article (~100k sentences, where latency is measured);
#   the chosen cascade is then reported on the test questions and the sample corpus, and (with its
#   calibration, as `ask` uses it) on questions that the index cannot answer.
# Rows already in the .jsonl are kept, so the script resumes; REPORT_ONLY=1 rewrites the page.
# Latency rows want a quiet machine: stop other work (kill -STOP) while they run.
# Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
rows=docs/results/default-model.jsonl
touch "$rows"
mpnet=mpnet-base-squad-tanda-int8
student=minilm-l6-mpnet-distilled-int8
former=idf-wo+cosinenet-wikiqa-distilled+compare-aggregate-wikiqa
# name|rerank model|prune model|keep|retrieve
cascades=(
  "former default|$former|bm25|30|100"
  "idf-wo|idf-wo|bm25|30|100"
  "student 30|$student|bm25|30|100"
  "student 20|$student|bm25|20|100"
  "MPNet 10|$mpnet|bm25|10|100"
  "student 30 -> MPNet 2|$mpnet|$student|2|30"
  "student 30 -> MPNet 3|$mpnet|$student|3|30"
  "student 20 -> MPNet 3|$mpnet|$student|3|20"
  "student 20 -> MPNet 2|$mpnet|$student|2|20"
)
# Cascades also run over every SQuAD article (latency at ~100k sentences) and on test.
IFS='|' read -ra large <<<"${LARGE:-former default|idf-wo|student 30|student 20|student 30 -> MPNet 2|student 30 -> MPNet 3|student 20 -> MPNet 3|student 20 -> MPNet 2}"
chosen=${CHOSEN:-student 20 -> MPNet 2}

have() { python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l).get("set")==sys.argv[2] and json.loads(l).get("cascade")==sys.argv[3] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1" "$2"; }
run_cascade() { # set-name index questions cascade-line
  local set=$1 index=$2 questions=$3 name model prune keep retrieve
  IFS='|' read -r name model prune keep retrieve <<<"$4"
  have "$set" "$name" && return 0
  echo "== $name on $set" >&2
  "$ansel" eval-ask --index "$index" --questions "$questions" --model "$model" --prune-model "$prune" \
    --keep "$keep" --retrieve "$retrieve" --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"set": sys.argv[1], "cascade": sys.argv[2], **r}))' "$set" "$name" >>"$rows"
}
cascade_line() { for c in "${cascades[@]}"; do [ "${c%%|*}" = "$1" ] && { echo "$c"; return; }; done; echo "no cascade named $1" >&2; exit 1; }

if [ -z "${REPORT_ONLY:-}" ]; then
  [ -x "$ansel" ] || cargo build --release -q -p ansel
  bash scripts/squad-sent-data.sh
  if [ ! -d data/ask-index-large ]; then
    python3 bench/ask_index_docs.py "$data/squad/train-v1.1.rebuilt.json.gz" "$data/wikiqa" >data/squad-sent/large-index-docs.jsonl
    "$ansel" index --index data/ask-index-large data/squad-sent/large-index-docs.jsonl
  fi
  for c in "${cascades[@]}"; do
    run_cascade "SQuAD dev, held-out articles" data/squad-index-dev data/squad-sent/dev-ask.jsonl "$c"
  done
  for name in "${large[@]}"; do
    run_cascade "SQuAD dev, large index" data/ask-index-large data/squad-sent/dev-ask.jsonl "$(cascade_line "$name")"
  done
  for name in "former default" "idf-wo" "student 30" "$chosen"; do
    c=$(cascade_line "$name")
    run_cascade "SQuAD test, held-out articles" data/squad-index-test data/squad-sent/test-ask.jsonl "$c"
    run_cascade "SQuAD test, large index" data/ask-index-large data/squad-sent/test-ask.jsonl "$c"
  done
  # How often BM25's first K sentences hold the answer: the ceiling of every cascade retrieving K.
  for index in data/squad-index-dev data/ask-index-large; do
    for k in 20 30 100; do
      set_name="BM25 recall@$k, SQuAD dev, ${index#data/}"
      have "$set_name" "bm25" && continue
      "$ansel" eval-ask --index "$index" --questions data/squad-sent/dev-ask.jsonl --model bm25 \
        --prune-model none --retrieve "$k" --top "$k" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"set": sys.argv[1], "cascade": "bm25", "recall_at": int(sys.argv[2]), **r}))' "$set_name" "$k" >>"$rows"
    done
  done
  # Unanswerable questions from our own corpora: the dev questions over the test articles' index
  # (their answers are elsewhere), where the calibrated cascade should abstain.
  run_cascade "SQuAD dev questions over the test articles (unanswerable)" data/squad-index-test \
    data/squad-sent/dev-ask.jsonl "$(cascade_line "$chosen")"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$ansel" index --index "$work/index" examples/corpus >/dev/null 2>&1
  for name in "former default" "idf-wo" "student 30" "$chosen"; do
    run_cascade "sample corpus" "$work/index" examples/corpus-questions.jsonl "$(cascade_line "$name")"
  done
fi
CHOSEN="$chosen" python3 scripts/default-model-report.py "$rows" docs/results/squad-transfer.jsonl docs/results/default-model.md
