#!/usr/bin/env bash
# Ranking quality of the ONNX Runtime cross-encoders against their tch (libtorch) sources:
# converts models/minilm-l6-wikiqa, minilm-l6-tanda-all-2ep and minilm-l6-tanda with `ansel quantize` (int8 and
# fp32), scores WikiQA test (answered questions) and TrecQA test-filtered (--clean) with
# `ansel eval` (each model on the set it was made for), and writes docs/results/int8.md
# (scripts/int8-report.py): P@1/MAP/MRR, per-pair score differences, top-1 agreement, and the
# wall time of each eval (indicative only on a shared machine; see bench/throughput.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-tanda-all-2ep   # left models/ for the span reader
data=${DATA:-../shared/data}
bin=target/release/ansel
out=${OUT:-runs/int8}
bash scripts/fetch-onnxruntime.sh
bash scripts/restore-model.sh minilm-l6-tanda   # left models/ for the MPNet model
[ -x "$bin" ] || cargo build --release -p ansel
mkdir -p "$out" docs/results
for m in minilm-l6-wikiqa minilm-l6-tanda-all-2ep minilm-l6-tanda; do
  for p in int8 fp32; do
    "$bin" quantize --model "$m" --precision "$p" --out "$out/$m-$p"
  done
done
run_set() { # tag data flags model...
  local tag=$1 file=$2 flags=$3; shift 3
  for m in "$@"; do
    local name; name=$(basename "$m")
    local start; start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin" eval --data "$file" $flags --model "$m" --json --trec-dir "$out/trec-$tag" > "$out/$tag-$name.json"
    local end; end=$(date +%s.%N)
    python3 - "$out/$tag-$name.json" "$start" "$end" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
path, start, end, load = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
r["eval_seconds"] = round(end - start, 1)
r["loadavg_after"] = load
json.dump(r, open(path, "w"))
PY
    cat "$out/$tag-$name.json"; echo
  done
}
run_set wikiqa "$data/wikiqa/WikiQA-test.tsv" "" \
  models/minilm-l6-wikiqa "$out/minilm-l6-wikiqa-fp32" "$out/minilm-l6-wikiqa-int8" \
  models/minilm-l6-tanda-all-2ep "$out/minilm-l6-tanda-all-2ep-fp32" "$out/minilm-l6-tanda-all-2ep-int8"
run_set trecqa "$data/trecqa/jsonl/test-filtered.jsonl" "--clean" \
  models/minilm-l6-tanda "$out/minilm-l6-tanda-fp32" "$out/minilm-l6-tanda-int8"
python3 scripts/int8-report.py "$out" docs/results/int8
