#!/usr/bin/env bash
# What scoring int8 pairs one at a time costs (the default, so that a pair's score is its own)
# against batching them (ANSEL_INT8_BATCH=32): `ansel eval` wall time on the same lists, three runs
# each, alternating, and the largest score difference between the two ways.
# Writes docs/results/int8-batching.{md,jsonl}. Needs data/squad-sent (scripts/squad-sent-data.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8  # the former pruning model left models/
ansel=target/release/ansel
[ -x "$ansel" ] || cargo build --release -q -p ansel
[ -f data/squad-sent/dev-x-150.jsonl ] || bash scripts/squad-sent-data.sh
rows=docs/results/int8-batching.jsonl
: >"$rows"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in "minilm-l6-mpnet-distilled-int8:data/squad-sent/dev-x-150.jsonl" "mpnet-base-squad-tanda-int8:data/squad-sent/dev-150.jsonl"; do
  model=${spec%%:*} data=${spec#*:}
  for run in 1 2 3; do
    for batch in 1 32; do
      start=$(date +%s.%N)
      ANSEL_INT8_BATCH=$batch "$ansel" rank --data "$data" --model "$model" >"$work/$model.$batch.jsonl"
      end=$(date +%s.%N)
      python3 - "$model" "$batch" "$run" "$start" "$end" "$work/$model.$batch.jsonl" "$data" >>"$rows" <<'PY'
import json, sys
model, batch, run, start, end, path, data = sys.argv[1:]
lines = [json.loads(l) for l in open(path)]
pairs = sum(len(l["scores"]) for l in lines)
aps = []  # average precision of each question with an answer, from the scores and the data's labels
for line, q in zip(lines, map(json.loads, open(data))):
    labels = [c.get("label", 0) for c in q["candidates"]]
    order = sorted(range(len(labels)), key=lambda i: -line["scores"][i]["score"])
    hits, precisions = 0, []
    for rank, i in enumerate(order, 1):
        if labels[i] > 0:
            hits += 1
            precisions.append(hits / rank)
    if precisions:
        aps.append(sum(precisions) / len(precisions))
print(json.dumps({"model": model, "batch": int(batch), "run": int(run), "pairs": pairs,
                  "seconds": float(end) - float(start), "MAP": sum(aps) / len(aps)}))
PY
    done
  done
  python3 - "$model" "$work/$model.1.jsonl" "$work/$model.32.jsonl" >>"$rows" <<'PY'
import json, sys
model, one, many = sys.argv[1:]
worst = max(abs(a["score"] - b["score"])
            for la, lb in zip(open(one), open(many))
            for a, b in zip(json.loads(la)["scores"], json.loads(lb)["scores"]))
print(json.dumps({"model": model, "largest_difference": worst}))
PY
done
python3 - "$rows" >docs/results/int8-batching.md <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# int8 cross-encoders: one pair at a time against batches of 32\n")
print("Produced by `bash scripts/bench-int8-batching.sh`; rows in `int8-batching.jsonl`. An int8 graph")
print("quantizes activations with one scale per tensor (ONNX Runtime's DynamicQuantizeMatMul), so a pair")
print("scored in a batch gets a score that depends on the other pairs of the batch. ansel therefore runs")
print("an int8 graph's pairs one at a time by default (`ANSEL_INT8_BATCH` sets another batch size).")
print("`ansel rank` wall time, model loading included, on the same lists (SQuAD-sent held-out dev")
print("questions: with other articles' sentences for the student, the answer's paragraph for MPNet),")
print("three runs of each, alternating, on this 2-core machine; median pairs/s and its ratio; MAP of")
print("the rankings (ties broken by list order); the largest difference of one pair's score.\n")
print("| model | pairs | pairs/s, one at a time | pairs/s, batches of 32 | ratio | MAP, one at a time | MAP, batches of 32 | largest score difference |")
print("|---|---|---|---|---|---|---|---|")
for model in dict.fromkeys(r["model"] for r in rows):
    timed = [r for r in rows if r["model"] == model and "seconds" in r]
    rate = {b: statistics.median(r["pairs"] / r["seconds"] for r in timed if r["batch"] == b) for b in (1, 32)}
    diff = next(r["largest_difference"] for r in rows if r["model"] == model and "largest_difference" in r)
    ap = {b: next(r["MAP"] for r in timed if r["batch"] == b) for b in (1, 32)}
    print(f"| `{model}` | {timed[0]['pairs']:,} | {rate[1]:.1f} | {rate[32]:.1f} | {rate[1] / rate[32]:.2f} | {ap[1]:.4f} | {ap[32]:.4f} | {diff:.4f} |")
PY
cat docs/results/int8-batching.md
