#!/usr/bin/env bash
# The span reader's results (docs/results/span-reader.{jsonl,md}):
# - given the gold sentence and the gold paragraph, on dev records (choice) and test records
#   (reported only): the shipped int8 graph, the libtorch fp32 model it came from, and the rule
#   baseline (longest capitalised or numeric run), with "no span" accuracy and cost per reading;
# - end to end: `eval-ask` with the default cascade over the held-out articles' index, the span
#   of the first answer against the expected answer, with the reader on and off (same session).
# - PREVIOUS=DIR (a reader shipped before, e.g. copied aside before retraining): its dev rows beside
#   the shipped reader's, measured in the same session.
# - OTHER=DIR (another reader, e.g. runs/mpnet-base-squad-span-fp32 from `MPNET=1
#   scripts/train-span-reader.sh`): its dev rows, named after DIR, measured in the same session.
# Rows already in the .jsonl are kept, so the script resumes; REPORT_ONLY=1 rewrites the page.
# Needs ../shared/data and scripts/train-span-reader.sh's outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
rows=docs/results/span-reader.jsonl
reader=${READER:-models/minilm-l6-squad-span-int8}
source=${SOURCE:-runs/minilm-l6-squad-span-3}
previous=${PREVIOUS:-}
other=${OTHER:-}
touch "$rows"
have() { python3 -c 'import json,sys; sys.exit(0 if any(json.loads(l).get("row")==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1"; }
row() { # name command...
  local name=$1; shift
  have "$name" && return 0
  echo "== $name" >&2
  "$@" | tail -1 | python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"row": sys.argv[1], **r}))' "$name" >>"$rows"
}
if [ -z "${REPORT_ONLY:-}" ]; then
  cargo build --release -q -p ansel
  # The calibration is judged in the proportion of answer sentences it was fitted for (ask's).
  share_of() { python3 -c 'import json,os,sys; s=json.load(open(sys.argv[1]))["dev"].get("answer_share") if os.path.exists(sys.argv[1]) else None; print(f"--answer-share={s}" if s else "")' "$1/calibration.json"; }
  share=$(share_of "$reader")
  for split in dev test; do
    row "reader int8, $split records" "$ansel" eval-reader --data data/squad-spans/$split.jsonl --reader "$reader" --records 1000 $share
    row "rule baseline, $split records" "$ansel" eval-reader --data data/squad-spans/$split.jsonl --reader rule --records 1000
  done
  # The same weights as an fp32 ONNX graph: what int8 costs in accuracy, and what fp32 costs in time.
  fp32=target/span-reader-fp32
  # A graph left from another source (an earlier stage) is made again.
  python3 -c 'import json,os,sys; sys.exit(json.load(open(sys.argv[1]))["config"]["source"] != os.path.abspath(sys.argv[2]))' \
    "$fp32/model.json" "$source" 2>/dev/null || rm -rf "$fp32"
  [ -f "$fp32/model.onnx" ] || "$ansel" quantize --model "$source" --out "$fp32" --precision fp32
  row "reader fp32 ONNX, dev records" "$ansel" eval-reader --data data/squad-spans/dev.jsonl --reader "$fp32" --records 1000
  for split in dev test; do
    row "ask, $split questions, reader on" "$ansel" eval-ask --index data/squad-index-$split --questions data/squad-sent/$split-ask.jsonl --reader "$reader" --json
    row "ask, $split questions, reader off" "$ansel" eval-ask --index data/squad-index-$split --questions data/squad-sent/$split-ask.jsonl --reader none --json
  done
  row "ask, dev questions, reader fp32 ONNX" "$ansel" eval-ask --index data/squad-index-dev --questions data/squad-sent/dev-ask.jsonl --reader "$fp32" --json
  # dev_rows READER_ROW ASK_ROW DIR: another reader's dev rows, given the gold sentence and in `ask`.
  dev_rows() {
    row "$1" "$ansel" eval-reader --data data/squad-spans/dev.jsonl --reader "$3" --records 1000 $(share_of "$3")
    row "$2" "$ansel" eval-ask --index data/squad-index-dev --questions data/squad-sent/dev-ask.jsonl --reader "$3" --json
  }
  [ -z "$previous" ] || dev_rows "previous reader int8, dev records" "ask, dev questions, previous reader" "$previous"
  [ -z "$other" ] || dev_rows "$(basename "$other"), dev records" "ask, dev questions, reader $(basename "$other")" "$other"
fi
python3 bench/span_reader_report.py "$rows" >docs/results/span-reader.md
