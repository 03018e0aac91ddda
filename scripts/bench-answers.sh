#!/usr/bin/env bash
# Answer quality and latency of `ansel ask` on the sample corpus: indexes examples/corpus, asks the
# 28 labelled questions of examples/corpus-questions.jsonl with several cascades (one question at a
# time, release build) and writes docs/results/corpus-answers.md.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p ansel
bin=./target/release/ansel
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" index --index "$work/index" examples/corpus >/dev/null 2>&1

out=docs/results/corpus-answers.md
{
  echo "# Answers on the sample corpus"
  echo
  echo "Produced by \`bash scripts/bench-answers.sh\`: \`ansel eval-ask\` over an index of \`examples/corpus\`"
  echo "(22 documents) with the 28 questions of \`examples/corpus-questions.jsonl\`, each labelled with a"
  echo "phrase its answer sentence contains. BM25 retrieves 100 sentences, the prune model keeps 30, the"
  echo "model reranks them. P@1 and MRR count the first answer sentence in the top 10 (0 when absent);"
  echo "found: questions with one in the top 10. Latency: one question at a time, end to end (retrieval,"
  echo "pruning, reranking), on this 2-core machine shared with other work. The questions were written"
  echo "with the corpus, so they share more words with their answers than real users' questions would."
  echo
  echo "| model | prune model | questions | P@1 | MRR | found | p50 ms | p99 ms |"
  echo "|---|---|---|---|---|---|---|---|"
  for cascade in "idf-wo bm25" "idf-wo none" "wo-rr bm25" "wo bm25" "bm25 none" "rr bm25"; do
    set -- $cascade
    "$bin" eval-ask --index "$work/index" --questions examples/corpus-questions.jsonl \
      --model "$1" --prune-model "$2"
  done
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
