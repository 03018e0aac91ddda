#!/usr/bin/env bash
# The efficient networks on their two scoring backends: the plain-Rust forward pass (native, what
# the light build and wheel run) and libtorch, timed in one process per model (`ansel bench
# --compare-backends`: the two backends' passes alternate, so both see the same machine load).
# Every committed efficient model and the default fusion, on WikiQA test. Writes
# docs/results/efficient-backends.{md,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
# One intra-op thread for libtorch (the native pass is single-threaded): on 2 shared cores
# libtorch's OpenMP workers spin and run several times slower.
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
repeat=${REPEAT:-5}
cargo build --release -q -p ansel
out=docs/results/efficient-backends
: >"$out.jsonl"
specs=()
for dir in models/cosinenet-* models/relcnn-* models/compare-aggregate-*; do
  [[ -f $dir/model.json ]] && specs+=("$dir")
done
specs+=(wo-rr+cosinenet-wikiqa-distilled+compare-aggregate-wikiqa)
for spec in "${specs[@]}"; do
  "$ansel" bench --data "$data/wikiqa/WikiQA-test.tsv" --model "$spec" --repeat "$repeat" \
    --per-question --compare-backends >>"$out.jsonl"
done
sed -i "s#$data#../shared/data#g" "$out.jsonl"
python3 - "$out.jsonl" >"$out.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first = rows[0]
print("# Efficient networks: native forward pass against libtorch\n")
print("Produced by `bash scripts/bench-efficient-backends.sh`; raw rows in `efficient-backends.jsonl`.")
print(f"`ansel bench --compare-backends` loads each model once per backend and alternates their timed passes")
print(f"in one process: WikiQA test ({first['questions']} questions, {first['pairs']:,} pairs), the whole set scored")
print(f"{first['repeats']} times per backend after a warm-up pass (median pass), and each question scored on its own")
print(f"(median over questions and passes: what `rank`, `ask` and `/rerank` do). One thread for both")
print("(`OMP_NUM_THREADS=1`), on the shared 2-core machine. Speed-up: how many times faster native is.\n")
print("| model | native pairs/s | libtorch pairs/s | speed-up | native ms/question | libtorch ms/question | speed-up | load s (native / libtorch) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    n, t = r["backends"]["native"], r["backends"]["libtorch"]
    print(f"| `{r['model']}` | {n['median_pairs_per_second']:,.0f} | {t['median_pairs_per_second']:,.0f} "
          f"| {r['native_over_libtorch_pairs_per_second']:.2f}x | {n['median_ms_per_question']:.2f} "
          f"| {t['median_ms_per_question']:.2f} | {r['libtorch_over_native_ms_per_question']:.2f}x "
          f"| {n['load_seconds']:.2f} / {t['load_seconds']:.2f} |")
print("\nThe default backend is the native one (`ANSEL_EFFICIENT_BACKEND=libtorch` picks the other): a question")
print("scored on its own, as `rank`, `ask` and the server score them, takes less time natively for every model,")
print("and the light build has no other. Whole-set passes, where libtorch batches 256 pairs of many")
print("questions, vary more from pass to pass on a machine shared with a training run (the per-question")
print("medians are the steadier figure). Load times include reading the weights, cold for the backend")
print("loaded first (native), and Cosinenet's word-convolution tables (both backends build them).")
PY
cat "$out.md"
