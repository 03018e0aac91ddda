#!/usr/bin/env bash
# The thesis' chapter-8 networks on SemEval-2016 Task 3 (ansel-lab cqa-train), each scored on
# dev task C with `ansel eval --task c` (rows appended to docs/results/semeval-cqa.jsonl; then
# REPORT_ONLY=1 scripts/bench-semeval.sh rewrites the page):
# - <q_new, c_rel>: the single network (--inputs pair --tasks c);
# - <q_new, q_rel, c_rel>: the joint input, task C only (--inputs triplet --tasks c);
# - MTL (ABC): the joint input with the three heads (--inputs triplet --tasks abc);
# - triplet-shared and mtl-shared: the same two with one encoder for q_new and q_rel (--share-questions),
#   as section 8.1.2 and Figure 8.2 draw the MTL network (not in the default VARIANTS).
# All on train part 2 (v3.2) + the v2.0 train part 1 without dev's questions, plus the extended
# data from train part 2's task A threads (dev's related questions excluded); early stopping on the
# official task C MAP of a seeded TUNE_FRACTION (default 0.25; the first runs used 0.1, 15 lists)
# of the original questions of each train file (tuning lists, never dev), patience 10. The thesis'
# criterion, the validation loss (--stop-on loss), keeps the first epoch's weights here: without
# dropout the tune loss is lowest after epoch 1, long before the tune MAP peaks.
# MTL scores task C by the rule its heads' tuning MAP prefers (--c-score auto: the C head, P(A) P(B),
# or their sum); `ansel-lab cqa-rules` scores dev by every rule too (rows "c-rules"), for the page's
# analysis only: the rule is never chosen on dev. Each network is also scored fused with the search
# engine's rank (rows "cqa-<variant> + rr").
# Dropout: the thesis reports 0.4 on the inputs and 0.7 between layers. Read as drop rates, the
# single network collapses to the base rate (tune MAP falling from epoch 2, dev MAP 12.4: the
# rows marked drop-0.4-0.7), so `bash scripts/train-cqa-mtl.sh probe` trains the single network
# for 6 epochs at each of (0, 0), (0.2, 0.3), (0.6, 0.3) (the last: the thesis' numbers read as
# keep probabilities) and prints their tune MAPs; DROPOUT (default "0 0", the best on tune) is
# what the runs use.
# PART1=aux trains task C on v3.2 labels only: the v2.0 part 1, a superseded release whose
# annotators marked 23.6% of the comments Good for task C (v3.2's part 2: 12.7%, dev: 6.9%; each
# run writes these counts to docs/results/semeval-cqa-labels.json), then
# feeds only the auxiliary heads (its task B labels; `--aux-only`) and gives no tuning lists.
# Env: SEEDS (default "1 2 3"), VARIANTS (default "single triplet mtl"), DROPOUT, TUNE_FRACTION,
# PART1 (train or aux), THREADS. Models go to target/cqa-models/tune-<fraction>[-part1-aux]/<variant>-s<seed>/ (model.json records
# data, arguments, seed, tune MAPs); nothing is written to models/. Resumable: a finished model is
# not retrained.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${ANSEL_SHARED_DATA:-../shared/data}/semeval2016-cqa
seeds=${SEEDS:-1 2 3}
tune=${TUNE_FRACTION:-0.25}
read -r drop_in drop_hidden <<<"${DROPOUT:-0 0}"
variants=${VARIANTS:-single triplet mtl}
part1=${PART1:-train}
rows=docs/results/semeval-cqa.jsonl
dev=$data/dev/SemEval2016-Task3-CQA-QL-dev.xml.gz
ansel=target/release/ansel
lab=target/release/ansel-lab
[ -x "$ansel" ] && [ -x "$lab" ] || cargo build --release -q -p ansel -p ansel-lab
train=("$data/train/SemEval2016-Task3-CQA-QL-train-part2.xml.gz"
  "$data/train/SemEval2016-Task3-CQA-QL-train-part1.v2.0-OLD.xml.gz")
# Whether the rows hold a task C row of this model.
have_c() { python3 -c 'import json,sys; sys.exit(0 if any((r:=json.loads(l)).get("task")=="c" and r.get("model")==sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$1"; }
common=(--train "${train[@]}" --exclude "$dev" --stop-on map
  --extended "$data/train/SemEval2016-Task3-CQA-QL-train-part2-subtaskA.xml.gz")
setting=tune-$tune
case $part1 in
  train) ;;
  aux) common+=(--aux-only "${train[1]}"); setting=$setting-part1-aux ;;
  *) echo "PART1 must be train or aux" >&2; exit 2 ;;
esac
# Each file's share of task C comments marked Good (the releases label differently): the page quotes it.
"$lab" cqa-train "${common[@]}" --out target/cqa-models --counts-only > docs/results/semeval-cqa-labels.json
if [ "${1:-}" = probe ]; then
  for pair in "0 0" "0.2 0.3" "0.6 0.3"; do
    read -r i h <<<"$pair"
    dir=target/cqa-probe/single-$i-$h
    [ -f "$dir/model.json" ] || nice -n 10 "$lab" cqa-train --inputs pair --tasks c "${common[@]}" \
      --tune-fraction 0.1 --max-epochs 6 --input-dropout "$i" --hidden-dropout "$h" --out "$dir" --resume > /dev/null
    python3 - "$dir/train-log.jsonl" "$rows" "$i" "$h" <<'PY'
import json, sys
log, rows, i, h = sys.argv[1:5]
maps = [round(json.loads(l)["tune_map"], 4) for l in open(log) if l.strip()]
print(f"dropout {i} {h}: tune MAP by epoch {maps}")
row = {"task": "c-probe", "network": "cqa-single", "input_dropout": float(i), "hidden_dropout": float(h), "tune_maps": maps}
old = [json.loads(l) for l in open(rows) if l.strip()]
if not any(r.get("task") == "c-probe" and r["input_dropout"] == row["input_dropout"] and r["hidden_dropout"] == row["hidden_dropout"] for r in old):
    open(rows, "a").write(json.dumps(row) + "\n")
PY
  done
  exit 0
fi
for seed in $seeds; do
  for variant in $variants; do
    case $variant in
      single) opts=(--inputs pair --tasks c) ;;
      triplet) opts=(--inputs triplet --tasks c) ;;
      mtl) opts=(--inputs triplet --tasks abc --c-score auto) ;;
      triplet-shared) opts=(--inputs triplet --tasks c --share-questions) ;;
      mtl-shared) opts=(--inputs triplet --tasks abc --c-score auto --share-questions) ;;
      *) echo "unknown variant $variant" >&2; exit 2 ;;
    esac
    dir=target/cqa-models/$setting/$variant-s$seed
    if [ ! -f "$dir/model.json" ]; then
      nice -n 10 "$lab" cqa-train "${opts[@]}" --seed "$seed" --threads "${THREADS:-1}" --resume \
        --tune-fraction "$tune" \
        "${common[@]}" --input-dropout "$drop_in" --hidden-dropout "$drop_hidden" \
        --max-epochs 60 --out "$dir" > /dev/null
    fi
    if [ "${variant%-shared}" = mtl ]; then
      python3 - "$rows" "$dir" "$seed" "$tune" "$("$lab" cqa-rules --model "$dir" --data "$dev")" "cqa-$variant" <<'PY'
import json, sys
rows, model, seed, tune, out, trained = sys.argv[1:7]
old = [json.loads(l) for l in open(rows) if l.strip()]
if not any(r.get("task") == "c-rules" and r.get("model") == model for r in old):
    card = json.load(open(model + "/model.json"))
    metrics = card["training"]["metrics"]
    rules = [json.loads(l) for l in out.splitlines()]
    for r in rules:
        r["tune_map"] = metrics["tune_official_map_c_" + r["c_score"]]
    row = {"task": "c-rules", "model": model, "trained": trained, "seed": int(seed), "tune_fraction": float(tune),
           "chosen": card["config"]["c_score"], "rules": rules}
    if "part1-aux" in model:
        row["part1"] = "aux"
    open(rows, "a").write(json.dumps(row) + "\n")
PY
    fi
    # The network fused with the search engine's rank (`MODEL+rr`: z-scores summed), as the
    # thesis' "MTL + one feature" row adds the rank to the network's score.
    if ! have_c "$dir+rr"; then
      res=$("$ansel" eval --data "$dev" --task c --model "$dir+rr" --json)
      python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(task="c", file="dev/SemEval2016-Task3-CQA-QL-dev.xml.gz", seconds=None, trained=sys.argv[2] + " + rr",
         tune_fraction=float(sys.argv[3]), seed=int(sys.argv[4]))
if sys.argv[5] == "aux":
    r["part1"] = "aux"
print(json.dumps(r))' "$res" "cqa-$variant" "$tune" "$seed" "$part1" >>"$rows"
    fi
    have_c "$dir" && continue
    start=$(date +%s.%N)
    res=$("$ansel" eval --data "$dev" --task c --model "$dir" --json)
    secs=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start")
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
card = json.load(open(sys.argv[4] + "/model.json"))
t = card["training"]
r.update(task="c", file="dev/SemEval2016-Task3-CQA-QL-dev.xml.gz", seconds=float(sys.argv[2]), trained=sys.argv[3],
         tune_fraction=t["hyperparameters"]["arguments"]["tune_fraction"], c_score=card["config"].get("c_score", "head"),
         train_seconds=t["train_seconds"], epochs=t["epochs_completed"], best_epoch=t["best_epoch"],
         tune_map=t["metrics"]["tune_official_map_c"], seed=t["seed"])
if t["hyperparameters"]["arguments"].get("aux_only"):
    r["part1"] = "aux"
print(json.dumps(r))' "$res" "$secs" "cqa-$variant" "$dir" >>"$rows"
  done
done
