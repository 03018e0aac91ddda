#!/usr/bin/env bash
# Does a question over a passage want more of the pretrained encoder's cosine than a question over
# a sentence? docs/results/general-passage-weight.md: the MPNet fusion (mpnet-base-squad-tanda-int8
# + lambda * mpnet-base-cosine-int8) with a cosine weight that grows with the candidate's length,
# per pair, on the dev sets whose queries are questions, from the 128-token scores that
# bench-general.sh caches (no test split is read). A grid on cached scores: no model is made.
set -euo pipefail
cd "$(dirname "$0")/.."
SCORE_ONLY=1 MODELS="mpnet-base-squad-tanda-int8 vendor/models/mpnet-base-cosine-int8" \
  SETS="squad-passage squad-long semeval-cqa wikiqa-dev trecqa-dev-f squad-sent-dev-x" \
  bash scripts/bench-general.sh
python3 scripts/general-passage-report.py target/general
