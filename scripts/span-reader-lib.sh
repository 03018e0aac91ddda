# Sourced by scripts/train-span-reader.sh and scripts/train-span-reader-gpu.sh: the steps both
# readers' runs share. Expects $ansel and $lab (the release binaries).

# squad_span_data: data/squad-spans/{train,dev,test}.jsonl, SQuAD v1.1 train as span records split
# by article exactly as data/squad-sent (scripts/squad-sent-data.sh) split it.
squad_span_data() {
  bash scripts/squad-sent-data.sh
  [ -f data/squad-spans/train.jsonl ] ||
    "$lab" squad-spans --data "${ANSEL_SHARED_DATA:-../shared/data}/squad/train-v1.1.rebuilt.json.gz" \
      --split data/squad-sent/split.json --out data/squad-spans
}

# calibrate READER: the calibration is fitted on dev records (1000, an even sample), never on test,
# in the proportion of answer sentences `ask` reads: its first answer holds the answer for 0.84 of
# the dev questions (P@1, docs/results/span-reader.md), where the records alone hold about as many
# sentences without.
calibrate() {
  "$ansel" eval-reader --data data/squad-spans/dev.jsonl --reader "$1" --records 1000 --calibrate --answer-share 0.84
}
