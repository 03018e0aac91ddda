#!/usr/bin/env bash
# The general rerankers inside `ask` (issue 40): the default cascade (BM25 16 -> the general
# student -> MPNet on its best 3) against the former one (BM25 20 -> the AS2-only student -> MPNet
# on its best 2) and their crossings, by `ansel eval-ask` with the dev questions of held-out
# SQuAD articles over their own index and over the 118k-sentence index (where latency is measured:
# run it on a quiet machine). Rows go to docs/results/general-reranker-ask.jsonl (kept: the script
# resumes); scripts/bench-general.sh renders them on docs/results/general-reranker.md.
#   INDEXES="held-out" bash scripts/bench-general-ask.sh   # the held-out articles' index only
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
rows=docs/results/general-reranker-ask.jsonl
touch "$rows"
bash scripts/squad-sent-data.sh
if [ ! -d data/ask-index-large ]; then
  python3 bench/ask_index_docs.py "$data/squad/train-v1.1.rebuilt.json.gz" "$data/wikiqa" >data/squad-sent/large-index-docs.jsonl
  "$ansel" index --index data/ask-index-large data/squad-sent/large-index-docs.jsonl
fi
# name|rerank model|prune model|keep|retrieve (rows of earlier sessions are kept, marked so)
cascades=(
  "former default: AS2 student 20 -> MPNet 2|mpnet-base-squad-tanda-int8|minilm-l6-mpnet-distilled-int8|2|20"
  "AS2 student 16 -> MPNet 3|mpnet-base-squad-tanda-int8|minilm-l6-mpnet-distilled-int8|3|16"
  "default: general student 16 -> MPNet 3|mpnet-base-squad-tanda-int8|minilm-l6-general-distilled-int8|3|16"
  "general student 20 -> MPNet 2|mpnet-base-squad-tanda-int8|minilm-l6-general-distilled-int8|2|20"
)
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model
have() { python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l).get("set")==sys.argv[2] and json.loads(l).get("cascade")==sys.argv[3] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1" "$2"; }
read -ra indexes <<<"${INDEXES:-held-out large}"
for which in "${indexes[@]}"; do
  case $which in
    held-out) set="SQuAD dev, held-out articles|data/squad-index-dev" ;;
    large) set="SQuAD dev, large index|data/ask-index-large" ;;
    *) echo "INDEXES: held-out or large, not $which" >&2; exit 2 ;;
  esac
  IFS='|' read -r set_name index <<<"$set"
  for c in "${cascades[@]}"; do
    IFS='|' read -r name model prune keep retrieve <<<"$c"
    have "$set_name" "$name" && continue
    echo "== $name on $set_name" >&2
    "$ansel" eval-ask --index "$index" --questions data/squad-sent/dev-ask.jsonl --model "$model" \
      --prune-model "$prune" --keep "$keep" --retrieve "$retrieve" --retriever bm25 --json |
      python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"set": sys.argv[1], "cascade": sys.argv[2], **r}))' "$set_name" "$name" >>"$rows"
  done
done
