#!/usr/bin/env bash
# Lexical baselines on WikiQA test and TrecQA test-filtered.
# Writes docs/results/lexical-baselines.{md,jsonl}. Needs ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
[ -x "$ansel" ] || cargo build --release -q -p ansel
out=docs/results
mkdir -p "$out"
wikiqa=(eval --data "$data/wikiqa/WikiQA-test.tsv" --model rr --model wo --model idf-wo --model wo-rr --model bm25 --json)
wikiqa_clean=(eval --data "$data/wikiqa/WikiQA-test.tsv" --clean --model rr --model wo --model idf-wo --model wo-rr --model bm25 --json)
trecqa=(eval --data "$data/trecqa/jsonl/test-filtered.jsonl" --clean --model wo --model idf-wo --model wo-rr --model bm25 --json)
{
  "$ansel" "${wikiqa[@]}" | sed 's/^{/{"set":"WikiQA test (answered)",/'
  "$ansel" "${wikiqa_clean[@]}" | sed 's/^{/{"set":"WikiQA test (clean)",/'
  "$ansel" "${trecqa[@]}" | sed 's/^{/{"set":"TrecQA test-filtered",/'
} > "$out/lexical-baselines.jsonl"
python3 - "$out/lexical-baselines.jsonl" > "$out/lexical-baselines.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# Lexical baselines\n")
print("Produced by `bash scripts/bench-lexical.sh` (commands below); raw numbers in `lexical-baselines.jsonl`.")
print("Ties are ranked against the model. IDF and BM25 statistics come from the candidate sentences of the")
print("evaluated file (labels unused). TrecQA has no document order: `rr` refuses it and `wo-rr` equals `wo` there.\n")
print("| set | model | questions | P@1 | MAP | MRR | R@5 | NDCG@10 | R-Prec |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['set']} | {r['model']} | {r['questions']} | {r['P@1']:.4f} | {r['MAP']:.4f} | {r['MRR']:.4f} | {r['R@5']:.4f} | {r['NDCG@10']:.4f} | {r['R-Prec']:.4f} |")
print("\nReference (Bonadiman thesis, Table 1.2 / 7.1, WikiQA test): RR P@1 46.09 MAP 64.21; WO P@1 32.51 MAP 51.02; WO+RR P@1 56.38 MAP 68.25.")
PY
printf "\n## Commands\n\n" >> "$out/lexical-baselines.md"
for cmd in wikiqa wikiqa_clean trecqa; do
  declare -n args=$cmd
  echo "    ansel ${args[*]}" | sed "s#$data#../shared/data#g" >> "$out/lexical-baselines.md"
done
cat "$out/lexical-baselines.md"
