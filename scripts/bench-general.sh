#!/usr/bin/env bash
# The general reranker's dev suite (issue 40): docs/results/general-reranker.{md,jsonl}.
# Builds the suite (bench/general_suite.py: SQuAD passage, keyword and long-passage ranking over
# the dev articles, TREC CAR's dev article fold; SemEval-2016 task A dev by `ansel convert`) beside the AS2 dev sets
# (WikiQA dev, TrecQA dev-filtered, SQuAD-sent dev-x), scores every set with every model of MODELS
# through `ansel rank` (scores cached in target/general/scores: a model is scored once per set, so
# the script resumes), and writes the page: BM25's first-stage order, the untrained encoders and
# every model on every set, seconds per 30 pairs, and the per-pair fusion weights chosen on dev.
#   MODELS="minilm-l6-cosine mpnet-base-cosine" bash scripts/bench-general.sh
#   REPORT_ONLY=1 bash scripts/bench-general.sh
#   SCORE_ONLY=1 SETS="wikiqa-dev" MODELS=... bash scripts/bench-general.sh   # scores only, no page
# No test split is read: SQuAD's test articles are left out of every collection. The page is
# written from the cached scores alone: general-report.py stops, naming them, when the cache lacks
# models the page shows (DROP_ROWS=1 drops their rows); SCORE_ONLY=1 never writes the page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
work=target/general
suite=$work/suite
venv=${VENV:-bench/.venv-trec-car}
default_models="minilm-l6-cosine mpnet-base-cosine minilm-l6-mpnet-distilled-int8 mpnet-base-squad-tanda-int8"
read -ra models <<<"${MODELS:-$default_models}"
mkdir -p "$suite" "$work/scores"

if [ ! -f "$suite/suite.json" ]; then
  bash scripts/squad-sent-data.sh  # the article split (data/squad-sent/split.json)
  "$venv/bin/python" -c 'import cbor2' 2>/dev/null || { python3 -m venv "$venv" && "$venv/bin/pip" install -q cbor2==6.3.0; }
  car=$data/trec-car/test200-v1.5
  "$venv/bin/python" bench/trec_car_rerank.py lists "$car/train.test200.cbor.paragraphs" \
    docs/results/trec-car/bm25.top40.run.gz "$work/trec-car-all.jsonl"
  python3 bench/general_suite.py build --squad "$data/squad/train-v1.1.rebuilt.json.gz" \
    --split data/squad-sent/split.json --trec-car "$work/trec-car-all.jsonl" \
    --trec-car-qrels "$car/train.test200.cbor.hierarchical.qrels" --out "$suite"
  "$ansel" convert --data "$data/semeval2016-cqa/dev/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml.gz" \
    --task a --out "$suite/semeval-cqa.jsonl"
  "$ansel" convert --data "$data/wikiqa/WikiQA-dev.tsv" --out "$suite/wikiqa-dev.jsonl"
  "$ansel" convert --data "$data/trecqa/jsonl/dev-filtered.jsonl" --out "$suite/trecqa-dev-f.jsonl"
  "$ansel" convert --data data/squad-sent/dev-x-500.jsonl --out "$suite/squad-sent-dev-x.jsonl"
fi
# The general suite, then the AS2 dev sets (all ansel JSON lines in $suite).
sets="squad-passage squad-keyword squad-long trec-car semeval-cqa wikiqa-dev trecqa-dev-f squad-sent-dev-x"
if [ -z "${REPORT_ONLY:-}" ] && [ -z "${LATENCY_ONLY:-}" ]; then
  for m in "${models[@]}"; do
    name=$(basename "$m")
    # SETS="squad-long" scores only those sets (the page shows what is scored).
    for sname in ${SETS:-$sets}; do
      file=$suite/$sname.jsonl
      out=$work/scores/$sname/$name.jsonl
      [ -s "$out" ] && continue
      mkdir -p "$work/scores/$sname"
      echo "== $name on $sname" >&2
      start=$(date +%s.%N)
      "$ansel" rank --data "$file" --model "$m" >"$out.tmp"
      python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$start" "$(date +%s.%N)" >"$out.seconds"
      mv "$out.tmp" "$out"
    done
  done
fi
# Latency per 30 pairs (LATENCY=1, or LATENCY_ONLY=1 to skip the sets; a quiet machine): each model scores 20 lists of 30 SQuAD
# paragraphs (squad-passage's first 20 questions) and 20 of 30 WikiQA-length sentences
# (squad-sent-dev-x's first 20, cut to 30), each list on its own as /rerank does.
if [ -n "${LATENCY:-}${LATENCY_ONLY:-}" ]; then
  mkdir -p "$work/latency"
  head -20 "$suite/squad-passage.jsonl" >"$work/latency/passages-30.jsonl"
  python3 -c 'import json,sys
for line in list(open(sys.argv[1]))[:20]:
    q = json.loads(line); q["candidates"] = q["candidates"][:30]; print(json.dumps(q))' \
    "$suite/squad-sent-dev-x.jsonl" >"$work/latency/sentences-30.jsonl"
  for m in "${models[@]}"; do
    for kind in passages sentences; do
      out=$work/latency/$(basename "$m").$kind.json
      [ -s "$out" ] && continue
      "$ansel" bench --data "$work/latency/$kind-30.jsonl" --model "$m" --per-question --repeat 1 >"$out.tmp"
      mv "$out.tmp" "$out"
    done
  done
fi
# SCORE_ONLY=1 leaves the page alone (it is written from every model's cached scores).
[ -n "${SCORE_ONLY:-}" ] && exit 0
# shellcheck disable=SC2086
python3 scripts/general-report.py "$work" $sets
