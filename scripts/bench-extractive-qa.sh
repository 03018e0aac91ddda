#!/usr/bin/env bash
# Extractive QA on TrecQA TEST (SEDAN section 5.2): exact match and token F1 of the answer span read
# from the oracle sentence, from the top-1 sentence of three rankers, and from their top-k with span
# and sentence scores combined; the rule baseline beside the learned extractors.
# Writes docs/results/extractive-qa.md. Needs ../shared/data and the extractors trained by
# scripts/train-span-extractor.sh (runs/reader/{gold,synthetic}).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/trecqa/xml
ansel=${ANSEL_BIN:-target/release/ansel}
[ -x "$ansel" ] || cargo build --release -q -p ansel
bash scripts/restore-model.sh minilm-l6-sedan-trecqa   # left models/ for the MPNet model
out=docs/results/extractive-qa.md
extractors=()
runs=(runs/reader/gold runs/reader/synthetic runs/reader/synthetic-gold runs/reader/gold-lr5e-5)
for d in "${runs[@]}"; do
  [ -f "$d/model.json" ] && extractors+=(--extractor "$d")
done
table=$("$ansel" eval-extract --data "$data/TEST.xml" --clean --threads 1 "${extractors[@]}" \
  --ranker bm25 --ranker models/minilm-l6-sedan-trecqa --ranker idf-wo+compare-aggregate-wikiqa)
{
  echo "# Extractive QA on ranked sentences (TrecQA TEST, SEDAN section 5.2)"
  echo
  echo "Written by \`bash scripts/bench-extractive-qa.sh\` ($(date -u +%Y-%m-%d)); extractors trained by"
  echo "\`bash scripts/train-span-extractor.sh\`. EM and F1 are SQuAD's (lower-cased, punctuation and"
  echo "articles removed; F1 over tokens; the best over the question's gold answers). \"sentence is a"
  echo "positive\" is the fraction of questions whose chosen sentence is labelled correct."
  echo
  echo "$table"
  echo
  echo "Setup: questions are TrecQA TEST's clean questions (a positive and a negative sentence); the"
  echo "extractors read \"[CLS] question [SEP] sentence [SEP]\" and pick the best span of at most 10 sentence"
  echo "tokens; they were trained on answer-bearing sentences only (no \"no answer\" option), so in the top-k"
  echo "rows the span score can only say how sure the extractor is, not whether the sentence answers."
  echo "Top-k rows: among the ranker's top k sentences, the one with the highest sum of the sentence score and"
  echo "the span score, each standardised over the question's candidates. The oracle reads the first gold"
  echo "positive sentence in file order. The rule baseline has no span score, so it has no top-k rows."
  echo
  echo "Extractors (from each model.json):"
  echo
  for d in "${runs[@]}"; do
    [ -f "$d/model.json" ] || continue
    python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(f"{d}/model.json"))
t = c["training"]; h = t["hyperparameters"]
m = ", ".join(f"{k} {v:.3f}" for k, v in sorted(t["metrics"].items()))
print(f"- `{d}` ({c['name']}): {h['data']}; {h['train_examples']} training examples, "
      f"{t['epochs_completed']} epoch(s), lr {h['lr']}, batch {h['batch_size']} x {h['accumulate']} accumulated, "
      f"seed {t['seed']}, base {t['base'][0]}, {t['train_seconds']:.0f} s on {t['machine']}; best dev: {m}"
      + (" (on synthetic dev questions, not comparable with the gold dev F1)" if "synthetic" in h["data"] else "") + ".")
PY
  done
} >"$out"
echo "wrote $out"
