#!/usr/bin/env bash
# A one-seed sweep around the default Cosinenet list-wise + BiRNN settings (issue 4: WikiQA test MAP
# >= 0.756), then the run with the best WikiQA DEV MAP trained with two more seeds and scored on test.
# Each run trains on WikiQA train and keeps the best dev-MAP epoch. Only the dev-chosen configuration
# is scored on WikiQA test (questions with an answer, 243). Runs are kept in target/sweep-cosinenet/
# and reused; a run whose folder is gone but whose row is in docs/results/cosinenet-sweep.jsonl is
# not trained again (the table shows its recorded numbers). Each run records its wall time and the
# 1-minute load average before and after it (the 2-core machine is shared). Writes
# docs/results/cosinenet-sweep.{md,jsonl}. minilm-encoded runs cache the encoded words in
# target/vector-cache (the first one encodes about 35,000 words, about a minute on one core).
# REPORT_ONLY=1 trains, evaluates and builds nothing: it rewrites docs/results/cosinenet-sweep.{md,jsonl}
# from the recorded rows and whatever run folders, evaluations and caches are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
data=${ANSEL_SHARED_DATA:-../shared/data}/wikiqa
report_only=${REPORT_ONLY:-0}
# live: true unless REPORT_ONLY=1 (then nothing is trained, evaluated or built).
live() { [[ $report_only != 1 ]]; }
if live; then cargo build --release -q -p ansel; fi
ansel=target/release/ansel
runs=target/sweep-cosinenet
mkdir -p "$runs"
out=docs/results/cosinenet-sweep
# Runs recorded in the committed table: "NAME SEED" lines.
recorded=$(python3 - "$out.jsonl" <<'PY'
import json, os, sys
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if not r.get("ablation") and "run" in r:
            print(r["run"], r["seed"])
PY
)
# run NAME SEED OPTIONS...: seed 1 trains into $runs/NAME, others into $runs/NAME-sSEED; on
# $RUN_TRAIN when set, else on WikiQA train.
run() {
  local name=$1 seed=$2
  shift 2
  local dir=$runs/$name
  [[ $seed == 1 ]] || dir=$runs/$name-s$seed
  if live && [[ ! -f $dir/model.json ]] && ! grep -qx "$name $seed" <<<"$recorded"; then
    echo "== $name seed $seed" >&2
    local load_before start
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    "$ansel" train --model cosinenet --loss listwise --rnn birnn --threads 1 --seed "$seed" \
      --train "${RUN_TRAIN:-$data/WikiQA-train.tsv}" --dev "$data/WikiQA-dev.tsv" --out "$dir" "$@" 2>"$dir.log"
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
  # Each word encoded alone by all-MiniLM-L6-v2 (384 d), optionally PCA-reduced, alone or after GloVe.
  "minilm-encoded|--vectors minilm-encoded"
  "minilm-encoded-pca100|--vectors minilm-encoded --vector-dim 100"
  "minilm-encoded-pca50|--vectors minilm-encoded --vector-dim 50"
  "minilm-encoded-pca100-lr-1e-3|--vectors minilm-encoded --vector-dim 100 --lr 0.001 --epochs 8"
  "glove+minilm-encoded-pca25|--vectors glove+minilm-encoded --vector-dim 25"
  "glove+minilm-encoded-pca50|--vectors glove+minilm-encoded --vector-dim 50"
  "glove+minilm-encoded-pca100|--vectors glove+minilm-encoded --vector-dim 100"
  "glove+minilm-encoded-pca50-lr-1e-3|--vectors glove+minilm-encoded --vector-dim 50 --lr 0.001 --epochs 8"
  # One relatedness feature from the GloVe part and one from the MiniLM part.
  "glove+minilm-encoded-pca50-split-relatedness|--vectors glove+minilm-encoded --vector-dim 50 --split-relatedness"
  "glove+minilm-encoded-pca100-split-relatedness|--vectors glove+minilm-encoded --vector-dim 100 --split-relatedness"
  # The thesis' Cosinenet (ch. 7.2): no exact-match flag, no pair vector beside the BiRNN states.
  "thesis-features|--no-exact-match --no-skip"
  "glove+minilm-encoded-pca50-no-skip|--vectors glove+minilm-encoded --vector-dim 50 --no-skip"
  "glove+minilm-encoded-pca50-no-exact-match|--vectors glove+minilm-encoded --vector-dim 50 --no-exact-match"
  "glove+minilm-encoded-pca50-thesis-features|--vectors glove+minilm-encoded --vector-dim 50 --no-exact-match --no-skip"
)
for entry in "${sweep[@]}"; do
  # shellcheck disable=SC2086
  run "${entry%%|*}" 1 ${entry#*|}
done
# The dev-chosen run: the best seed-1 dev MAP; a tie goes to the run listed later. (Runs that differ only
# in --extra-vocab tie exactly: every dev word is in the vocabulary either way, so dev cannot tell them
# apart; the larger vocabulary is listed after its base because it only adds rows for unseen test words.)
best=$(python3 - "$runs" "$out.jsonl" "${sweep[@]}" <<'PY'
import json, os, sys
runs, jsonl, names = sys.argv[1], sys.argv[2], [e.split("|", 1)[0] for e in sys.argv[3:]]
rec = {r["run"]: r for r in map(json.loads, open(jsonl)) if r.get("seed") == 1 and not r.get("ablation") and "run" in r} if os.path.exists(jsonl) else {}
def dev_map(n):
    path = f"{runs}/{n}/model.json"
    return json.load(open(path))["training"]["metrics"]["dev MAP"] if os.path.exists(path) else rec[n]["dev MAP"]
dev = {n: dev_map(n) for n in names}
print([n for n in names if dev[n] == max(dev.values())][-1])
PY
)
for entry in "${sweep[@]}"; do
  [[ ${entry%%|*} == "$best" ]] && options=${entry#*|}
done
echo "== dev chose $best ($options)" >&2
for seed in 1 2 3; do
  # shellcheck disable=SC2086
  run "$best" "$seed" $options
  dir=$runs/$best
  [[ $seed == 1 ]] || dir=$runs/$best-s$seed
  if live && [[ -f $dir/model.json ]]; then
    "$ansel" eval --data "$data/WikiQA-test.tsv" --model "$dir" --json >"$dir.eval"
  fi
done
# Ablation, not used for choosing: when the chosen run only adds --extra-vocab to another run (they tie on
# dev), that run's seed-1 model on test says what the larger vocabulary changed there.
base=""
if [[ $best == *vocab-100k ]]; then
  base=${best%-vocab-100k}
  [[ $best == vocab-100k ]] && base=defaults
  if live; then
    "$ansel" eval --data "$data/WikiQA-test.tsv" --model "$runs/$base" --json >"$runs/$base.eval"
  fi
fi
python3 - "$runs" "$best" "$out.jsonl" "$base" "${sweep[@]}" >"$out.md.tmp" <<'PY'
import json, os, statistics, sys
runs, best, jsonl, base, sweep = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
# Rows recorded earlier, for runs whose folders are gone (seed, run) -> row.
recorded, other = {}, []
if os.path.exists(jsonl):
    for line in open(jsonl):
        r = json.loads(line)
        if "run" not in r:
            other.append(r)  # the distillation part's rows of teachers (scoring, dev checks)
        elif not r.get("ablation"):
            # The chosen run's seed 1 has two rows (sweep and test table): merge them, do not keep the last.
            recorded.setdefault((r["run"], r["seed"]), {}).update(r)
def meta(d):
    p = d + ".meta.json"
    return json.load(open(p)) if os.path.exists(p) else {}
def info(name, seed):
    """The run's numbers: from its folder (card, eval, meta), else from its recorded row."""
    d = f"{runs}/{name}" + ("" if seed == 1 else f"-s{seed}")
    if not os.path.exists(d + "/model.json"):
        r = recorded[(name, seed)]
        m = {k: r[k] for k in ("wall_seconds", "load_before", "load_after") if k in r}
        return {"dev MAP": r["dev MAP"], "dev MRR": r.get("dev MRR"), "vectors": r.get("vectors"),
                "params": r.get("params"), "epoch": r.get("best_epoch"),
                "train_seconds": r["train_seconds"], "meta": m,
                "test": {k: r[f"test {k}"] for k in ("MAP", "MRR", "P@1") if f"test {k}" in r} or None}
    card = json.load(open(d + "/model.json"))
    t = card["training"]
    e = json.load(open(d + ".eval")) if os.path.exists(d + ".eval") else None
    return {"dev MAP": t["metrics"]["dev MAP"], "dev MRR": t["metrics"]["dev MRR"],
            "vectors": card["config"]["vectors"] + (f" pca{card['config']['vector_dim']}" if card["config"].get("vector_dim") else ""),
            "params": int(t["metrics"]["trainable parameters"]), "epoch": t["best_epoch"],
            "train_seconds": t["train_seconds"], "meta": meta(d), "test": e}
def na(v, fmt):
    return "not kept" if v is None else format(v, fmt)
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
print("10, before loads were recorded). Runs whose folders were not kept show the numbers recorded when")
print("they ran (`not kept`: not recorded then). `vectors`: `minilm-encoded` is every word encoded alone by")
print("all-MiniLM-L6-v2 (mean-pooled, unit length), `pcaN` its N principal components over the model's")
print("vocabulary; `glove+minilm-encoded` puts them after the word's GloVe 50d vector.\n")
print("## Sweep (seed 1, dev only)\n")
print("| run | options | vectors | params | dev MAP | dev MRR | best epoch | train s | wall s | load |")
print("|---|---|---|---|---|---|---|---|---|---|")
for entry in sweep:
    name, options = entry.split("|", 1)
    i, m = info(name, 1), None
    m = i["meta"]
    kept = {k: v for k, v in (("dev MRR", i["dev MRR"]), ("params", i["params"]),
                              ("best_epoch", i["epoch"]), ("vectors", i["vectors"])) if v is not None}
    rows.append({"run": name, "seed": 1, "options": options, "dev MAP": i["dev MAP"],
                 "train_seconds": i["train_seconds"], **kept, **m})
    vectors = i["vectors"] or next((o for o in ("spacy", "minilm") if f"--vectors {o}" in options), "glove")
    print(f"| {name}{' (chosen)' if name == best else ''} | `{options or '(defaults)'}` | {vectors} "
          f"| {na(i['params'], ',')} | {i['dev MAP']:.4f} | {na(i['dev MRR'], '.4f')} "
          f"| {na(i['epoch'], '')} | {i['train_seconds']:.0f} | {m.get('wall_seconds', 'n/a')} | {load(m)} |")
def seeds_table(name, title):
    print(f"\n## {title}\n")
    print("| seed | dev MAP | test MAP | test MRR | test P@1 | train s | wall s | load |")
    print("|---|---|---|---|---|---|---|---|")
    out = []
    for seed in (1, 2, 3):
        i = info(name, seed)
        e, m = i["test"], i["meta"]
        out.append((i["dev MAP"], e["MAP"], e["MRR"], e["P@1"], i["train_seconds"]))
        print(f"| {seed} | {i['dev MAP']:.4f} | {e['MAP']:.4f} | {e['MRR']:.4f} | {e['P@1']:.4f} "
              f"| {i['train_seconds']:.0f} | {m.get('wall_seconds', 'n/a')} | {load(m)} |")
        rows.append({"run": name, "seed": seed, "dev MAP": i["dev MAP"], "test MAP": e["MAP"],
                     "test MRR": e["MRR"], "test P@1": e["P@1"], "train_seconds": i["train_seconds"], **m})
    def ms(k):
        v = [c[k] for c in out]
        return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"
    print(f"| mean ± sd | {ms(0)} | {ms(1)} | {ms(2)} | {ms(3)} | | | |\n")
    return out
chosen = seeds_table(best, f"The dev-chosen run `{best}` on WikiQA test, seeds 1-3")
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
# The GloVe-only choice of the first round, for comparison (chosen then by the same rule among the GloVe runs).
earlier = "lr-1e-3-vocab-100k"
earlier_rows = None
if best != earlier and all((earlier, s) in recorded or os.path.exists(f"{runs}/{earlier}" + ("" if s == 1 else f"-s{s}") + ".eval") for s in (1, 2, 3)):
    earlier_rows = seeds_table(earlier, f"For comparison: the first round's (GloVe-only) choice `{earlier}` on WikiQA test")
def dev(name):
    return info(name, 1)["dev MAP"]
names = [e.split("|", 1)[0] for e in sweep]
def span(pred):
    v = [dev(n) for n in names if pred(n)]
    return f"{min(v):.4f}-{max(v):.4f}"
def mean_sd(rs, k):
    v = [r[k] for r in rs]
    return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"
glove_runs = span(lambda n: n in ("defaults", "epochs-10", "hidden-300", "lr-1e-3", "vocab-100k", "lr-1e-3-vocab-100k"))
print(f"""
## Reading

- Round 2 tried word vectors from all-MiniLM-L6-v2 (`minilm-encoded`: each word of the vocabulary encoded
  alone, as a one-word sentence, through the whole sentence encoder, mean-pooled and normalised as
  sentence-transformers embeds a sentence). Alone, at 384 d or reduced to 50 or 100 principal components,
  they scored seed-1 dev MAP {span(lambda n: n.startswith("minilm-encoded"))}, below the GloVe 50d runs
  ({glove_runs}). Beside GloVe (`glove+minilm-encoded`, the MiniLM part reduced to 25, 50 or 100
  components, our features) they scored {span(lambda n: n in ("glove+minilm-encoded-pca25", "glove+minilm-encoded-pca50", "glove+minilm-encoded-pca100"))}.""")
if earlier_rows:
    print(f"""- The dev-chosen `{best}` had the best seed-1 dev MAP of the whole sweep ({chosen[0][0]:.4f}), but its
  seeds 2 and 3 scored {chosen[1][0]:.4f} and {chosen[2][0]:.4f} on dev: the seed-1 number was the luckiest of
  many one-seed draws. On test its 3-seed MAP is {mean_sd([dict(m=c[1]) for c in chosen], "m")}, against
  {mean_sd([dict(m=c[1]) for c in earlier_rows], "m")} for the first round's GloVe-only choice: MiniLM-encoded
  word vectors did not move WikiQA test MAP, and the 0.756 target is not reached.""")
print("""- Seed noise decides a one-seed sweep: one configuration's dev MAP spans more over 3 seeds than most
  differences between configurations here, so the sweep picks lucky seeds (the chosen run's seeds above).
- The thesis' Cosinenet (ch. 7.2) against ours, checked: the thesis feeds each word's largest cosine
  alone; ours adds an exact-match flag beside it (and counts exact matches of content words as relatedness
  1 even without a vector), and with an RNN our scorer also sees the pair vector (a skip connection).
  `--no-exact-match --no-skip` gives the thesis' network (`thesis-features`, and with MiniLM-encoded
  vectors the `-thesis-features`, `-no-skip` and `-no-exact-match` runs): none scored a higher dev MAP
  than the same vectors with our features, so ours stay the default. The other differences, hidden size
  (thesis 300, ours 200) and learning rate / epochs (thesis 2e-4 for 3 epochs), were round 1's
  `hidden-300` and `lr-*` runs.""")
g = "glove+minilm-encoded-pca"
print(f"""- Splitting the relatedness into one feature from the GloVe part and one from the MiniLM part
  (`--split-relatedness`) scored {dev(g + "50-split-relatedness"):.4f} with 50 components (unsplit {dev(g + "50"):.4f}) and
  {dev(g + "100-split-relatedness"):.4f} with 100 (unsplit {dev(g + "100"):.4f}): no consistent gain, within seed noise.""")
print(f"""- Time: 100-d vectors (GloVe + 50 MiniLM components) make the network {info(best, 1)["params"] or 0:,} parameters against
  346,001, and the chosen run's 3 seeds trained in {min(c[4] for c in chosen):.0f}-{max(c[4] for c in chosen):.0f} s at a load of about 10 (two cores shared); GloVe alone took
  17-18 s at a load of about 1 (efficient-rankers.md). Encoding the about 35,000 WikiQA words once takes
  about a minute on one core, cached in `target/vector-cache` for later runs (not in `train s`).""")
print("""- Vectors are the thesis' own explanation of the gap: its ch. 6 WikiQA table (point-wise Cosinenet;
  `bonadiman-thesis-structure-for-qa.txt` lines 1691-1692) gives dev / test MAP 71.11 / 61.87 with GloVe
  and 75.70 / 72.79 with ConceptNet Numberbatch 300d, the vectors of its 75.62 row: with GloVe the thesis,
  too, lost 9 points from dev to test. Numberbatch is not available here. spaCy md 300d, MiniLM's static
  word-piece embeddings and its encoder's word encodings (384 d) each scored lower seed-1 dev MAP than
  GloVe 50d with the same (default) options, and beside GloVe the encodings did not raise test MAP: none
  is retrofitted to a knowledge graph of word relations as Numberbatch is.
- The dev-test gap is partly a property of the split: [wikiqa-dev-test-gap.md](wikiqa-dev-test-gap.md)
  (more dev questions have their answer in the first sentence; the position-only `rr` loses about as
  much from dev to test; test has several times more words outside the model's vocabulary). Giving test
  words their GloVe rows (`--extra-vocab 100000`) did not raise test MAP (round 1).""")
kept = [r for r in recorded.values() if r.get("section") == "distillation"] + other
with open(jsonl, "w") as f:
    for r in rows + kept:
        f.write(json.dumps(r) + "\n")
PY

# ---- Distillation (issue 4, round 3): a new training signal instead of new vectors. The teacher is a
# cross-encoder; its scores of WikiQA train are computed once per teacher and data file and cached in
# target/teacher-scores (not training time: the meta file beside each cache records the one-off scoring
# time). Each setting trains seeds 1 and 2 and is chosen by its MEAN dev MAP; the chosen one and the
# no-teacher baseline (same binary, same load) then train seed 3 and are scored on WikiQA test.
# The out-of-sample teacher runs/minilm-trecqa-transfer-all (TANDA step 1, never saw WikiQA) is not
# committed; its runs are skipped where it is missing (unless recorded), as are the out-of-fold
# teacher's (round 5) where `scripts/oof-teacher.sh` has not run.
t1="--teacher models/minilm-l6-tanda-all-2ep"
# Round 4: in-domain synthetic lists labelled by the teacher alone. The WikiQA TRAIN documents
# (never a dev or test document: a document whose id or title is in dev or test is left out), each
# sentence of a question's candidate list in document order, go through `ansel synth` (rule-based
# cloze wh-questions, BM25 round-trip filter); a question's candidates are its whole document, as in
# WikiQA (--passage-sentences 30). A seeded shuffle then takes 2,000 questions (`-a`) and 3,000
# more (`-b`): 2k trains on a, 5k on a and b. The files are rebuilt byte for byte, so the teacher
# scores cached for them are found again (scored once through the fp32 ONNX export of t1,
# runs/int8/minilm-l6-tanda-all-2ep-fp32: `--teacher` that export with `--extra-train FILE` fills
# the cache; times in the scoring table of the results).
synth=target/synth
synth_set() { # synth_set QUESTION_WORDS: writes $synth/qwN-{a,b}.jsonl unless they are there
  local qw=$1
  live || return 0
  [[ -f $synth/qw$qw-a.jsonl && -f $synth/qw$qw-b.jsonl ]] && return
  mkdir -p "$synth"
  python3 - "$data" "$synth/wikiqa-train-docs.jsonl" <<'PY'
import csv, json, sys
d, out = sys.argv[1], sys.argv[2]
def rows(split):
    with open(f"{d}/WikiQA-{split}.tsv", newline="") as f:
        yield from csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
held = set()
for split in ("dev", "test"):
    for r in rows(split):
        held.update((r["DocumentID"], r["DocumentTitle"]))
docs, left_out = {}, set()
for r in rows("train"):
    if r["DocumentID"] in held or r["DocumentTitle"] in held:
        left_out.add(r["DocumentID"])
        continue
    doc = docs.setdefault(r["DocumentID"], {"title": r["DocumentTitle"], "sentences": {}})
    doc["sentences"][int(r["SentenceID"].rsplit("-", 1)[1])] = r["Sentence"]
with open(out, "w") as f:
    for i, doc in docs.items():
        s = [doc["sentences"][k] for k in sorted(doc["sentences"])]
        f.write(json.dumps({"id": i, "title": doc["title"], "text": "\n\n".join(s)}) + "\n")
print(f"{len(docs)} WikiQA train documents ({len(left_out)} left out: also in dev or test)", file=sys.stderr)
PY
  "$ansel" synth --text "$synth/wikiqa-train-docs.jsonl" --out "$synth/all-qw$qw.jsonl" \
    --passage-sentences 30 --question-words "$qw" >"$synth/all-qw$qw.stats.json"
  python3 - "$synth/all-qw$qw.jsonl" "$synth/qw$qw" <<'PY'
import random, sys
qs = open(sys.argv[1]).readlines()
random.Random(1).shuffle(qs)
open(sys.argv[2] + "-a.jsonl", "w").writelines(qs[:2000])
open(sys.argv[2] + "-b.jsonl", "w").writelines(qs[2000:5000])
PY
}
synth_set 12
t2="--teacher runs/minilm-trecqa-transfer-all"
oof=target/oof-teacher/k2
oof2="--teacher-scores $oof/scores-0.jsonl --teacher-scores $oof/scores-1.jsonl"
distill=(
  "distill-none|"
  "distill-t1-w0.5-t1|$t1 --distill-weight 0.5 --temperature 1"
  "distill-t1-w1-t1|$t1 --distill-weight 1 --temperature 1"
  "distill-t1-w0.5-t2|$t1 --distill-weight 0.5 --temperature 2"
  "distill-t1-w1-t2|$t1 --distill-weight 1 --temperature 2"
  "distill-t1-w0.8-t1|$t1 --distill-weight 0.8 --temperature 1"
  "distill-t1-w0.5-t1-unanswered|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered"
  "distill-t2-w0.5-t1|$t2 --distill-weight 0.5 --temperature 1"
  # Added after the runs above: the two best means together, and more lists labelled by the teacher
  # alone (TrecQA TRAIN-ALL, 1,229 news questions; the reader shuffles their candidates, so the BiRNN
  # does not see TrecQA's positives-first order).
  "distill-t1-w0.8-t1-unanswered|$t1 --distill-weight 0.8 --temperature 1 --distill-unanswered"
  "distill-t1-w0.5-t1-unanswered-trecqa|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --extra-train ${ANSEL_SHARED_DATA:-../shared/data}/trecqa/jsonl/train-all.jsonl.gz"
  # Most distilled runs kept their last epoch (5): do more epochs help?
  "distill-t1-w0.5-t1-unanswered-epochs-8|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --epochs 8"
  # Added in a later session: does the student use a teacher better with more capacity (the thesis'
  # ch. 7 hidden size) or with the second round's vectors (neutral without a teacher)?
  "distill-t1-w0.5-t1-unanswered-hidden-300|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --hidden 300"
  "distill-t1-w0.5-t1-unanswered-glove+minilm-encoded-pca50|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --vectors glove+minilm-encoded --vector-dim 50"
  # Round 4: weight averaging (dev MAP and the saved model use the averaged weights): an EMA of
  # the weights per step (about 430 steps an epoch), or the mean of the last epochs' ends.
  "distill-t1-w0.5-t1-unanswered-ema-0.999|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --ema 0.999"
  "distill-t1-w0.5-t1-unanswered-average-epochs-3|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --average-epochs 3"
  # Round 4: the synthetic lists (above) as extra lists labelled by the teacher alone.
  "distill-t1-w0.5-t1-unanswered-synth-2k|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --extra-train $synth/qw12-a.jsonl"
  "distill-t1-w0.5-t1-unanswered-init-trecqa|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --init $runs/transfer-trecqa-t1-w0.5-t1"
  "distill-t1-w0.5-t1-unanswered-synth-5k|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --extra-train $synth/qw12-a.jsonl --extra-train $synth/qw12-b.jsonl"
  # Round 4, untried settings of the round-3 choice: a sharper teacher (T 0.5), less dropout (the
  # soft targets regularise too), round 1's best schedule (lr 1e-3, 8 epochs), a shorter EMA.
  "distill-t1-w0.5-t0.5-unanswered|$t1 --distill-weight 0.5 --temperature 0.5 --distill-unanswered"
  "distill-t1-w0.5-t1-unanswered-dropout-0.3|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --dropout 0.3"
  "distill-t1-w0.5-t1-unanswered-lr-1e-3|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --lr 0.001 --epochs 8"
  "distill-t1-w0.5-t1-unanswered-ema-0.995|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --ema 0.995"
  # The two best of the above together.
  "distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.995|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995"
  # Around that pair (added after it was scored on test; chosen on dev like every row).
  "distill-t1-w0.5-t1-unanswered-dropout-0.1-ema-0.995|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --dropout 0.1 --ema 0.995"
  "distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.99|$t1 --distill-weight 0.5 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.99"
  "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995|$t1 --distill-weight 0.8 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995"
  # Around the W 0.8 variant (added after it was scored on test): W 1, more capacity, more epochs.
  "distill-t1-w1-t1-unanswered-dropout-0.3-ema-0.995|$t1 --distill-weight 1 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995"
  "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-hidden-300|$t1 --distill-weight 0.8 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995 --hidden 300"
  "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-epochs-8|$t1 --distill-weight 0.8 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995 --epochs 8"
  # Richer vectors under the teacher: spaCy md 300d (below GloVe without a teacher, round 1).
  "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-spacy|$t1 --distill-weight 0.8 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995 --vectors spacy"
  # Round 5: out-of-fold teacher scores. t1 trained on WikiQA train, so its scores there are in
  # sample (train MAP 0.85, against 0.80 on dev). `bash scripts/oof-teacher.sh` (K=2) trains t1's
  # recipe twice, each time without one half of the train questions, and scores that half.
  "distill-oof2-w0.8-t1-unanswered-dropout-0.3-ema-0.995|$oof2 --distill-weight 0.8 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995"
  "distill-oof2-w0.5-t1-unanswered-dropout-0.3-ema-0.995|$oof2 --distill-weight 0.5 --temperature 1 --distill-unanswered --dropout 0.3 --ema 0.995"
)
# Round 4, transfer then adapt: the chosen distillation on TrecQA TRAIN-ALL (teacher t1, whose
# scores of it are cached; early stopping on WikiQA dev), whose weights then start WikiQA runs.
RUN_TRAIN=${ANSEL_SHARED_DATA:-../shared/data}/trecqa/jsonl/train-all.jsonl.gz \
  run transfer-trecqa-t1-w0.5-t1 1 $t1 --distill-weight 0.5 --temperature 1 --distill-unanswered
for seed in 1 2; do
  for entry in "${distill[@]}"; do
    [[ $entry == *"$t2"* && ! -d runs/minilm-trecqa-transfer-all ]] && continue
    [[ $entry == *"$oof2"* && ! -f $oof/scores-1.jsonl ]] && continue
    # shellcheck disable=SC2086
    run "${entry%%|*}" "$seed" ${entry#*|}
  done
done
# Round 4, a stronger teacher? Fusions of t1 (z-scored sums) on WikiQA dev, through t1's fp32 ONNX
# export (same scores, faster); a fusion would be used as a teacher only if it beat t1 there. Skipped
# where the runs/ models are missing (not committed).
teachers=(
  "t1|runs/int8/minilm-l6-tanda-all-2ep-fp32"
  "t1+wo-rr|runs/int8/minilm-l6-tanda-all-2ep-fp32+wo-rr"
  "t1+minilm-tanda-all|runs/int8/minilm-l6-tanda-all-2ep-fp32+runs/minilm-tanda-all"
)
for entry in "${teachers[@]}"; do
  f=$runs/teacher-${entry%%|*}.dev.json
  live || continue
  [[ -f $f || ! -d runs/int8/minilm-l6-tanda-all-2ep-fp32 || ! -d runs/minilm-tanda-all ]] && continue
  "$ansel" eval --model "${entry#*|}" --data "$data/WikiQA-dev.tsv" --json >"$f.tmp" && mv "$f.tmp" "$f"
done
# DEV_ONLY=1: stop after the dev runs (no choice, nothing scored on test).
[[ ${DEV_ONLY:-0} == 1 ]] && exit 0
chosen=$(python3 - "$runs" "$out.jsonl" "${distill[@]}" <<'PY'
import json, os, sys
runs, jsonl, names = sys.argv[1], sys.argv[2], [e.split("|", 1)[0] for e in sys.argv[3:]]
rec = {(r["run"], r["seed"]): r for r in map(json.loads, open(jsonl)) if "run" in r}
def dev(n, seed):
    d = f"{runs}/{n}" + ("" if seed == 1 else f"-s{seed}")
    if os.path.exists(d + "/model.json"):
        return json.load(open(d + "/model.json"))["training"]["metrics"]["dev MAP"]
    return rec[(n, seed)]["dev MAP"] if (n, seed) in rec else None
means = {n: (dev(n, 1) + dev(n, 2)) / 2 for n in names if dev(n, 1) is not None and dev(n, 2) is not None}
print(max(means, key=means.get))
PY
)
echo "== distillation: dev chose $chosen" >&2
for entry in "${distill[@]}"; do
  name=${entry%%|*}
  [[ $name == "$chosen" || $name == distill-none ]] || continue
  for seed in 1 2 3; do
    # shellcheck disable=SC2086
    run "$name" "$seed" ${entry#*|}
    dir=$runs/$name
    [[ $seed == 1 ]] || dir=$runs/$name-s$seed
    if live && [[ -f $dir/model.json && ! -f $dir.eval ]]; then
      "$ansel" eval --data "$data/WikiQA-test.tsv" --model "$dir" --json >"$dir.eval"
    fi
  done
done
python3 - "$runs" "$chosen" "$out.jsonl" "$synth" "${teachers[@]}" -- "${distill[@]}" >>"$out.md.tmp" <<'PY'
import glob, json, os, statistics, sys
runs, chosen, jsonl, synth = sys.argv[1:5]
split = sys.argv.index("--")
teachers, distill = sys.argv[5:split], sys.argv[split + 1:]
all_rows = [json.loads(l) for l in open(jsonl)]
recorded = {(r["run"], r["seed"]): r for r in all_rows if r.get("section") == "distillation"}
def info(name, seed):
    d = f"{runs}/{name}" + ("" if seed == 1 else f"-s{seed}")
    if not os.path.exists(d + "/model.json"):
        return recorded.get((name, seed))
    t = json.load(open(d + "/model.json"))["training"]
    meta = json.load(open(d + ".meta.json")) if os.path.exists(d + ".meta.json") else {}
    r = {"section": "distillation", "run": name, "seed": seed, "dev MAP": t["metrics"]["dev MAP"],
         "best_epoch": t["best_epoch"], "train_seconds": round(t["train_seconds"], 1), **meta}
    if "train cpu seconds" in t["metrics"]:
        r["train_cpu_seconds"] = round(t["metrics"]["train cpu seconds"], 1)
    if os.path.exists(d + ".eval"):
        e = json.load(open(d + ".eval"))
        r.update({"test MAP": e["MAP"], "test MRR": e["MRR"], "test P@1": e["P@1"]})
    return r
rows = []
print("\n## Distillation (round 3: a teacher's scores as targets)\n")
print("Produced by the distillation part of `bash scripts/sweep-cosinenet.sh`. Cosinenet list-wise + BiRNN,")
print("GloVe 50d, default options, plus `--teacher SPEC --distill-weight W --temperature T`: each question's")
print("target distribution is (1-W) * gold + W * softmax(teacher / T). Teachers: `t1` =")
print("models/minilm-l6-tanda-all-2ep (WikiQA test MAP 0.7951; it trained on WikiQA train, so its scores of")
print("train are in-sample), `t2` = runs/minilm-trecqa-transfer-all (TANDA step 1 only, never saw WikiQA, test")
print("MAP 0.689). `-unanswered`: the train questions without an answer are trained on too, with target")
print("W * the teacher's distribution. Each setting ran seeds 1 and 2; the choice is the best MEAN dev MAP.")
print("`train s` counts training only (epochs plus dev evaluation, from the model card); the teacher's one-off")
print("scoring of WikiQA train is not in it (below). `train CPU s`: the CPU time of those epochs (one thread, so")
print("about the wall time on an idle machine; recorded by runs from after it was added). `load`: 1-minute load")
print("average before / after.\n")
print("| run | options | dev MAP seed 1 | dev MAP seed 2 | mean | train s (seeds 1, 2) | load |")
print("|---|---|---|---|---|---|---|")
for entry in distill:
    name, options = entry.split("|", 1)
    i1, i2 = info(name, 1), info(name, 2)
    if i1 is None or i2 is None:
        print(f"| {name} | `{options or '(no teacher)'}` | not run | | | | |")
        continue
    rows += [i1, i2]
    loads = "; ".join(f"{i['load_before']:.1f} / {i['load_after']:.1f}" for i in (i1, i2) if "load_before" in i)
    print(f"| {name}{' (chosen)' if name == chosen else ''} | `{options or '(no teacher)'}` | {i1['dev MAP']:.4f} "
          f"| {i2['dev MAP']:.4f} | {(i1['dev MAP'] + i2['dev MAP']) / 2:.4f} "
          f"| {i1['train_seconds']:.0f}, {i2['train_seconds']:.0f} | {loads or 'not recorded'} |")
def seeds_table(name, title):
    print(f"\n### {title}\n")
    print("| seed | dev MAP | test MAP | test MRR | test P@1 | train s | train CPU s | wall s | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = []
    for seed in (1, 2, 3):
        i = info(name, seed)
        if seed == 3:
            rows.append(i)
        out.append(i)
        load = f"{i['load_before']:.1f} / {i['load_after']:.1f}" if "load_before" in i else "not recorded"
        cpu = f"{i['train_cpu_seconds']:.0f}" if "train_cpu_seconds" in i else "not recorded"
        print(f"| {seed} | {i['dev MAP']:.4f} | {i['test MAP']:.4f} | {i['test MRR']:.4f} | {i['test P@1']:.4f} "
              f"| {i['train_seconds']:.0f} | {cpu} | {i.get('wall_seconds', 'n/a')} | {load} |")
    def ms(k):
        v = [i[k] for i in out]
        return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"
    print(f"| mean ± sd | {ms('dev MAP')} | {ms('test MAP')} | {ms('test MRR')} | {ms('test P@1')} | | | | |")
    return out
best = seeds_table(chosen, f"The dev-chosen `{chosen}` on WikiQA test, seeds 1-3")
# Earlier choices (scored on test when they were chosen) stay beside the current one.
earlier = {"distill-t1-w0.5-t1-unanswered": "round 3's choice",
           "distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.995": "round 4's first choice, before the W 0.8 variant was added",
           "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995": "round 4's second choice, before the last three variants were added"}
for e, what in earlier.items():
    if chosen != e and all(info(e, s) and "test MAP" in info(e, s) for s in (1, 2, 3)):
        seeds_table(e, f"For comparison: {what}, `{e}`, seeds 1-3")
base = seeds_table("distill-none", "The same network without a teacher (`distill-none`), same binary, seeds 1-3")
mean_map = statistics.mean(i["test MAP"] for i in best)
base_map = statistics.mean(i["test MAP"] for i in base)
slowest = max(i["train_seconds"] for i in best)
cpus = [i["train_cpu_seconds"] for i in best if "train_cpu_seconds" in i]
loads = [v for i in best for v in (i.get("load_before"), i.get("load_after")) if v is not None]
print(f"\nTarget WikiQA test MAP >= 0.756: {'reached' if mean_map >= 0.756 else 'NOT reached'} "
      f"(mean {mean_map:.4f}; without a teacher {base_map:.4f}, a change of {mean_map - base_map:+.4f}). "
      f"Target training under 60 s: slowest of the 3 seeds {slowest:.0f} s "
      f"({'under' if slowest < 60 else 'NOT under'} 60 s, at a load of {min(loads):.1f}-{max(loads):.1f}; "
      f"the GloVe network trained in 17-18 s at a load of about 1, efficient-rankers.md)"
      + (f"; the CPU time of training (one thread: the wall time on an idle machine) was at most {max(cpus):.0f} s "
         f"over the {len(cpus)} seed(s) that recorded it." if cpus else ".") + "\n")
means = {}
for entry in distill:
    name = entry.split("|", 1)[0]
    i1, i2 = info(name, 1), info(name, 2)
    if i1 and i2:
        means[name] = (i1["dev MAP"] + i2["dev MAP"]) / 2
none = means.get("distill-none")
t1 = {n: m for n, m in means.items() if n.startswith("distill-t1-") and "trecqa" not in n}
print("Reading:\n")
if none is not None and t1:
    print(f"- Every in-sample-teacher (`t1`) setting on WikiQA train alone had a higher mean dev MAP "
          f"({min(t1.values()):.4f}-{max(t1.values()):.4f}) than the same network without a teacher ({none:.4f})"
          if min(t1.values()) > none else
          f"- In-sample-teacher (`t1`) settings scored mean dev MAP {min(t1.values()):.4f}-{max(t1.values()):.4f}, "
          f"without a teacher {none:.4f}")
    print(f"  (2 seeds each, so differences of about a point between settings are within seed noise).")
if "distill-t2-w0.5-t1" in means and none is not None:
    print(f"- The out-of-sample teacher (`t2`, never saw WikiQA, test MAP 0.689) did not help: mean dev MAP "
          f"{means['distill-t2-w0.5-t1']:.4f} against {none:.4f} without a teacher; the teacher has to be better "
          f"than the student on this data to teach it anything.")
trec = "distill-t1-w0.5-t1-unanswered-trecqa"
if trec in means and "distill-t1-w0.5-t1-unanswered" in means:
    secs = [info(trec, s)["train_seconds"] for s in (1, 2)]
    print(f"- TrecQA TRAIN-ALL as extra lists labelled by the teacher alone (`--extra-train`): mean dev MAP "
          f"{means[trec]:.4f} against {means['distill-t1-w0.5-t1-unanswered']:.4f} without them, and "
          f"{min(secs):.0f}-{max(secs):.0f} s of training: news questions did not help WikiQA here.")
print(f"- Chosen by mean dev MAP: `{chosen}`; its test MAP is {mean_map:.4f} against {base_map:.4f} without a "
      f"teacher (3 seeds each, same binary).\n")
print("One-off teacher scoring (not training time; `ansel rank` through the fp32 ONNX Runtime export of each")
print("teacher, whose scores equal the tch model's, one thread, on the shared machine), from")
print("`target/teacher-scores/*.meta.json`:\n")
print("| teacher | data | questions | pairs | scoring s |")
print("|---|---|---|---|---|")
# The caches here, and those recorded by earlier runs of this script (their files may be gone).
scoring = {r["key"]: r for r in all_rows if r.get("section") == "teacher-scoring"}
for path in glob.glob("target/teacher-scores/*.meta.json"):
    key = os.path.basename(path).split(".")[0]
    scoring[key] = {"section": "teacher-scoring", "key": key, **json.load(open(path))}
for m in sorted(scoring.values(), key=lambda m: m["key"]):
    print(f"| {m['teacher']} | {m['data']} | {m['questions']:,} | {m['pairs']:,} | {m['scoring_seconds']:.0f} |")

print("\n## Round 4: weight averaging, synthetic lists, transfer then adapt, stronger teachers\n")
print(f"All against the round-3 choice `distill-t1-w0.5-t1-unanswered` (mean dev MAP "
      f"{means['distill-t1-w0.5-t1-unanswered']:.4f}; rows in the distillation table above).\n")
base3 = means["distill-t1-w0.5-t1-unanswered"]
def said(name, what):
    if name not in means:
        return f"- {what}: not run."
    i1, i2 = info(name, 1), info(name, 2)
    cpu = [i["train_cpu_seconds"] for i in (i1, i2) if "train_cpu_seconds" in i]
    return (f"- {what} (`{name}`): dev MAP {i1['dev MAP']:.4f} / {i2['dev MAP']:.4f}, mean {means[name]:.4f} "
            f"({means[name] - base3:+.4f})" + (f", training CPU {min(cpu):.0f}-{max(cpu):.0f} s" if cpu else "") + ".")
print(said("distill-t1-w0.5-t1-unanswered-ema-0.999", "EMA of the weights, decay 0.999 per step (`--ema`)"))
print(said("distill-t1-w0.5-t1-unanswered-average-epochs-3", "mean of the last 3 epochs' weights (`--average-epochs 3`)"))
def lines(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else None
docs, a, b = (lines(f"{synth}/{n}.jsonl") for n in ("wikiqa-train-docs", "qw12-a", "qw12-b"))
if docs and a and b:
    print(f"- Synthetic lists: {len(docs):,} WikiQA train documents (those also in dev or test left out) gave "
          f"`ansel synth` cloze questions (question words 12, whole document as the list, BM25 round trip); "
          f"a seeded draw of {len(a):,} ({sum(len(q['candidates']) for q in a):,} pairs) and {len(b):,} more "
          f"({sum(len(q['candidates']) for q in b):,} pairs), labelled by the teacher alone "
          f"(scoring time in the table above, not training time; the two files were scored at the same time, "
          f"one process each, at a load of about 7). Example: \"{a[0]['question']}\"")
    st = f"{synth}/all-qw12.stats.json"
    if os.path.exists(st):
        st = json.load(open(st))
        print(f"  Generation (one-off, not training time): {st['generated']['questions']:,} questions from "
              f"{st['generated']['sentences']:,} sentences, {st['filtered']['kept_questions']:,} kept by the round "
              f"trip, in {st['total_seconds']:.1f} s.")
print("  " + said("distill-t1-w0.5-t1-unanswered-synth-2k", "2,000 synthetic questions")[2:])
print("  " + said("distill-t1-w0.5-t1-unanswered-synth-5k", "5,000 synthetic questions")[2:])
transfer = f"{runs}/transfer-trecqa-t1-w0.5-t1"
tr = info("transfer-trecqa-t1-w0.5-t1", 1)
if tr:
    rows.append(tr)
    print(f"- Transfer then adapt: the round-3 options trained on TrecQA TRAIN-ALL (teacher t1, its "
          f"cached scores; WikiQA dev for early stopping: dev MAP {tr['dev MAP']:.4f} at epoch "
          f"{tr.get('best_epoch')}, {tr['train_seconds']:.0f} s), then `--init` from it on WikiQA:")
    print("  " + said("distill-t1-w0.5-t1-unanswered-init-trecqa", "adapted on WikiQA")[2:])
print(said("distill-t1-w0.5-t0.5-unanswered", "a sharper teacher, T 0.5"))
print(said("distill-t1-w0.5-t1-unanswered-dropout-0.3", "dropout 0.3 instead of 0.5"))
print(said("distill-t1-w0.5-t1-unanswered-lr-1e-3", "lr 1e-3 for 8 epochs (round 1's best schedule)"))
print(said("distill-t1-w0.5-t1-unanswered-ema-0.995", "a shorter EMA, decay 0.995 (about 200 steps)"))
print(said("distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.995", "dropout 0.3 and EMA 0.995 together"))
print(said("distill-t1-w0.5-t1-unanswered-dropout-0.1-ema-0.995", "dropout 0.1 and EMA 0.995"))
print(said("distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.99", "dropout 0.3 and EMA 0.99"))
print(said("distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995", "W 0.8, dropout 0.3 and EMA 0.995"))
print(said("distill-t1-w1-t1-unanswered-dropout-0.3-ema-0.995", "W 1, dropout 0.3 and EMA 0.995"))
print(said("distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-hidden-300", "the W 0.8 variant with hidden 300"))
print(said("distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-epochs-8", "the W 0.8 variant for 8 epochs"))
done = [(e.split("|")[0], json.load(open(f"{runs}/teacher-{e.split('|')[0]}.dev.json")))
        for e in teachers if os.path.exists(f"{runs}/teacher-{e.split('|')[0]}.dev.json")]
recorded_t = {r["teacher"]: r for r in all_rows if r.get("section") == "teacher-dev"}
for name, e in done:
    recorded_t[name] = {"section": "teacher-dev", "teacher": name, "spec": e["model"], "dev MAP": e["MAP"],
                        "dev MRR": e["MRR"], "dev P@1": e["P@1"]}
if recorded_t:
    print("- Stronger teachers: fusions of t1 on WikiQA dev (`ansel eval`; a fusion would replace t1 only "
          "if better on dev):\n")
    print("  | teacher | spec | dev MAP | dev MRR | dev P@1 |")
    print("  |---|---|---|---|---|")
    for r in recorded_t.values():
        print(f"  | {r['teacher']} | `{r['spec']}` | {r['dev MAP']:.4f} | {r['dev MRR']:.4f} | {r['dev P@1']:.4f} |")
    print()
r3 = "distill-t1-w0.5-t1-unanswered"
if chosen != r3 and all(info(r3, s) and "test MAP" in info(r3, s) for s in (1, 2, 3)):
    r3_test = [info(r3, s)["test MAP"] for s in (1, 2, 3)]
    print(f"Reading: the synthetic cloze lists hurt more the more of them there were (their questions are "
          f"rarely WikiQA-like: see the example), TrecQA transfer and weight averaging alone moved dev MAP "
          f"by less than seed noise, and no fusion beat t1 on dev, so t1 stays the teacher. The dev choice "
          f"`{chosen}` scores WikiQA test MAP {mean_map:.4f} ± {statistics.stdev(i['test MAP'] for i in best):.4f} "
          f"against {statistics.mean(r3_test):.4f} ± {statistics.stdev(r3_test):.4f} for round 3's choice "
          f"(3 seeds each): {'' if mean_map > statistics.mean(r3_test) else 'no '}gain, "
          f"{'and still short of' if mean_map < 0.756 else 'reaching'} the 0.756 target. Many settings were "
          f"compared on 2 seeds each, so the chosen one's dev mean is likely optimistic (its seed 3: "
          f"{best[2]['dev MAP']:.4f}).\n")
    print()
# Recorded runs not in a table this time (an earlier choice's seed 3) keep their rows.
emitted = {(r["run"], r["seed"]) for r in rows}
rows += [r for k, r in recorded.items() if k not in emitted]
with open(jsonl, "w") as f:
    keep = ("distillation", "teacher-scoring", "teacher-dev")
    for r in [r for r in all_rows if r.get("section") not in keep] + rows + list(scoring.values()) + list(recorded_t.values()):
        f.write(json.dumps(r) + "\n")
PY
mv "$out.md.tmp" "$out.md"
cat "$out.md"
