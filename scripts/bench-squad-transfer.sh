#!/usr/bin/env bash
# The stronger-encoder results (docs/results/squad-transfer.{md,jsonl}): every model of MODELS on
# WikiQA, TrecQA, SQuAD-sent held-out articles (in-paragraph lists and lists with sentences of other
# articles) and `ansel eval-ask` over an index of the held-out articles. Dev sets choose; test sets
# report. Rows already in the .jsonl are kept (a model is scored once per set), so the script
# resumes and a new model costs only its own rows; REPORT_ONLY=1 rewrites the page from the rows.
#   MODELS="bm25 idf-wo models/x" bash scripts/bench-squad-transfer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
rows=docs/results/squad-transfer.jsonl
touch "$rows"
if [ -z "${REPORT_ONLY:-}" ]; then
  [ -x "$ansel" ] || cargo build --release -q -p ansel
  bash scripts/squad-sent-data.sh
  read -ra models <<<"${MODELS:-bm25 idf-wo}"
  sets=(
    "WikiQA dev:$data/wikiqa/WikiQA-dev.tsv:"
    "WikiQA test:$data/wikiqa/WikiQA-test.tsv:"
    "TrecQA dev-filtered:$data/trecqa/jsonl/dev-filtered.jsonl:--clean"
    "TrecQA test-filtered:$data/trecqa/jsonl/test-filtered.jsonl:--clean"
    "SQuAD-sent dev:data/squad-sent/dev-500.jsonl:"
    "SQuAD-sent dev-x:data/squad-sent/dev-x-500.jsonl:"
    "SQuAD-sent test:data/squad-sent/test-500.jsonl:"
    "SQuAD-sent test-x:data/squad-sent/test-x-500.jsonl:"
  )
  have() { python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l).get("set")==sys.argv[2] and json.loads(l)["model"]==sys.argv[3] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1" "$2"; }
  for m in "${models[@]}"; do
    for set in "${sets[@]}"; do
      IFS=: read -r name file clean <<<"$set"
      have "$name" "$m" && continue
      echo "== $m on $name" >&2
      # shellcheck disable=SC2086
      "$ansel" eval --data "$file" $clean --model "$m" --json | sed "s/^{/{\"set\":\"$name\",/" >>"$rows"
    done
    for split in dev test; do
      name="SQuAD $split (ask)"
      have "$name" "$m" && continue
      echo "== $m on $name" >&2
      # The cascade the page describes, pinned: ask's defaults have changed since the first rows.
      "$ansel" eval-ask --index data/squad-index-$split --questions data/squad-sent/$split-ask.jsonl \
        --model "$m" --retriever bm25 --retrieve 100 --prune-model bm25 --keep 30 --json | sed "s/^{/{\"set\":\"$name\",/" >>"$rows"
    done
  done
fi
python3 scripts/squad-transfer-report.py "$rows" docs/results/squad-transfer.md
