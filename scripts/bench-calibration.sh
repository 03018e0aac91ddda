#!/usr/bin/env bash
# Calibration and abstention (docs/results/calibration.{md,jsonl}, reliability diagrams in
# docs/results/calibration/): for every model of MODELS, `ansel calibrate` fits Platt scaling and
# the abstention threshold on WikiQA dev (all 296 questions, the 170 without an answer too) and
# reports on WikiQA test (all 633). Rows already in the .jsonl are kept (one per model), so a new
# model costs only its own run; REPORT_ONLY=1 rewrites the page from the rows.
#   MODELS="wo-rr minilm-l6-tanda-all-2ep" bash scripts/bench-calibration.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-tanda-all-2ep   # left models/ for the span reader
data=${ANSEL_SHARED_DATA:-../shared/data}/wikiqa
ansel=target/release/ansel
rows=docs/results/calibration.jsonl
mkdir -p docs/results/calibration
touch "$rows"
if [ -z "${REPORT_ONLY:-}" ]; then
  [ -x "$ansel" ] || cargo build --release -q -p ansel
  read -ra models <<<"${MODELS:-wo-rr+cosinenet-wikiqa-distilled+compare-aggregate-wikiqa minilm-l6-tanda-all-2ep}"
  for m in "${models[@]}"; do
    python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l)["model"]==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$m" && continue
    echo "== $m" >&2
    safe=$(echo "$m" | tr -c 'A-Za-z0-9_.\n-' '_')
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$ansel" calibrate --model "$m" --fit "$data/WikiQA-dev.tsv" \
      --test "$data/WikiQA-test.tsv" --diagram "docs/results/calibration/$safe.svg" >>"$rows"
  done
fi
python3 scripts/calibration-report.py "$rows" docs/results/calibration.md
