#!/usr/bin/env bash
# TREC CAR test200 (v1.5): BM25, STNet and its -TRANS / -SIM ablations (5 article-level folds),
# scored with `ansel eval-trec --trec-eval` (as trec_eval -c) on hierarchical, top-level and
# article qrels, checked against pytrec_eval, with a paired randomization test STNet vs BM25.
# Writes docs/results/trec-car.md, and under docs/results/trec-car/ each run's top $KEEP per query
# (gzipped; the top-100 runs the metrics are computed on stay in $WORK: at 100 paragraphs a query a
# gzipped run is ~4 MB, over the repository's 2 MB limit per file) and each model's training record.
# Resumable: rerun to continue an interrupted training (checkpoints in $WORK).
# Each fold chooses its checkpoint on an inner dev set (10% of its training articles). STNet
# variants are trained again with each seed of EXTRA_SEEDS (default "14 15"; its folds differ
# too) into $WORK-s<seed> (EXTRA_VARIANTS, default "full no-trans": -SIM is far below STNet with
# the first seed), and the page compares the systems over the seeds as well.
# Env: DATA (test200 folder), WORK (checkpoints, default target/trec-car), STEPS, BLOCKS, THREADS,
# SCHEDULE (constant or warmup-linear: the learning rate of every variant), RUN_TRIALS=1 (also train
# the page's other recipes into $WORK-last, $WORK-h2, $WORK-warmup and $WORK-squad (pre-trained on
# the SQuAD train file SQUAD) and their -s<seed> twins: hours),
# EXTRA_SEEDS, EXTRA_VARIANTS, PYTREC_VENV (a venv with pytrec-eval-terrier; created when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/trec-car/test200-v1.5}
SQUAD=${SQUAD:-../shared/data/squad/train-v1.1.rebuilt.json.gz}
WORK=${WORK:-target/trec-car}
STEPS=${STEPS:-3000}
BLOCKS=${BLOCKS:-2}
THREADS=${THREADS:-1}
SCHEDULE=${SCHEDULE:-constant}
KEEP=${KEEP:-40}
OUT=docs/results/trec-car
mkdir -p "$OUT" "$WORK"
nice -n 10 cargo build -q --release -p ansel -p ansel-lab
ansel=target/release/ansel
lab=target/release/ansel-lab
q=$(ls "$DATA"/*.cbor.hierarchical.qrels)
base=${q%.hierarchical.qrels}

# One STNet cross-validation into folder $1 (run file $1.run.gz) with seed $2 and variant $3, then
# any further options; resumable.
stnet() {
  local out=$1 seed=$2 variant=$3
  shift 3
  nice -n 10 $lab trec-car stnet --data "$DATA" --variant "$variant" --seed "$seed" --out "$out" --run "$out.run.gz" \
    --steps "$STEPS" --blocks "$BLOCKS" --threads "$THREADS" --resume "$@"
}
name_of() { if [ "$1" = full ]; then echo stnet; else echo "stnet-$1"; fi; }

echo "== BM25"
/usr/bin/time -f %e -o "$WORK/bm25.seconds" nice -n 10 $lab trec-car bm25 --data "$DATA" --run "$WORK/bm25.run.gz"
for v in full no-trans no-sim; do
  name=$(name_of $v)
  echo "== $name"
  stnet "$WORK/$name" 13 $v --schedule "$SCHEDULE"
  cp "$WORK/$name/training.json" "$OUT/$name.training.json"
done
export SEED_WORKS=""
for seed in ${EXTRA_SEEDS-14 15}; do
  for v in ${EXTRA_VARIANTS:-full no-trans}; do
    echo "== $(name_of $v), seed $seed"
    stnet "$WORK-s$seed/$(name_of $v)" "$seed" $v --schedule "$SCHEDULE"
  done
  SEED_WORKS="$SEED_WORKS $WORK-s$seed"
done

if [ "${RUN_TRIALS:-0}" = 1 ]; then
  for seed in 13 ${EXTRA_SEEDS-14 15}; do
    sfx=""; [ "$seed" = 13 ] || sfx=-s$seed
    for v in full no-trans no-sim; do
      name=$(name_of $v)
      [ -f "$WORK$sfx/$name/training.json" ] || continue
      echo "== $name, seed $seed, scored with the last step"
      for fold in "$WORK$sfx/$name"/fold-*; do
        dst=$WORK-last$sfx/$name/$(basename "$fold")
        mkdir -p "$dst"
        cp -n "$fold"/{state.json,checkpoint.safetensors,optim.safetensors} "$dst/"
      done
      stnet "$WORK-last$sfx/$name" "$seed" $v --checkpoint last
    done
    echo "== stnet, 2 heads, seed $seed"
    stnet "$WORK-h2$sfx/stnet" "$seed" full --heads 2
    for v in full no-trans no-sim; do
      [ $v = no-sim ] && [ "$seed" != 13 ] && continue
      echo "== $(name_of $v), warm-up and linear decay, seed $seed"
      stnet "$WORK-warmup$sfx/$(name_of $v)" "$seed" $v --schedule warmup-linear --warmup 300
    done
    for v in full no-trans no-sim; do
      [ $v = no-sim ] && [ "$seed" != 13 ] && continue
      echo "== $(name_of $v), pre-trained on SQuAD, seed $seed"
      stnet "$WORK-squad$sfx/$(name_of $v)" "$seed" $v --pretrain-squad "$SQUAD"
    done
  done
fi

echo "== results page (first pass: writes the fused article runs)"
python3 scripts/trec-car-report.py "$ansel" "$base" "$WORK" "$OUT" > /dev/null

echo "== pytrec_eval agreement"
PYTREC_VENV=${PYTREC_VENV:-$WORK/pytrec-venv}
[ -x "$PYTREC_VENV/bin/python" ] || { python3 -m venv "$PYTREC_VENV" && "$PYTREC_VENV/bin/pip" install -q pytrec-eval-terrier; }
runs="$WORK/bm25.run.gz $WORK/stnet.run.gz $WORK/stnet-no-trans.run.gz $WORK/stnet-no-sim.run.gz"
: > "$WORK/pytrec.jsonl"
for level in hierarchical toplevel; do
  nice -n 10 "$PYTREC_VENV/bin/python" scripts/trec-car-pytrec-eval.py $ansel "$base.$level.qrels" $runs \
    | sed "s/^{/{\"qrels\": \"$level\", /" >> "$WORK/pytrec.jsonl"
done
nice -n 10 "$PYTREC_VENV/bin/python" scripts/trec-car-pytrec-eval.py $ansel "$base.article.qrels" "$WORK"/*.article.run \
  | sed "s/^{/{\"qrels\": \"article\", /" >> "$WORK/pytrec.jsonl"

echo "== results page"
python3 scripts/trec-car-report.py "$ansel" "$base" "$WORK" "$OUT" > docs/results/trec-car.md
for name in bm25 stnet stnet-no-trans stnet-no-sim; do
  zcat "$WORK/$name.run.gz" | awk -v k="$KEEP" '$4 <= k' | gzip -9n > "$OUT/$name.top$KEEP.run.gz"
done
echo "wrote docs/results/trec-car.md"
