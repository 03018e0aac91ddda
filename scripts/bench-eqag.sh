#!/usr/bin/env bash
# EQAG-GNN (issue #7): base scorer alone vs EQAG TA / T+ / T+- (3 seeds) and the RI row, on
# WikiQA test (clean, 237 q) and TrecQA test-filtered (68 q); the dev sweeps; the graph-step
# latency with >= 2,000 stored training questions. Writes docs/results/eqag.md.
#
#   bash scripts/bench-eqag.sh mpnet   (TA / T+ / T+- over models/mpnet-base-squad-tanda-int8 on WikiQA:
#   docs/results/eqag-mpnet.md, work files in target/eqag-mpnet)
#   bash scripts/bench-eqag.sh [all|cache|wikiqa|trecqa|latency|extensions|features|features-wikiqa|features-trecqa|model-features|model|cosinenet|report]
#   bash scripts/bench-eqag.sh [oof|oof-wikiqa|oof-trecqa|oof-features|oof-features-trecqa|oof-directed|oof-quality|oof-report]
#   bash scripts/bench-eqag.sh [ce|ce-cache|ce-wikiqa|ce-trecqa|ce-insample|ce-answer|ce-trecqaall|ce-report]
#   bash scripts/bench-eqag.sh [pv|pv-cache|pv-wikiqa|pv-trecqa|pv-transfer|pv-live|pv-latency|pv-report]
#   (pv-wikiqa / pv-trecqa: PV_FIT=dev fits the GCN on half of dev; PV_VARIANTS="ta t+ t+-" adds TA and T+-)
#   bash scripts/bench-eqag.sh [cv|cv-cache|cv-wikiqa|cv-trecqa|cv-transfer|cv-n4|cv-live|cv-latency|cv-report]
#   (`cv*`: as `pv*` with `cls-vec`, the base cross-encoder's [CLS] states, instead of `pair-vec`;
#   docs/results/eqag-cls-vec.md, work files in target/eqag-cv)
#
# `oof*` (extension, docs/results/eqag-oof.md; work files in target/eqag-oof): efficient base
# rankers, EQAG with in-sample training-node scores (the paper's way) against out-of-fold ones
# (`--oof-folds 5`: each fold of the training questions scored by the base's family retrained on
# the other folds with the base's recorded recipe), a smaller sweep grid, the RI row and the
# no-graph z-score fusion peer. Tags get "-oof".
#
# Extensions (not the paper): INTER_BY=answer (inter-row edges by answer similarity; tags get
# "-answer"); FIT_ON_DEV=1 (the GCN is fitted on the even dev questions joined to the training
# graph and chosen on the odd ones; tags get "-fod"); NODE_FEATURES=base,wo-rr (extra node features,
# each z-scored within the question; tags get "-nf"; see the `features` step, which also evaluates
# the plain z-score fusion of the same scorers as a peer row: what the graph adds beyond the features).
# Work files (gitignored) go to target/eqag: answered-question subsets of the data, base-score
# caches (`ansel rank` output; the cross-encoders score each pair once), sweep tables, models.
# Test numbers come from `ansel eval --model DIR`; the EQAG loader takes the base scores of
# questions it finds in $ANSEL_EQAG_BASE_CACHE and scores the others live, and one run per data
# set is repeated without the cache to show the live path gives the same numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/restore-model.sh minilm-l6-tanda-all-2ep   # left models/ for the span reader
step=${1:-all}
[ "$step" = mpnet ] || bash scripts/restore-model.sh minilm-l6-tanda   # left models/ for the MPNet model
ansel=${ANSEL:-./target/release/ansel}
D=../shared/data
W=target/eqag
case $step in mpnet) W=target/eqag-mpnet ;; oof*) W=target/eqag-oof ;; ce*) W=target/eqag-ce ;; pv*) W=target/eqag-pv ;; cv*) W=target/eqag-cv ;; esac
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$W/data" "$W/cache" "$W/runs" "$W/results"
[ -x "$ansel" ] || cargo build --release -q -p ansel
lab=${ANSEL_LAB:-./target/release/ansel-lab}
[ -x "$lab" ] || cargo build --release -q -p ansel-lab
SEEDS="1 2 3"

# Answered questions only (at least one positive), in the source format.
answered_tsv() { awk -F'\t' 'NR==FNR { if ($7 == "1") p[$1] = 1; next } FNR == 1 || ($1 in p)' "$1" "$1" > "$2"; }
[ -s $W/data/wikiqa-train.tsv ] || answered_tsv $D/wikiqa/WikiQA-train.tsv $W/data/wikiqa-train.tsv
[ -s $W/data/wikiqa-dev.tsv ] || answered_tsv $D/wikiqa/WikiQA-dev.tsv $W/data/wikiqa-dev.tsv
[ -s $W/data/wikiqa-test.tsv ] || answered_tsv $D/wikiqa/WikiQA-test.tsv $W/data/wikiqa-test.tsv
[ -s $W/data/trecqa-train.jsonl ] || grep '"label": 1' $D/trecqa/jsonl/train.jsonl > $W/data/trecqa-train.jsonl
cp -n $D/trecqa/jsonl/dev-filtered.jsonl $W/data/trecqa-dev.jsonl
cp -n $D/trecqa/jsonl/test-filtered.jsonl $W/data/trecqa-test.jsonl

# cache DATASET SPLIT BASE: base scores of a split, once.
cache() {
  local out=$W/cache/$1-$2.$(basename "$3").jsonl
  if [ ! -s "$out" ]; then
    echo "== scoring $1 $2 with $3" >&2
    local t0=$(date +%s)
    $ansel rank --data $W/data/$1-$2.* --model "$3" > "$out.tmp" && mv "$out.tmp" "$out"
    echo "{\"data\": \"$1-$2\", \"base\": \"$3\", \"seconds\": $(( $(date +%s) - t0 ))}" >> $W/results/cache-times.jsonl
  fi
  echo "$out"
}

# run DATASET BASE CLEANFLAG: sweep each variant on dev, then 3 seeds of its best setting + RI.
run() {
  local by=${INTER_BY:-row}
  local fod=${FIT_ON_DEV:+--fit-on-dev}
  local ds=$1 base=$2 clean=$3 tag=$1-$(basename "$2")$([ "$by" = row ] || echo "-$by")${NODE_FEATURES:+-nf}${FIT_ON_DEV:+-fod}${OOF_FOLDS:+-oof}${DIRECTED:+-dir}${TAG:+-$TAG}
  local nf=(); [ -z "${NODE_FEATURES:-}" ] || nf=(--node-features "$NODE_FEATURES")
  local oof=(); [ -z "${OOF_FOLDS:-}" ] || oof=(--oof-folds "$OOF_FOLDS" --oof-cache $W/oof-cache)
  local grid=(); [ -z "${SWEEP_GRID:-}" ] || read -r -a grid <<< "$SWEEP_GRID"
  local dir=(); [ -z "${DIRECTED:-}" ] || dir=(--directed-inter)
  local cc=(); [ -z "${CLS_CACHE:-}" ] || cc=(--cls-cache "$CLS_CACHE")
  local vc=$W/cache/minilm-vectors-$ds-$by.bin
  local sc=${SCORER:-$base}
  local ctrain=$(cache $ds train "$sc") cdev=$(cache $ds dev "$sc") ctest=$(cache $ds test "$sc")
  local common=(--model eqag --base "$base" --train $W/data/$ds-train.* --dev $W/data/$ds-dev.*
    --base-cache "$ctrain" --base-cache "$cdev" --threads 1 --feature "${FEATURE:-sigmoid}"
    --inter-by "$by" $fod "${nf[@]}" "${oof[@]}" "${dir[@]}" "${cc[@]}" --vector-cache $vc)
  export ANSEL_EQAG_BASE_CACHE=$ctest ANSEL_EQAG_VECTOR_CACHE=$vc ANSEL_EQAG_CLS_CACHE=${CLS_CACHE:-}
  $ansel eval --data $W/data/$ds-test.* $clean --model "$sc" --json > $W/results/$tag-base.json
  for v in ${VARIANTS:-ta t+ t+-}; do
    local sweep=$W/results/sweep-$tag-$v.jsonl
    if [ ! -s "$sweep" ]; then
      $ansel train "${common[@]}" "${grid[@]}" --variant $v --seed 42 --sweep "$sweep" --out $W/runs/$tag-$v-sweep > /dev/null
    fi
    # The sweep's best graph settings, then one model per seed.
    local g=$(jq -r '.config.graph | "--k-intra \(.k_intra) --th-intra \(.th_intra) --k-rows \(.k_rows) --k-inter \(.k_inter) --th-inter \(.th_inter)"' $W/runs/$tag-$v-sweep/model.json)
    for s in $SEEDS; do
      local out=$W/runs/$tag-$v-s$s
      [ -s $out/model.json ] || $ansel train "${common[@]}" --variant $v $g --seed $s --out $out > /dev/null
      $ansel eval --data $W/data/$ds-test.* $clean --model $out --json > $W/results/$tag-$v-s$s.json
      if [ "$v" = "t+" ] && [ -z "${NODE_FEATURES:-}" ]; then
        local ri=$W/runs/$tag-ri-s$s
        [ -s $ri/model.json ] || $ansel train "${common[@]}" --variant $v $g --random-init --seed $s --out $ri > /dev/null
        $ansel eval --data $W/data/$ds-test.* $clean --model $ri --json > $W/results/$tag-ri-s$s.json
      fi
    done
  done
  # The live path (no cache): same numbers as the cached run of seed 1 of T+.
  if [ -z "${SKIP_LIVE:-}" ]; then
    ANSEL_EQAG_BASE_CACHE= ANSEL_EQAG_VECTOR_CACHE= $ansel eval --data $W/data/$ds-test.* $clean --model $W/runs/$tag-t+-s1 --json > $W/results/$tag-t+-s1-live.json
  fi
}

latency() {
  # >= 2,000 stored training questions: every WikiQA train question (2,118, answered or not),
  # base = the fast Cosinenet ranker (scored live); the graph step does not depend on the base.
  local out=$W/runs/latency-wikiqa-all-cosinenet
  if [ ! -s $out/model.json ]; then
    $ansel train --model eqag --base models/cosinenet-wikiqa --feature minmax --all-questions \
      --train $D/wikiqa/WikiQA-train.tsv --dev $W/data/wikiqa-dev.tsv --variant t+ \
      --k-intra 3 --th-intra 0.5 --k-rows 5 --k-inter 10 --th-inter 0.5 --epochs 50 --threads 1 --out $out > /dev/null
  fi
  $lab eqag-latency --model $out --data $W/data/wikiqa-test.tsv --limit 243 --threads 1 > $W/results/latency.json
  cat $W/results/latency.json
}

# The committed model: T+ over models/minilm-l6-wikiqa with the sweep's setting, seed 1.
model() {
  local g=$(jq -r '.config.graph | "--k-intra \(.k_intra) --th-intra \(.th_intra) --k-rows \(.k_rows) --k-inter \(.k_inter) --th-inter \(.th_inter)"' $W/runs/wikiqa-minilm-l6-wikiqa-t+-sweep/model.json)
  $ansel train --model eqag --base models/minilm-l6-wikiqa --train $W/data/wikiqa-train.tsv --dev $W/data/wikiqa-dev.tsv \
    --base-cache $(cache wikiqa train models/minilm-l6-wikiqa) --base-cache $(cache wikiqa dev models/minilm-l6-wikiqa) \
    --variant t+ $g --seed 1 --threads 1 --name eqag-minilm-l6-wikiqa-tplus --out models/eqag-minilm-l6-wikiqa > /dev/null
  $ansel rank --data examples/sample-questions.jsonl --model models/eqag-minilm-l6-wikiqa | head -1
}

extensions() {
  SKIP_LIVE=1 FIT_ON_DEV=1 run wikiqa models/minilm-l6-wikiqa "--clean"
  SKIP_LIVE=1 FIT_ON_DEV=1 run trecqa models/minilm-l6-tanda "--clean"
  SKIP_LIVE=1 FIT_ON_DEV=1 INTER_BY=answer run wikiqa models/minilm-l6-wikiqa "--clean"
  SKIP_LIVE=1 FIT_ON_DEV=1 INTER_BY=answer run trecqa models/minilm-l6-tanda "--clean"
}

# fusion DATASET SPEC TAG: the plain z-score fusion of the scorers a node-feature variant sees
# (no graph, no training), as a peer row of that variant's table.
fusion() {
  $ansel eval --data $W/data/$1-test.* --clean --model "$2" --json > $W/results/$3-fusion.json
  echo "$2" > $W/results/$3-fusion.spec
}

# Extension: node features [base feature, z(base), z(lexical)] with the GCN fitted on half of dev
# (training nodes' base scores are in-sample, so a GCN fitted there learns to ignore the rest).
# Ablation: the same node features with the GCN fitted on the training nodes (T+ only).
features_wikiqa() {
  SKIP_LIVE=1 FIT_ON_DEV=1 NODE_FEATURES=base,wo-rr run wikiqa models/minilm-l6-wikiqa "--clean"
  fusion wikiqa models/minilm-l6-wikiqa+wo-rr wikiqa-minilm-l6-wikiqa-nf-fod
  SKIP_LIVE=1 VARIANTS=t+ NODE_FEATURES=base,wo-rr run wikiqa models/minilm-l6-wikiqa "--clean"
}
features_trecqa() {
  # TrecQA has no document order (no rr): word overlap alone.
  SKIP_LIVE=1 FIT_ON_DEV=1 NODE_FEATURES=base,wo run trecqa models/minilm-l6-tanda "--clean"
  fusion trecqa models/minilm-l6-tanda+wo trecqa-minilm-l6-tanda-nf-fod
  SKIP_LIVE=1 VARIANTS=t+ NODE_FEATURES=base,wo run trecqa models/minilm-l6-tanda "--clean"
}

# The committed model, node-feature variant: T+ with [base, z(base), z(wo-rr)], fitted on the even
# dev questions, the nf-fod sweep's setting, seed 1. It replaces the paper-faithful T+ model only if
# it is better (MAP) on the odd dev questions (the ones neither was fitted on); both are evaluated there.
model_features() {
  local sweep=$W/runs/wikiqa-minilm-l6-wikiqa-nf-fod-t+-sweep
  local g=$(jq -r '.config.graph | "--k-intra \(.k_intra) --th-intra \(.th_intra) --k-rows \(.k_rows) --k-inter \(.k_inter) --th-inter \(.th_inter)"' $sweep/model.json)
  awk -F'\t' 'NR==1{print;next} !($1 in idx){idx[$1]=n++} idx[$1]%2==1' $W/data/wikiqa-dev.tsv > $W/data/wikiqa-dev-odd.tsv
  local ctrain=$(cache wikiqa train models/minilm-l6-wikiqa) cdev=$(cache wikiqa dev models/minilm-l6-wikiqa)
  local out=$W/runs/model-features
  $ansel train --model eqag --base models/minilm-l6-wikiqa --train $W/data/wikiqa-train.tsv --dev $W/data/wikiqa-dev.tsv \
    --base-cache $ctrain --base-cache $cdev --fit-on-dev --node-features base,wo-rr --vector-cache $W/cache/minilm-vectors-row.bin \
    --variant t+ $g --seed 1 --threads 1 --name eqag-minilm-l6-wikiqa-tplus-nf --out $out > /dev/null
  export ANSEL_EQAG_BASE_CACHE=$cdev ANSEL_EQAG_VECTOR_CACHE=$W/cache/minilm-vectors-row.bin
  $ansel eval --data $W/data/wikiqa-dev-odd.tsv --model models/eqag-minilm-l6-wikiqa --json > $W/results/model-committed-dev-odd.json
  $ansel eval --data $W/data/wikiqa-dev-odd.tsv --model $out --json > $W/results/model-features-dev-odd.json
  if [ "$(jq -s '.[1].MAP > .[0].MAP' $W/results/model-committed-dev-odd.json $W/results/model-features-dev-odd.json)" = true ]; then
    rm -rf models/eqag-minilm-l6-wikiqa.new && cp -r $out models/eqag-minilm-l6-wikiqa.new
    # The card's base and bi-encoder paths are relative to the model directory.
    jq --arg b ../minilm-l6-wikiqa --arg e ../../vendor/models/all-minilm-l6-v2 '.config.base = $b | .config.qq_encoder = $e' \
      $out/model.json > models/eqag-minilm-l6-wikiqa.new/model.json
    rm -rf models/eqag-minilm-l6-wikiqa && mv models/eqag-minilm-l6-wikiqa.new models/eqag-minilm-l6-wikiqa
    echo replaced > $W/results/model-features-decision.txt
  else
    echo kept > $W/results/model-features-decision.txt
  fi
  # WikiQA test through the committed directory, cached base scores and live (no cache): same numbers.
  ANSEL_EQAG_BASE_CACHE=$(cache wikiqa test models/minilm-l6-wikiqa) \
    $ansel eval --data $W/data/wikiqa-test.tsv --clean --model models/eqag-minilm-l6-wikiqa --json > $W/results/model-features-test-cached.json
  unset ANSEL_EQAG_BASE_CACHE ANSEL_EQAG_VECTOR_CACHE
  $ansel eval --data $W/data/wikiqa-test.tsv --clean --model models/eqag-minilm-l6-wikiqa --json > $W/results/model-features-test-live.json
  $ansel rank --data examples/sample-questions.jsonl --model models/eqag-minilm-l6-wikiqa | head -1
}

# Extension: out-of-fold training-node scores. The smaller grid: 36 settings per variant.
OOF_GRID="--sweep-k-intra 1,3,5 --sweep-th-intra 0,0.5 --sweep-k-inter 3,10 --sweep-th-inter 0,0.5,0.9"
oof_compare() {  # DATASET BASE PEER: in sample, then out of fold (same grid, seeds), then the peer
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" run "$1" "$2" "--clean"
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 run "$1" "$2" "--clean"
  fusion "$1" "$3" "$1-$(basename "$2")-peer"
  oof_train_quality "$1" "$2" "$1-$(basename "$2")"
}
# The base's ranking of the graph's training rows: in sample (the base scoring the questions it
# was trained on) against out of fold (the cached scores the `-oof` runs used), both scored by
# `ansel eval-trec` against the same qrels.
oof_train_quality() {  # DATASET BASE TAG
  local dir=$W/trec/$3
  mkdir -p $dir
  $ansel eval --data $W/data/$1-train.* --clean --model "$2" --trec-dir $dir --json > $W/results/$3-train-insample.json
  local scores=$(jq -r .training.hyperparameters.train_scores.cache $W/runs/$3-oof-ta-sweep/model.json)
  jq -r '.id as $q | .scores | to_entries[] | "\($q) Q0 \(.value.id) \(.key + 1) \(.value.score) oof"' "$scores" > $dir/oof.run
  $ansel eval-trec --qrels $dir/qrels.txt --run $dir/oof.run --clean --json > $W/results/$3-train-oof.json
}
oof_wikiqa() {
  # The committed Cosinenet (list-wise + BiRNN, GloVe) trained on all of WikiQA train.
  oof_compare wikiqa models/cosinenet-wikiqa models/cosinenet-wikiqa+wo-rr
}
oof_trecqa() {
  # TrecQA: the graph's training rows are the answered TRAIN-ALL questions, which the base is
  # trained on. RelCNN list-wise without an RNN: the fastest TrecQA configuration of
  # efficient-rankers.md (Cosinenet + BiRNN is 0.8 MAP better there but 4x slower to train,
  # and the out-of-fold scores train it 5 more times).
  [ -s $W/data/trecqaall-train.jsonl ] || zcat $D/trecqa/jsonl/train-all.jsonl.gz | grep '"label": 1' > $W/data/trecqaall-train.jsonl
  cp -n $D/trecqa/jsonl/dev-filtered.jsonl $W/data/trecqaall-dev.jsonl
  cp -n $D/trecqa/jsonl/test-filtered.jsonl $W/data/trecqaall-test.jsonl
  local base=$W/bases/relcnn-trecqa; mkdir -p $W/bases
  [ -s $base/model.json ] || $ansel train --model relcnn --loss listwise --rnn none --seed 1 --threads 1 \
    --train $D/trecqa/jsonl/train-all.jsonl.gz --dev $D/trecqa/jsonl/dev-filtered.jsonl --out $base >&2
  oof_compare trecqaall $base $base+wo
}
oof_features() {
  # The node-feature extension (T+ only): [base, z(base), z(wo-rr)], out of fold and in sample.
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 VARIANTS=t+ NODE_FEATURES=base,wo-rr \
    run wikiqa models/cosinenet-wikiqa "--clean"
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" VARIANTS=t+ NODE_FEATURES=base,wo-rr \
    run wikiqa models/cosinenet-wikiqa "--clean"
}
# Extension: directed inter-row edges (training answers send to a row, never receive), which
# keep T+'s training graph from giving labels away; with out-of-fold scores. Tags get "-dir".
oof_directed() {
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 DIRECTED=1 run wikiqa models/cosinenet-wikiqa "--clean"
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 DIRECTED=1 VARIANTS="t+ t+-" \
    run trecqaall $W/bases/relcnn-trecqa "--clean"
  # ... with the node features too (T+ only).
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 DIRECTED=1 VARIANTS=t+ NODE_FEATURES=base,wo-rr \
    run wikiqa models/cosinenet-wikiqa "--clean"
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 DIRECTED=1 VARIANTS=t+ NODE_FEATURES=base,wo \
    run trecqaall $W/bases/relcnn-trecqa "--clean"
}
oof_features_trecqa() {
  # The same on TrecQA (no document order: word overlap `wo`).
  local base=$W/bases/relcnn-trecqa
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" OOF_FOLDS=5 VARIANTS=t+ NODE_FEATURES=base,wo \
    run trecqaall $base "--clean"
  SKIP_LIVE=1 FEATURE=minmax SWEEP_GRID="$OOF_GRID" VARIANTS=t+ NODE_FEATURES=base,wo \
    run trecqaall $base "--clean"
}

# Cross-encoder bases (`ce*`, docs/results/eqag-cross-encoder.md; work files in target/eqag-ce).
# Bases that never saw the graph's training questions, so the training nodes' scores are out of
# sample without out-of-fold retraining: WikiQA over runs/minilm-trecqa-transfer-all (TANDA step 1
# on TrecQA TRAIN-ALL only; not in the repository: TRANSFER_ALL=DIR), TrecQA over
# models/minilm-l6-wikiqa (WikiQA only); and the paper's in-sample setting, WikiQA over
# models/minilm-l6-tanda-all-2ep. Every split is scored once by the base's ONNX Runtime fp32 export
# (`ansel quantize --precision fp32`: tch's scores to 1e-7, about twice as fast here); the EQAG
# models name the tch base and read those scores as its cache (the loader accepts the caches of an
# fp32 export of the base).
TRANSFER_ALL=${TRANSFER_ALL:-runs/minilm-trecqa-transfer-all}
fp32() {
  local out=$W/fp32/$(basename "$1")-fp32
  [ -s $out/model.json ] || $ansel quantize --model "$1" --out $out --precision fp32 >&2
  echo $out
}
ce_cache() {
  for s in train dev test; do
    cache wikiqa $s $(fp32 $TRANSFER_ALL) > /dev/null
    cache trecqa $s $(fp32 models/minilm-l6-wikiqa) > /dev/null
  done
  for s in train dev test; do cache wikiqa $s $(fp32 models/minilm-l6-tanda-all-2ep) > /dev/null; done
  # TrecQA TRAIN-ALL (answered: 1,229 q, 53,417 pairs) as the graph's training rows.
  trecqaall_data
  for s in train dev test; do cache trecqaall $s $(fp32 models/minilm-l6-wikiqa) > /dev/null; done
}
# TrecQA with TRAIN-ALL's answered questions as the graph's rows (a 9x larger graph than TRAIN's).
ce_trecqaall() {
  trecqaall_data
  SKIP_LIVE=1 ce_run trecqaall models/minilm-l6-wikiqa
  SKIP_LIVE=1 INTER_BY=answer ce_run trecqaall models/minilm-l6-wikiqa
}
trecqaall_data() {
  [ -s $W/data/trecqaall-train.jsonl ] || zcat $D/trecqa/jsonl/train-all.jsonl.gz | grep '"label": 1' > $W/data/trecqaall-train.jsonl
  cp -n $D/trecqa/jsonl/dev-filtered.jsonl $W/data/trecqaall-dev.jsonl
  cp -n $D/trecqa/jsonl/test-filtered.jsonl $W/data/trecqaall-test.jsonl
}
# ce_run DATASET BASE: the dev sweeps (the smaller grid of the oof runs), 3 seeds of each
# variant's chosen setting and the RI row, with undirected (the paper) and directed inter-row
# edges. The base row is the fp32 export's evaluation (tch's scores to 1e-7).
ce_run() {
  local sc=$(fp32 "$2")
  SCORER=$sc SWEEP_GRID="$OOF_GRID" run "$1" "$2" "--clean"
  SCORER=$sc SWEEP_GRID="$OOF_GRID" SKIP_LIVE=1 DIRECTED=1 run "$1" "$2" "--clean"
  ce_train_quality "$1" "$sc" "$1-$(basename "$2")"
}
# Extension: inter-row edges by answer similarity (`--inter-by answer`: each top node gets its own
# training answers, so the inter-row messages can differ between a question's candidates).
ce_answer() {
  SKIP_LIVE=1 INTER_BY=answer ce_run wikiqa $TRANSFER_ALL
  SKIP_LIVE=1 INTER_BY=answer ce_run trecqa models/minilm-l6-wikiqa
}
# The base's ranking of the graph's training rows (the scores the GCN is given), by
# `ansel eval-trec` of the cached scores against the training qrels: out of sample or in sample.
ce_train_quality() {  # DATASET SCORER TAG
  local dir=$W/trec/$3
  mkdir -p $dir
  $ansel eval --data $W/data/$1-train.* --clean --model wo --trec-dir $dir --json > /dev/null
  jq -r '.id as $q | .scores | to_entries[] | "\($q) Q0 \(.value.id) \(.key + 1) \(.value.score) base"' \
    $W/cache/$1-train.$(basename "$2").jsonl > $dir/base.run
  $ansel eval-trec --qrels $dir/qrels.txt --run $dir/base.run --clean --json > $W/results/$3-train-base.json
}

# Extension (`pv*`, docs/results/eqag-pair-vec.md; work files in target/eqag-pv): node features
# that differ per candidate: `pair-vec` ([q*a ; |q-a|] of the MiniLM bi-encoder's unit vectors,
# PCA fitted on the training nodes, whitened) next to [base, z(base), z(lexical)], with
# inter-row edges by answer similarity. Bases as in eqag-features.md, scored once by their fp32
# ONNX Runtime export (tch's scores to 1e-7).
pv_cache() {
  for s in train dev test; do
    cache wikiqa $s $(fp32 models/minilm-l6-wikiqa) > /dev/null
    cache trecqa $s $(fp32 models/minilm-l6-tanda) > /dev/null
  done
}
# pv_run DATASET BASE LEXICAL: the pair-vec variant (tag "-pv"), its control without pair-vec
# (same edges, fitting and grid), and the no-graph peer BASE+LEXICAL. PV_FIT=dev fits the GCN on
# half of dev (as the nf-fod rows of eqag-features.md); anything else, on the training nodes.
PV_GRID="--sweep-k-intra 1,3,5 --sweep-th-intra 0,0.5 --sweep-k-inter 3,10 --sweep-th-inter 0,0.5,0.9"
pv_run() { vec_run pair-vec pv "$@"; }
# vec_run FEATURE TAG DATASET BASE LEXICAL: FEATURE (pair-vec or cls-vec) next to [base, z(base),
# z(LEXICAL)] (tag "-TAG"), the control without it, and the no-graph peer, as pv_run says.
vec_run() {
  local feat=$1 vt=$2; shift 2
  local sc=$(fp32 "$2") fod=; [ "${PV_FIT:-train}" = dev ] && fod=1
  SCORER=$sc SKIP_LIVE=1 FIT_ON_DEV=$fod INTER_BY=answer SWEEP_GRID="$PV_GRID" VARIANTS="${PV_VARIANTS:-t+}" \
    NODE_FEATURES=base,$3,$feat TAG=$vt run "$1" "$2" "--clean"
  [ -n "${SKIP_CONTROL:-}" ] || SCORER=$sc SKIP_LIVE=1 FIT_ON_DEV=$fod INTER_BY=answer SWEEP_GRID="$PV_GRID" \
    VARIANTS="${PV_VARIANTS:-t+}" CLS_CACHE= NODE_FEATURES=base,$3 run "$1" "$2" "--clean"
  fusion "$1" "$2+$3" "$1-$(basename "$2")-answer-nf${fod:+-fod}-$vt"
  cp $W/results/$1-$(basename "$2")-answer-nf${fod:+-fod}-$vt-fusion.json $W/results/$1-$(basename "$2")-answer-nf${fod:+-fod}-fusion.json
}

# Extension (`cv*`, docs/results/eqag-cls-vec.md; work files in target/eqag-cv): `cls-vec`, the
# base cross-encoder's last-layer [CLS] state of each pair (PCA fitted on the training nodes,
# whitened), in place of pair-vec; everything else as `pv*`. The states are computed once per pair
# and cached in $W/cache/cls-states.bin (keyed by the base's card and the pair's tokens).
cv_run() { CLS_CACHE=$W/cache/cls-states.bin vec_run cls-vec cv "$@"; }
# Fewer components (tag "-cv4"): cls-vec:4, T+ on WikiQA; the control and peer are cv_run's.
cv4_run() { CLS_CACHE=$W/cache/cls-states.bin vec_run cls-vec:4 cv4 "$@"; }
# The live path (no caches) of seed 1 of the WikiQA cls-vec model: the cached run's numbers.
cv_live() {
  local tag=wikiqa-minilm-l6-wikiqa-answer-nf$([ "${PV_FIT:-train}" != dev ] || echo -fod)-cv
  ANSEL_EQAG_BASE_CACHE= ANSEL_EQAG_VECTOR_CACHE= ANSEL_EQAG_CLS_CACHE= $ansel eval --data $W/data/wikiqa-test.tsv --clean \
    --model $W/runs/$tag-t+-s1 --json > $W/results/$tag-t+-s1-live.json
}
# Latency with >= 2,000 stored training questions: every WikiQA train question (2,118) as graph
# rows over models/minilm-l6-wikiqa (cls-vec needs a cross-encoder base; its training rows are
# scored once through the fp32 cache), cls-vec and inter-row edges by answer; the base's scoring
# and its [CLS] pass are timed as their own stages.
cv_latency() {
  local out=$W/runs/latency-wikiqa-all-minilm-cv sc=$(fp32 models/minilm-l6-wikiqa)
  [ -s $W/data/wikiqa-train-all.tsv ] || cp $D/wikiqa/WikiQA-train.tsv $W/data/wikiqa-train-all.tsv
  local call=$(cache wikiqa train-all $sc) cdev=$(cache wikiqa dev $sc)
  if [ ! -s $out/model.json ]; then
    $ansel train --model eqag --base models/minilm-l6-wikiqa --all-questions \
      --train $W/data/wikiqa-train-all.tsv --dev $W/data/wikiqa-dev.tsv --variant t+ --inter-by answer \
      --base-cache $call --base-cache $cdev --cls-cache $W/cache/cls-states.bin \
      --node-features base,wo-rr,cls-vec --vector-cache $W/cache/minilm-vectors-latency.bin \
      --k-intra 3 --th-intra 0.5 --k-rows 5 --k-inter 10 --th-inter 0.5 --epochs 50 --threads 1 --out $out > /dev/null
  fi
  $lab eqag-latency --model $out --data $W/data/wikiqa-test.tsv --limit ${CV_LATENCY_LIMIT:-243} --threads 1 > $W/results/latency.json
  cat $W/results/latency.json
}
# The committed-path check: seed 1 of the WikiQA pair-vec model scored live (no caches) gives the
# cached run's numbers, and its graph step stays cheap with 2,000+ stored questions.
pv_live() {
  local tag=wikiqa-minilm-l6-wikiqa-answer-nf$([ "${PV_FIT:-train}" != dev ] || echo -fod)-pv
  ANSEL_EQAG_BASE_CACHE= ANSEL_EQAG_VECTOR_CACHE= $ansel eval --data $W/data/wikiqa-test.tsv --clean \
    --model $W/runs/$tag-t+-s1 --json > $W/results/$tag-t+-s1-live.json
}
# Latency with >= 2,000 stored training questions: every WikiQA train question (2,118), the
# Cosinenet base (as `latency`), pair-vec node features and inter-row edges by answer.
pv_latency() {
  local out=$W/runs/latency-wikiqa-all-cosinenet-pv
  if [ ! -s $out/model.json ]; then
    $ansel train --model eqag --base models/cosinenet-wikiqa --feature minmax --all-questions \
      --train $D/wikiqa/WikiQA-train.tsv --dev $W/data/wikiqa-dev.tsv --variant t+ --inter-by answer \
      --node-features base,wo-rr,pair-vec --vector-cache $W/cache/minilm-vectors-latency.bin \
      --k-intra 3 --th-intra 0.5 --k-rows 5 --k-inter 10 --th-inter 0.5 --epochs 50 --threads 1 --out $out > /dev/null
  fi
  $lab eqag-latency --model $out --data $W/data/wikiqa-test.tsv --limit 243 --threads 1 > $W/results/latency.json
  cat $W/results/latency.json
}

case $step in
  pv-cache) pv_cache ;;
  pv) pv_cache; pv_run wikiqa models/minilm-l6-wikiqa wo-rr; pv_run trecqa models/minilm-l6-tanda wo
      PV_FIT=dev pv_run wikiqa models/minilm-l6-wikiqa wo-rr; PV_FIT=dev pv_run trecqa models/minilm-l6-tanda wo
      PV_VARIANTS="ta t+ t+-" pv_run wikiqa models/minilm-l6-wikiqa wo-rr
      PV_VARIANTS="ta t+ t+-" pv_run trecqa models/minilm-l6-tanda wo
      PV_VARIANTS="ta t+ t+-" pv_run wikiqa $TRANSFER_ALL wo-rr; pv_live; pv_latency ;;
  pv-wikiqa) pv_run wikiqa models/minilm-l6-wikiqa wo-rr ;;
  pv-trecqa) pv_run trecqa models/minilm-l6-tanda wo ;;
  # A base that never saw WikiQA (as eqag-cross-encoder.md): the training nodes' scores are out of sample.
  pv-transfer) pv_run wikiqa $TRANSFER_ALL wo-rr ;;  # PV_VARIANTS as above
  pv-live) pv_live ;;
  pv-latency) pv_latency ;;
  pv-report) ;;
  cv-cache) for s in train dev test; do cache wikiqa $s $(fp32 models/minilm-l6-wikiqa) > /dev/null
              cache trecqa $s $(fp32 models/minilm-l6-tanda) > /dev/null; done ;;
  cv) cv_run wikiqa models/minilm-l6-wikiqa wo-rr; cv_run trecqa models/minilm-l6-tanda wo; cv_live; cv_latency
      PV_VARIANTS="ta t+ t+-" cv_run wikiqa $TRANSFER_ALL wo-rr; PV_FIT=dev cv_run wikiqa models/minilm-l6-wikiqa wo-rr
      PV_VARIANTS="ta t+ t+-" cv_run wikiqa models/minilm-l6-wikiqa wo-rr
      PV_VARIANTS="ta t+ t+-" cv_run trecqa models/minilm-l6-tanda wo; cv4_run wikiqa models/minilm-l6-wikiqa wo-rr ;;
  cv-n4) cv4_run wikiqa models/minilm-l6-wikiqa wo-rr ;;
  cv-wikiqa) cv_run wikiqa models/minilm-l6-wikiqa wo-rr ;;  # PV_FIT and PV_VARIANTS as for pv
  cv-trecqa) cv_run trecqa models/minilm-l6-tanda wo ;;
  # A base that never saw WikiQA: its training nodes' [CLS] states are out of sample.
  cv-transfer) cv_run wikiqa $TRANSFER_ALL wo-rr ;;
  cv-live) cv_live ;;
  cv-latency) cv_latency ;;
  cv-report) ;;
  ce) ce_cache; ce_run wikiqa $TRANSFER_ALL; ce_run trecqa models/minilm-l6-wikiqa
      ce_run wikiqa models/minilm-l6-tanda-all-2ep; ce_answer; ce_trecqaall ;;
  ce-cache) ce_cache ;;
  ce-wikiqa) ce_run wikiqa $TRANSFER_ALL ;;
  ce-trecqa) ce_run trecqa models/minilm-l6-wikiqa ;;
  ce-trecqaall) ce_trecqaall ;;
  ce-insample) ce_run wikiqa models/minilm-l6-tanda-all-2ep ;;
  ce-answer) ce_answer ;;
  ce-report) ;;
  oof) oof_wikiqa; oof_trecqa; oof_features; oof_features_trecqa; oof_directed ;;
  oof-directed) oof_directed ;;
  oof-wikiqa) oof_wikiqa ;;
  oof-trecqa) oof_trecqa ;;
  oof-features) oof_features; oof_features_trecqa ;;
  oof-features-trecqa) oof_features_trecqa ;;
  oof-report) ;;
  oof-quality) oof_train_quality wikiqa models/cosinenet-wikiqa wikiqa-cosinenet-wikiqa
    oof_train_quality trecqaall $W/bases/relcnn-trecqa trecqaall-relcnn-trecqa ;;
  cache) for s in train dev test; do cache wikiqa $s models/minilm-l6-wikiqa; cache trecqa $s models/minilm-l6-tanda; done ;;
  wikiqa) run wikiqa models/minilm-l6-wikiqa "--clean" ;;
  trecqa) run trecqa models/minilm-l6-tanda "--clean" ;;
  latency) latency ;;
  extensions) extensions ;;
  features) features_wikiqa; features_trecqa; model_features ;;
  model-features) model_features ;;
  features-wikiqa) features_wikiqa ;;
  features-trecqa) features_trecqa ;;
  cosinenet) SKIP_LIVE=1 FEATURE=minmax run wikiqa models/cosinenet-wikiqa "--clean" ;;
  # Issue 19: the paper's variants once over the strongest cross-encoder, the MPNet TANDA model.
  mpnet) SKIP_LIVE=1 run wikiqa models/mpnet-base-squad-tanda-int8 "--clean" ;;
  model) model ;;
  report) ;;
  all) run wikiqa models/minilm-l6-wikiqa "--clean"; run trecqa models/minilm-l6-tanda "--clean"; latency; extensions; model; features_wikiqa; features_trecqa; model_features
       SKIP_LIVE=1 FEATURE=minmax run wikiqa models/cosinenet-wikiqa "--clean" ;;
  *) echo "usage: $0 [all|mpnet|cv|cv-cache|cv-wikiqa|cv-trecqa|cv-transfer|cv-n4|cv-live|cv-latency|cv-report|pv|pv-cache|pv-wikiqa|pv-trecqa|pv-transfer|pv-live|pv-latency|pv-report|ce|ce-cache|ce-wikiqa|ce-trecqa|ce-insample|ce-answer|ce-trecqaall|ce-report|oof|oof-wikiqa|oof-trecqa|oof-features|oof-features-trecqa|oof-directed|oof-quality|oof-report|cache|wikiqa|trecqa|latency|extensions|features|features-wikiqa|features-trecqa|model-features|model|cosinenet|report]" >&2; exit 2 ;;
esac
case $step in
  pv-cache) ;;
  pv*) python3 scripts/eqag-report.py $W/results docs/results/eqag-pair-vec.md pv ;;
  cv-cache) ;;
  cv*) python3 scripts/eqag-report.py $W/results docs/results/eqag-cls-vec.md cv ;;
  oof*) python3 scripts/eqag-report.py $W/results docs/results/eqag-oof.md oof ;;
  ce*) python3 scripts/eqag-report.py $W/results docs/results/eqag-cross-encoder.md ce ;;
  features*|model-features) python3 scripts/eqag-report.py $W/results docs/results/eqag-features.md features ;;
  mpnet) python3 scripts/eqag-report.py $W/results docs/results/eqag-mpnet.md mpnet ;;
  *) python3 scripts/eqag-report.py $W/results docs/results/eqag.md ;;
esac
