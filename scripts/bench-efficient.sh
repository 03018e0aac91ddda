#!/usr/bin/env bash
# The efficient rankers (thesis Table 7.3): trains each configuration below with several seeds,
# evaluates WikiQA test (questions with an answer) and TrecQA test-filtered (--clean), and writes
# docs/results/efficient-rankers.{md,jsonl}. Needs ../shared/data and vendor/models (fetch-models.sh).
#   SEEDS="1 2 3"      seeds per configuration
#   ONLY=REGEX         only the runs whose name (set-model-loss-rnn) matches
# Finished runs are kept in target/bench-efficient/ and reused; delete a run's .json to redo it.
set -euo pipefail
cd "$(dirname "$0")/.."
# One intra-op thread: on 2 shared cores libtorch's OpenMP workers spin and run several times slower.
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}
ansel=target/release/ansel
cargo build --release -q -p ansel
runs=target/bench-efficient
mkdir -p "$runs" docs/results
seeds=${SEEDS:-1 2 3}
configs=(
  "wikiqa cosinenet pointwise none"
  "wikiqa cosinenet listwise none"
  "wikiqa cosinenet listwise birnn"
  "wikiqa relcnn listwise birnn"
  "wikiqa compare-aggregate listwise birnn"
  "trecqa cosinenet listwise none"
  "trecqa cosinenet listwise birnn"
  "wikiqa cosinenet listwise rnn"
  "wikiqa relcnn pointwise none"
  "wikiqa compare-aggregate pointwise none"
  "trecqa relcnn listwise none"
  "trecqa compare-aggregate listwise none"
)
for config in "${configs[@]}"; do
  read -r set model loss rnn <<<"$config"
  case $set in
    wikiqa) split=(--train "$data/wikiqa/WikiQA-train.tsv" --dev "$data/wikiqa/WikiQA-dev.tsv")
            test=(--data "$data/wikiqa/WikiQA-test.tsv") ;;
    trecqa) split=(--train "$data/trecqa/jsonl/train-all.jsonl.gz" --dev "$data/trecqa/jsonl/dev-filtered.jsonl")
            test=(--data "$data/trecqa/jsonl/test-filtered.jsonl" --clean) ;;
  esac
  for seed in $seeds; do
    name=$set-$model-$loss-$rnn
    [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
    run=$runs/$name-s$seed
    [[ -f $run.json ]] && continue
    echo "== $name seed $seed" >&2
    "$ansel" train --model "$model" --loss "$loss" --rnn "$rnn" --seed "$seed" --threads 1 "${split[@]}" --out "$run" 2> "$run.log"
    "$ansel" eval "${test[@]}" --model "$run" --json > "$run.eval"
    python3 - "$run" "$set" "$model" "$loss" "$rnn" "$seed" > "$run.json.tmp" <<'PY'
import json, sys
run, data_set, model, loss, rnn, seed = sys.argv[1:]
report = json.load(open(run + ".eval"))
card = json.load(open(run + "/model.json"))
training = card["training"]
print(json.dumps({
    "set": data_set, "model": model, "loss": loss, "rnn": rnn, "seed": int(seed),
    "test_questions": report["questions"], "P@1": report["P@1"], "MAP": report["MAP"], "MRR": report["MRR"],
    "dev MAP": training["metrics"].get("dev MAP"), "best_epoch": training["best_epoch"],
    "epochs": training["epochs_completed"], "parameters": int(training["metrics"]["trainable parameters"]),
    "train_seconds": round(training["train_seconds"], 2), "vocab_size": card["config"]["vocab_size"],
}))
PY
    mv "$run.json.tmp" "$run.json"
  done
done
cat "$runs"/*.json > docs/results/efficient-rankers.jsonl
python3 - docs/results/efficient-rankers.jsonl > docs/results/efficient-rankers.md <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["set"], r["model"], r["loss"], r["rnn"]), []).append(r)
def ms(values, scale=100):
    values = [v * scale for v in values]
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"
print("# Efficient rankers (thesis Table 7.3 on this machine)\n")
print("Produced by `bash scripts/bench-efficient.sh`; one line per trained model in `efficient-rankers.jsonl`.")
print("Mean ± sample standard deviation over seeds (n = seeds). WikiQA: test questions with at least one")
print("answer (243), as in the thesis. TrecQA: trained on TRAIN-ALL, early stopping on dev-filtered, scored on")
print("test-filtered with `--clean` (68 questions). Static GloVe 6B 50d vectors; parameters exclude them.")
print("Training time is the wall-clock time of the epochs and the dev evaluation after each, on a 2-core")
print("CPU shared with other jobs (so noisy): the median over seeds.\n")
for data_set, title in [("wikiqa", "WikiQA test"), ("trecqa", "TrecQA test-filtered (clean)")]:
    print(f"## {title}\n")
    print("| model | loss | RNN | n | MAP | MRR | P@1 | dev MAP | params | train time (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (s, model, loss, rnn), rs in groups.items():
        if s != data_set:
            continue
        print(f"| {model} | {loss} | {rnn} | {len(rs)} | {ms([r['MAP'] for r in rs])} | {ms([r['MRR'] for r in rs])} "
              f"| {ms([r['P@1'] for r in rs])} | {ms([r['dev MAP'] for r in rs])} | {rs[0]['parameters']:,} "
              f"| {statistics.median(r['train_seconds'] for r in rs):.1f} |")
    print()
target = groups.get(("wikiqa", "cosinenet", "listwise", "birnn"))
if target:
    mean_map = statistics.mean(r["MAP"] for r in target)
    slowest = max(r["train_seconds"] for r in target)
    print(f"Issue 4 target, Cosinenet list-wise + BiRNN on WikiQA test: MAP >= 0.756 trained in under 60 s. "
          f"Measured: mean MAP {mean_map:.4f} ({'reached' if mean_map >= 0.756 else 'NOT reached'}), "
          f"slowest training {slowest:.1f} s ({'under' if slowest < 60 else 'NOT under'} 60 s).\n")
print("Thesis, WikiQA test (GPU, Numberbatch 300d): Cosinenet 70.95 ± 0.6 MAP; list-wise 71.22 ± 0.2;")
print("list-wise + RNN 74.78 ± 0.6; list-wise + BiRNN 75.62 ± 0.8 (1.12M parameters, 8.9 s); CA 72.03 ± 1.6.\n")
print("""## Set-up and deviations from the thesis

- Vectors: GloVe 6B 50d (the thesis' best Cosinenet used Numberbatch 300d, not available as a PyPI
  package here). spaCy md 300d is supported (`--vectors spacy`) but scored no better on WikiQA dev in a
  single early trial run (not in this table) with 3x the parameters, so the table uses GloVe.
- Defaults of `ansel train` (all rows): Adam, peak learning rate 2e-3 with 10 % linear warm-up and linear
  decay, batches of about 50 pairs (whole questions), dropout 0.5, 5 epochs, the epoch with the best dev
  MAP kept (the thesis: 3 epochs, no early stopping, list-wise learning rate 2e-4, which under-trained here).
- Cosinenet hidden size 200 (thesis: 100 in ch. 6, 300 in ch. 7; 200 had the best WikiQA dev MAP in a few trial runs, not in this table), and an
  exact-match flag beside each word's cosine relatedness. With an RNN the scorer sees the pair vector
  beside the RNN state (a skip connection). RelCNN: hidden 100, overlap embeddings of size 5; its
  `x_feat` is the share of question content words found in the candidate. Compare-Aggregate: size 150.
- List-wise training leaves out questions without an answer (they have no target distribution).
- TrecQA has no document order: the reader shuffles each question's candidates with a fixed seed, and
  the RNN reads them in that order; the `birnn` row against the `none` row measures what that does.
- Text: ansel's lower-cased word tokens, questions cut at 40 and candidates at 60 tokens.""")
PY
# The committed models: their test rows and scoring throughput.
bash scripts/bench-efficient-models.sh
cat docs/results/efficient-rankers.md
