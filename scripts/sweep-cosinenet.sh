#!/usr/bin/env bash
# A one-seed sweep around the default Cosinenet list-wise + BiRNN settings (issue 4: WikiQA test MAP
# >= 0.756), then the run with the best WikiQA DEV MAP trained with two more seeds and scored on test.
# Each run trains on WikiQA train and keeps the best dev-MAP epoch. Only the dev-chosen configuration
# is scored on WikiQA test (questions with an answer, 243). Runs are kept in target/sweep-cosinenet/
# and reused. Each run records its wall time and the 1-minute load average before and after it (the
# 2-core machine is shared). Writes docs/results/cosinenet-sweep.{md,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}/wikiqa
cargo build --release -q -p ansel
ansel=target/release/ansel
runs=target/sweep-cosinenet
mkdir -p "$runs"
out=docs/results/cosinenet-sweep
# run NAME SEED OPTIONS...: seed 1 trains into $runs/NAME, others into $runs/NAME-sSEED.
run() {
  local name=$1 seed=$2
  shift 2
  local dir=$runs/$name
  [[ $seed == 1 ]] || dir=$runs/$name-s$seed
  if [[ ! -f $dir/model.json ]]; then
    echo "== $name seed $seed" >&2
    local load_before start
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    "$ansel" train --model cosinenet --loss listwise --rnn birnn --threads 1 --seed "$seed" \
      --train "$data/WikiQA-train.tsv" --dev "$data/WikiQA-dev.tsv" --out "$dir" "$@" 2>"$dir.log"
    printf '{"wall_seconds": %.1f, "load_before": %s, "load_after": %s}\n' \
      "$(echo "$(date +%s.%N) - $start" | bc)" "$load_before" "$(cut -d' ' -f1 /proc/loadavg)" >"$dir.meta.json"
  fi
}
# name|options; the first runs (up to spacy ... lr-1e-3) are from before the load was recorded.
sweep=(
  "defaults|"
  "spacy|--vectors spacy"
  "epochs-10|--epochs 10 --patience 3"
  "hidden-300|--hidden 300 --dropout 0.3"
  "lr-1e-3|--lr 0.001 --epochs 8"
  "minilm|--vectors minilm"
  "vocab-100k|--extra-vocab 100000"
  "lr-1e-3-vocab-100k|--lr 0.001 --epochs 8 --extra-vocab 100000"
)
for entry in "${sweep[@]}"; do
  # shellcheck disable=SC2086
  run "${entry%%|*}" 1 ${entry#*|}
done
# The dev-chosen run: the best seed-1 dev MAP; a tie goes to the run listed later. (Runs that differ only
# in --extra-vocab tie exactly: every dev word is in the vocabulary either way, so dev cannot tell them
# apart; the larger vocabulary is listed after its base because it only adds rows for unseen test words.)
best=$(python3 - "$runs" "${sweep[@]}" <<'PY'
import json, sys
runs, names = sys.argv[1], [e.split("|", 1)[0] for e in sys.argv[2:]]
dev = {n: json.load(open(f"{runs}/{n}/model.json"))["training"]["metrics"]["dev MAP"] for n in names}
print([n for n in names if dev[n] == max(dev.values())][-1])
PY
)
for entry in "${sweep[@]}"; do
  [[ ${entry%%|*} == "$best" ]] && options=${entry#*|}
done
echo "== dev chose $best ($options)" >&2
: >"$out.jsonl"
for seed in 1 2 3; do
  # shellcheck disable=SC2086
  run "$best" "$seed" $options
  dir=$runs/$best
  [[ $seed == 1 ]] || dir=$runs/$best-s$seed
  "$ansel" eval --data "$data/WikiQA-test.tsv" --model "$dir" --json >"$dir.eval"
done
# Ablation, not used for choosing: when the chosen run only adds --extra-vocab to another run (they tie on
# dev), that run's seed-1 model on test says what the larger vocabulary changed there.
base=""
if [[ $best == *vocab-100k ]]; then
  base=${best%-vocab-100k}
  [[ $best == vocab-100k ]] && base=defaults
  "$ansel" eval --data "$data/WikiQA-test.tsv" --model "$runs/$base" --json >"$runs/$base.eval"
fi
python3 - "$runs" "$best" "$out.jsonl" "$base" "${sweep[@]}" >"$out.md" <<'PY'
import json, os, statistics, sys
runs, best, jsonl, base, sweep = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def meta(d):
    p = d + ".meta.json"
    return json.load(open(p)) if os.path.exists(p) else {}
def load(m):
    return f"{m['load_before']:.1f} / {m['load_after']:.1f}" if m else "not recorded"
rows = []
print("# Cosinenet list-wise + BiRNN: a one-seed sweep, then the dev-chosen run on 3 seeds\n")
print("Produced by `bash scripts/sweep-cosinenet.sh`. Every run trains on WikiQA train, keeps the epoch with")
print("the best WikiQA dev MAP and is chosen by that dev MAP only; only the chosen configuration is scored on")
print("test. Issue 4's target is a WikiQA test MAP of 0.756 (243 questions with an answer). `train s` is")
print("the training time in the model card (epochs plus dev evaluation), `wall s` the whole command, `load`")
print("the 1-minute load average before / after the run: the 2-core machine is shared by 4 engineers' jobs,")
print("so times are only comparable between runs at a similar load (`minilm` also ran at a load of about")
print("10, before loads were recorded). An earlier version of this table showed test scores for every run;")
print("now only the dev-chosen configuration is scored on test.\n")
print("## Sweep (seed 1, dev only)\n")
print("| run | options | vectors | params | dev MAP | dev MRR | best epoch | train s | wall s | load |")
print("|---|---|---|---|---|---|---|---|---|---|")
for entry in sweep:
    name, options = entry.split("|", 1)
    d = f"{runs}/{name}"
    card = json.load(open(d + "/model.json"))
    t, m = card["training"], meta(d)
    rows.append({"run": name, "seed": 1, "options": options, "dev MAP": t["metrics"]["dev MAP"],
                 "train_seconds": t["train_seconds"], **m})
    print(f"| {name}{' (chosen)' if name == best else ''} | `{options or '(defaults)'}` | {card['config']['vectors']} "
          f"| {int(t['metrics']['trainable parameters']):,} | {t['metrics']['dev MAP']:.4f} | {t['metrics']['dev MRR']:.4f} "
          f"| {t['best_epoch']} | {t['train_seconds']:.0f} | {m.get('wall_seconds', 'n/a')} | {load(m)} |")
print(f"\n## The dev-chosen run `{best}` on WikiQA test, seeds 1-3\n")
print("| seed | dev MAP | test MAP | test MRR | test P@1 | train s | wall s | load |")
print("|---|---|---|---|---|---|---|---|")
chosen = []
for seed in (1, 2, 3):
    d = f"{runs}/{best}" + ("" if seed == 1 else f"-s{seed}")
    t = json.load(open(d + "/model.json"))["training"]
    e, m = json.load(open(d + ".eval")), meta(d)
    chosen.append((t["metrics"]["dev MAP"], e["MAP"], e["MRR"], e["P@1"], t["train_seconds"]))
    rows.append({"run": best, "seed": seed, "dev MAP": t["metrics"]["dev MAP"], "test MAP": e["MAP"],
                 "test MRR": e["MRR"], "test P@1": e["P@1"], "train_seconds": t["train_seconds"], **m})
    print(f"| {seed} | {t['metrics']['dev MAP']:.4f} | {e['MAP']:.4f} | {e['MRR']:.4f} | {e['P@1']:.4f} "
          f"| {t['train_seconds']:.0f} | {m.get('wall_seconds', 'n/a')} | {load(m)} |")
def ms(i):
    v = [c[i] for c in chosen]
    return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"
print(f"| mean ± sd | {ms(0)} | {ms(1)} | {ms(2)} | {ms(3)} | | | |\n")
if base:
    e = json.load(open(f"{runs}/{base}.eval"))
    print(f"Vocabulary ablation (test, seed 1, not used for choosing): `{base}` (10,000 extra GloVe words) "
          f"scores test MAP {e['MAP']:.4f}, MRR {e['MRR']:.4f}, P@1 {e['P@1']:.4f}, against {chosen[0][1]:.4f}, "
          f"{chosen[0][2]:.4f}, {chosen[0][3]:.4f} with 100,000 (same dev MAP: the same training).\n")
    rows.append({"run": base, "seed": 1, "test MAP": e["MAP"], "test MRR": e["MRR"], "test P@1": e["P@1"], "ablation": True})
mean_map = statistics.mean(c[1] for c in chosen)
slowest = max(c[4] for c in chosen)
print(f"Target WikiQA test MAP >= 0.756: {'reached' if mean_map >= 0.756 else 'NOT reached'} (mean {mean_map:.4f}). "
      f"Target training under 60 s: slowest of the 3 seeds {slowest:.0f} s ({'under' if slowest < 60 else 'NOT under'} 60 s, at the load shown).")
print("""
## Reading

- No change beat the defaults' 3-seed test MAP (72.60 ± 0.89 in efficient-rankers.md) by more than a
  seed's spread, and none came near 0.756. Dev MAP differences in the sweep (0.743-0.762) are within
  about one seed standard deviation of dev MAP (1.1 points over 3 seeds), so a one-seed sweep cannot
  rank them reliably.
- Vectors are the thesis' own explanation of the gap: its ch. 6 WikiQA table (point-wise Cosinenet;
  `bonadiman-thesis-structure-for-qa.txt` lines 1691-1692) gives dev / test MAP 71.11 / 61.87 with GloVe
  and 75.70 / 72.79 with ConceptNet Numberbatch 300d, the vectors of its 75.62 row: with GloVe the thesis,
  too, lost 9 points from dev to test. Numberbatch is not available here. Our GloVe 50d point-wise Cosinenet already scores 66.89
  (efficient-rankers.md). spaCy md 300d and MiniLM's static word-piece embeddings (384d, mean over a
  word's pieces) both scored lower dev MAP than GloVe 50d and trained 3-4x slower: neither is
  specialised for word relatedness the way the retrofitted Numberbatch vectors are.
- The dev-test gap is partly a property of the split: [wikiqa-dev-test-gap.md](wikiqa-dev-test-gap.md)
  (more dev questions have their answer in the first sentence; the position-only `rr` loses about as
  much from dev to test; test has several times more words outside the model's vocabulary). Giving test
  words their GloVe rows (`--extra-vocab 100000`) did not raise test MAP (the ablation above).""")
with open(jsonl, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
cat "$out.md"
