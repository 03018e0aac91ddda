#!/usr/bin/env bash
# The committed efficient rankers (models/cosinenet-*, relcnn-*, compare-aggregate-*): their test rows
# and their scoring throughput, with ansel's allocator tuning (the default) and without it
# (ANSEL_MALLOC_DEFAULTS=1, glibc's defaults) in the same run. Writes docs/results/efficient-models.{md,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
# One intra-op thread: on 2 shared cores libtorch's OpenMP workers spin and run several times slower.
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
cargo build --release -q -p ansel
out=docs/results/efficient-models
: >"$out.jsonl"
for dir in models/cosinenet-* models/relcnn-* models/compare-aggregate-*; do
  [[ -f $dir/model.json ]] || continue
  case $dir in
    *trecqa*) test=(--data "$data/trecqa/jsonl/test-filtered.jsonl" --clean) ;;
    *) test=(--data "$data/wikiqa/WikiQA-test.tsv") ;;
  esac
  "$ansel" eval "${test[@]}" --model "$dir" --json >>"$out.jsonl"
  bench=(bench --data "$data/wikiqa/WikiQA-test.tsv" --model "$dir" --repeat 5)
  "$ansel" "${bench[@]}" >>"$out.jsonl"
  ANSEL_MALLOC_DEFAULTS=1 "$ansel" "${bench[@]}" >>"$out.jsonl"
done
sed -i "s#$data#../shared/data#g" "$out.jsonl"
python3 - "$out.jsonl" >"$out.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# Committed efficient rankers\n")
print("Produced by `bash scripts/bench-efficient-models.sh`; raw rows in `efficient-models.jsonl`.")
print("`ansel eval --model models/NAME` reproduces the quality columns; `ansel bench` measures scoring speed on")
print("WikiQA test (6,165 pairs, the whole set scored 5 times after a warm-up pass, one intra-op thread,")
print("`OMP_NUM_THREADS=1`; median of the 5 passes, on the shared 2-core machine).\n")
print("`ansel` tunes glibc's allocator at start-up (`ansel_torch::tune_allocator`: heap blocks up to 256 MB")
print("are kept instead of being mapped and unmapped for every batch); the last column runs the same binary")
print("right after with `ANSEL_MALLOC_DEFAULTS=1` (glibc's defaults), so the ratio is what the tuning buys.\n")
print("| model | test set | questions | MAP | MRR | P@1 | pairs/s (median, default) | pairs/s (glibc defaults) | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for report, tuned, plain in zip(rows[0::3], rows[1::3], rows[2::3]):
    t, p = tuned["median_pairs_per_second"], plain["median_pairs_per_second"]
    print(f"| `{report['model']}` | {report['data'].split('/')[-1]}{' (clean)' if report['filter'] == 'clean' else ''} | {report['questions']} "
          f"| {report['MAP']:.4f} | {report['MRR']:.4f} | {report['P@1']:.4f} | {t:,.0f} | {p:,.0f} | {t / p:.2f}x |")
best = max(r["median_pairs_per_second"] for r in rows[1::3])
print(f"\nIssue 4 target: scoring at >= 10,000 pairs/s with the default settings. Measured: best median {best:,.0f} pairs/s, "
      f"{'reached' if best >= 10000 else 'NOT reached'} on this shared machine.")
PY
cat "$out.md"
