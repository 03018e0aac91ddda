#!/usr/bin/env bash
# Builds the SQuAD-sent data of the stronger-encoder experiments into data/squad-sent (idempotent):
#   train.jsonl.gz            training lists (positives, 2 hardest in-paragraph negatives by BM25,
#                             2 BM25 negatives from other training articles)
#   {dev,test}.jsonl          held-out lists (the paragraph's sentences), 22 articles each
#   {dev,test}-x.jsonl        the same plus 10 BM25 sentences of other articles
#   {dev,test}{,-x}-N.jsonl   seeded samples of N questions (N = 500 and 150), what the benchmarks score
#   {dev,test}-ask.jsonl      500 questions for `ansel eval-ask` over data/squad-index-{dev,test}
#   split.json                the article split, counts, and answers that cross a sentence boundary
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}
out=data/squad-sent
ansel=target/release/ansel
lab=target/release/ansel-lab
[ -x "$ansel" ] || cargo build --release -q -p ansel
[ -x "$lab" ] || cargo build --release -q -p ansel-lab
[ -f "$out/split.json" ] || "$lab" squad-sent --data "$data/squad/train-v1.1.rebuilt.json.gz" --out "$out"
for split in dev test; do
  for n in 500 150; do
    for kind in "" -x; do
      sample=$out/$split$kind-$n.jsonl
      [ -f "$sample" ] || python3 - "$out/$split$kind.jsonl" "$n" >"$sample" <<'PY'
import random, sys
lines = open(sys.argv[1]).read().splitlines()
random.Random(7).shuffle(lines)
print("\n".join(lines[: int(sys.argv[2])]))
PY
    done
  done
  [ -d data/squad-index-$split ] || "$ansel" index --index data/squad-index-$split "$out/$split-docs.jsonl"
done
