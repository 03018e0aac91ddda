#!/usr/bin/env bash
# The general rerankers and the models they fuse on the AS2 test sets (WikiQA test, TrecQA
# test-filtered): reported, never chosen on. Rows to docs/results/general-reranker-test.jsonl
# (kept: the script resumes); scripts/bench-general.sh renders them.
#   MODELS="mpnet-base-general minilm-l6-general" bash scripts/bench-general-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
rows=docs/results/general-reranker-test.jsonl
touch "$rows"
read -ra models <<<"${MODELS:-mpnet-base-general minilm-l6-general mpnet-base-squad-tanda-int8 minilm-l6-general-distilled-int8 minilm-l6-mpnet-distilled-int8}"
have() { python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l).get("set")==sys.argv[2] and json.loads(l)["model"]==sys.argv[3] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1" "$2"; }
for m in "${models[@]}"; do
  for set in "WikiQA test:$data/wikiqa/WikiQA-test.tsv:" "TrecQA test-filtered:$data/trecqa/jsonl/test-filtered.jsonl:--clean"; do
    IFS=: read -r name file clean <<<"$set"
    have "$name" "$m" && continue
    echo "== $m on $name" >&2
    # shellcheck disable=SC2086
    "$ansel" eval --data "$file" $clean --model "$m" --json | sed "s/^{/{\"set\":\"$name\",/" >>"$rows"
  done
done
