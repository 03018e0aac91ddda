#!/usr/bin/env bash
# 8-bit against 7-bit dense weights for the committed int8 models on this machine's CPU
# (docs/results/int8-requantize.{md,jsonl}): the graphs as committed before `ansel-lab
# onnx-requantize` (git revision BEFORE, default 6711be4) are restored into runs/requantize/ and
# scored with `ansel eval` on the dev sets that chose the defaults and on WikiQA test; the
# committed (7-bit) models' rows on the same sets come from docs/results/squad-transfer.jsonl
# (bash scripts/bench-squad-transfer.sh), and the 8-bit rows recorded there before the
# requantization from git history. Rows already in the .jsonl are kept per (model, set, cpu);
# REPORT_ONLY=1 rewrites the page. Needs ../shared/data and data/squad-sent (squad-sent-data.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
data=${ANSEL_SHARED_DATA:-../shared/data}
before=${BEFORE:-6711be4}
ansel=target/release/ansel
rows=docs/results/int8-requantize.jsonl
touch "$rows"
cpu=$(sed -n "s/^model name[[:space:]]*: //p" /proc/cpuinfo | head -1)
vnni=without; grep -qwE 'avx512_vnni|avx_vnni' /proc/cpuinfo && vnni=with
cpu="$cpu, $vnni VNNI"
if [ -z "${REPORT_ONLY:-}" ]; then
  [ -x "$ansel" ] || cargo build --release -q -p ansel
  bash scripts/squad-sent-data.sh
  sets=(
    "WikiQA dev:$data/wikiqa/WikiQA-dev.tsv:"
    "TrecQA dev-filtered:$data/trecqa/jsonl/dev-filtered.jsonl:--clean"
    "SQuAD-sent dev-x:data/squad-sent/dev-x-500.jsonl:"
    "WikiQA test:$data/wikiqa/WikiQA-test.tsv:"
  )
  for name in mpnet-base-squad-tanda-int8 minilm-l6-mpnet-distilled-int8; do
    dir=runs/requantize/$name-8bit
    if [ ! -f "$dir/model.json" ]; then
      mkdir -p "$dir"
      for f in config.json model.json model.onnx tokenizer.json; do
        git show "$before:models/$name/$f" >"$dir/$f"
      done
    fi
    for set in "${sets[@]}"; do
      IFS=: read -r set_name file clean <<<"$set"
      python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l))["set"]==sys.argv[2] and r["model"]==sys.argv[3] and r["cpu"]==sys.argv[4] for l in open(sys.argv[1]) if l.strip()) else 1)' \
        "$rows" "$set_name" "$name" "$cpu" && continue
      echo "== $name (8-bit) on $set_name" >&2
      # shellcheck disable=SC2086
      "$ansel" eval --data "$file" $clean --model "$dir" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"set": sys.argv[1], **r, "model": sys.argv[2], "bits": 8, "cpu": sys.argv[3]}))' \
          "$set_name" "$name" "$cpu" >>"$rows"
    done
  done
fi
git show "$before:docs/results/squad-transfer.jsonl" >runs/requantize-recorded.jsonl 2>/dev/null || true
python3 scripts/int8-requantize-report.py "$rows" docs/results/squad-transfer.jsonl runs/requantize-recorded.jsonl "$cpu" docs/results/int8-requantize.md
