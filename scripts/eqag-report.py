#!/usr/bin/env python3
"""Writes docs/results/eqag.md from the files scripts/bench-eqag.sh leaves in target/eqag/results.

    python3 scripts/eqag-report.py RESULTS OUT            # everything (docs/results/eqag.md)
    python3 scripts/eqag-report.py RESULTS OUT features   # the node-feature extension only
                                                          # (docs/results/eqag-features.md)
    python3 scripts/eqag-report.py RESULTS OUT oof        # out-of-fold training-node scores
                                                          # (docs/results/eqag-oof.md)
    python3 scripts/eqag-report.py RESULTS OUT ce         # cross-encoder bases, out of sample
                                                          # (docs/results/eqag-cross-encoder.md)
    python3 scripts/eqag-report.py RESULTS OUT pv         # pair-vec node features
                                                          # (docs/results/eqag-pair-vec.md)
    python3 scripts/eqag-report.py RESULTS OUT cv         # cls-vec node features (the base
                                                          # cross-encoder's [CLS] states;
                                                          # docs/results/eqag-cls-vec.md)
"""
import glob
import json
import os
import statistics
import sys

from reportlib import read_jsonl

res, out = sys.argv[1], sys.argv[2]
only_features = len(sys.argv) > 3 and sys.argv[3] == "features"
only_oof = len(sys.argv) > 3 and sys.argv[3] == "oof"
only_ce = len(sys.argv) > 3 and sys.argv[3] == "ce"
# The vector node-feature reports (pv: pair-vec, cv: cls-vec): the same tables, each its own
# feature, run-tag suffix and wording.
VEC = {
    "pv": {"suffix": "-pv", "feat": "pair-vec", "plural": "Pair vectors", "things": "pair vectors",
           "page": "eqag-pair-vec.md", "work": "target/eqag-pv", "title": "pair-vector node features"},
    "cv": {"suffix": "-cv", "feat": "cls-vec", "plural": "[CLS] states", "things": "[CLS] states",
           "page": "eqag-cls-vec.md", "work": "target/eqag-cv", "title": "the cross-encoder's [CLS]-state node features"},
}
mode = sys.argv[3] if len(sys.argv) > 3 else ""
only_pv = mode in VEC
vec = VEC.get(mode, VEC["pv"])
runs = os.path.join(os.path.dirname(res.rstrip("/")), "runs")


def load(path):
    with open(path) as f:
        return json.loads(f.read().strip().splitlines()[0])


def fmt(xs):
    if len(xs) == 1:
        return f"{xs[0]:.4f}"
    return f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}"


def ok(p):
    return os.path.exists(p) and os.path.getsize(p) > 0


def seeds(tag, v):
    """The test metrics of every seed of variant `v` of run `tag`."""
    return [load(p) for p in sorted(glob.glob(os.path.join(res, f"{tag}-{v}-s[0-9].json"))) if os.path.getsize(p) > 0]


def seed_cells(rs, b):
    """Seeds, P@1, MAP, MRR (mean ± std) and the mean's gains over the base `b`: a table row's last cells."""
    p1, mp, mr = [r["P@1"] for r in rs], [r["MAP"] for r in rs], [r["MRR"] for r in rs]
    return (f"{len(rs)} | {fmt(p1)} | {fmt(mp)} | {fmt(mr)} | "
            f"{statistics.mean(p1) - b['P@1']:+.4f} | {statistics.mean(mp) - b['MAP']:+.4f} |")


def base_section(tag, title, base, about, first_column):
    """The base's test metrics and the head of its data set's section: title, description and the
    results table down to the base's row ((None, []) when the base was not evaluated)."""
    bpath = os.path.join(res, f"{tag}-base.json")
    if not ok(bpath):
        return None, []
    b = load(bpath)
    return b, [f"## {title}: base `{base}`", "", about + ".", "",
               f"| {first_column} | model | seeds | P@1 | MAP | MRR | ΔP@1 vs base | ΔMAP vs base |",
               "|---|---|---|---|---|---|---|---|",
               f"| – | base alone | – | {b['P@1']:.4f} | {b['MAP']:.4f} | {b['MRR']:.4f} | | |"]


def sweeps(tag, suffixes):
    """Each dev sweep of `tag` (a run suffix of `suffixes` x a graph variant) that ran: (suffix, variant name, its
    lines, the chosen line: the best dev MAP)."""
    for suffix in suffixes:
        for v, name in VARIANTS[:3]:
            sp = os.path.join(res, f"sweep-{tag}{suffix}-{v}.jsonl")
            if ok(sp):
                rows = read_jsonl(sp)
                yield suffix, name, rows, max(rows, key=lambda r: r["dev MAP"])


def oof_report():
    """docs/results/eqag-oof.md: in-sample against out-of-fold training-node scores."""
    sets = [
        ("wikiqa-cosinenet-wikiqa", "WikiQA test (clean, 237 q)", "models/cosinenet-wikiqa",
         "Cosinenet list-wise + BiRNN (GloVe), trained on WikiQA train; graph rows: the 873 answered train questions"),
        ("trecqaall-relcnn-trecqa", "TrecQA test-filtered (clean, 68 q)", "target/eqag-oof/bases/relcnn-trecqa",
         "RelCNN list-wise, no RNN (GloVe), trained on TrecQA TRAIN-ALL (seed 1); graph rows: the answered TRAIN-ALL questions"),
    ]
    kinds = [("", "in-sample training-node scores (the paper's way)"), ("-oof", "out-of-fold training-node scores (extension)"),
             ("-nf", "in-sample + node features [base, z(base), z(lexical)] (extension)"),
             ("-nf-oof", "out-of-fold + node features [base, z(base), z(lexical)] (extension)"),
             ("-oof-dir", "out-of-fold + directed inter-row edges (extension)"),
             ("-nf-oof-dir", "out-of-fold + directed inter-row edges + node features [base, z(base), z(lexical)] (extension)")]

    lines = ["# EQAG-GNN with out-of-fold training-node scores (issue #7, extension)", ""]
    lines += [
        "Produced by `bash scripts/bench-eqag.sh oof` (this file: `python3 scripts/eqag-report.py target/eqag-oof/results "
        "docs/results/eqag-oof.md oof`). **Extension, not the paper.** In eqag.md the training nodes' feature is the base "
        "ranker's score of pairs it was trained on (in sample, close to the labels) while an unseen question's is out of "
        "sample, so the GCN learns from a feature distribution it never sees at test time. Here (`ansel train --model eqag "
        "--oof-folds 5`) the graph's training questions are dealt into 5 folds (by question, fold seed 42) and each fold is "
        "scored by the base's family retrained on the other folds with the base's own recorded recipe (its model.json: "
        "architecture, loss, RNN, vectors, sizes, epochs, learning rate, batch, seed; early stopping on the same dev set); "
        "the stored model still scores unseen questions with the full base ranker. Base rankers are efficient ones (seconds "
        "to minutes to train on one thread), not the cross-encoders of eqag.md. Node feature: min-max of the base scores "
        "within the question (list-wise scores are not probabilities). Graph and GCN as in eqag.md (K_rows 5, MiniLM "
        "question similarity, 2-layer GCN with root weight, 8 hidden, Adam 0.01, early stopping on dev MAP); sweep grid "
        "K_intra {1, 3, 5} x th_intra {0, 0.5} x K_inter {3, 10} x th_inter {0, 0.5, 0.9} (36 settings per variant, seed 42, "
        "best dev MAP); test rows: seeds 1, 2, 3 of the chosen setting (mean ± sample std). The peer row is the plain "
        "z-score fusion of the base with a lexical ranker (`ansel eval --model BASE+wo-rr`; TrecQA has no document order, "
        "so `wo`), with no graph and no training. The node-feature rows (extension of eqag-features.md) give each node "
        "[base feature, z(base), z(lexical)] (`--node-features base,wo-rr` on WikiQA, `base,wo` on TrecQA), T+ only.",
        "",
    ]
    targets = []
    body = []
    for tag, title, base, about in sets:
        b, head = base_section(tag, title, base, about, "training-node scores")
        if b is None:
            continue
        body += head
        peer = os.path.join(res, f"{tag}-peer-fusion.json")
        fu = load(peer) if ok(peer) else None
        if fu:
            body.append(f"| – | peer, no graph: `{fu['model']}` (z-score fusion) | – | {fu['P@1']:.4f} | {fu['MAP']:.4f} | {fu['MRR']:.4f} | "
                        f"{fu['P@1'] - b['P@1']:+.4f} | {fu['MAP'] - b['MAP']:+.4f} |")
        for suffix, kname in kinds:
            t = tag + suffix
            best = None
            for v, name in VARIANTS:
                rs = seeds(t, v)
                if not rs:
                    continue
                body.append(f"| {kname} | {name} | {seed_cells(rs, b)}")
                p1, mp = statistics.mean(r["P@1"] for r in rs), statistics.mean(r["MAP"] for r in rs)
                if v != "ri" and (best is None or p1 > best[1]):
                    best = (name, p1, mp)
            dev_best = None
            for v, name in VARIANTS[:3]:
                sp = os.path.join(res, f"sweep-{t}-{v}.jsonl")
                rs = seeds(t, v)
                if ok(sp) and rs:
                    dm_ = max(json.loads(l)["dev MAP"] for l in open(sp) if l.strip())
                    if dev_best is None or dm_ > dev_best[0]:
                        dev_best = (dm_, name, statistics.mean(r["P@1"] for r in rs), statistics.mean(r["MAP"] for r in rs))
            if best:
                dp, dm = best[1] - b["P@1"], best[2] - b["MAP"]
                targets.append(f"| {title} | {kname} | best on test: {best[0]} | {dp:+.4f} | {dm:+.4f} | {'met' if dp >= 0.03 and dm >= 0 else 'not met'} |")
                if dev_best:
                    dp, dm = dev_best[2] - b["P@1"], dev_best[3] - b["MAP"]
                    targets.append(f"| | | picked on dev: {dev_best[1]} | {dp:+.4f} | {dm:+.4f} | {'met' if dp >= 0.03 and dm >= 0 else 'not met'} |")
                if fu and "nf" in suffix:
                    gp, gm = best[1] - fu["P@1"], best[2] - fu["MAP"]
                    targets.append(f"| | | {best[0]} against the no-graph peer `{fu['model']}` | {gp:+.4f} | {gm:+.4f} | (what the graph adds) |")
        # How the training rows look to the GCN: the base's ranking of them, in sample vs out of fold.
        ins, oo = os.path.join(res, f"{tag}-train-insample.json"), os.path.join(res, f"{tag}-train-oof.json")
        if ok(ins) and ok(oo):
            i, o = load(ins), load(oo)
            body += ["", "The base's ranking of the graph's training questions (clean; `ansel eval-trec` of the scores the GCN "
                     "was given) against its test ranking:", "",
                     "| scores | questions | P@1 | MAP | MRR |", "|---|---|---|---|---|",
                     f"| training rows, in sample (full base) | {i['questions']} | {i['P@1']:.4f} | {i['MAP']:.4f} | {i['MRR']:.4f} |",
                     f"| training rows, out of fold (5 fold rankers) | {o['questions']} | {o['P@1']:.4f} | {o['MAP']:.4f} | {o['MRR']:.4f} |",
                     f"| test (full base) | {b['questions']} | {b['P@1']:.4f} | {b['MAP']:.4f} | {b['MRR']:.4f} |"]
        card = os.path.join(runs, f"{tag}-oof-ta-sweep", "model.json")
        if ok(card):
            ts = json.load(open(card))["training"]["hyperparameters"].get("train_scores", {})
            folds = ts.get("fold_rankers") or []
            if folds:
                body += ["", "Fold rankers (trained when the out-of-fold scores were first computed; later runs read the cache):", "",
                         "| fold | questions trained on | dev MAP | best epoch | seconds |", "|---|---|---|---|---|"]
                for f in folds:
                    body.append(f"| {f['fold'] + 1} | {f['trained_on']} | {f['dev_map']:.4f} | {f['best_epoch']} | {f['seconds']:.1f} |")
        body += ["", "### Dev sweeps (seed 42; K_rows = 5): chosen settings", "",
                 "| training-node scores | variant | K_intra | th_intra | K_inter | th_inter | training edges | dev P@1 | dev MAP | base dev MAP |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for suffix, name, rows, r in sweeps(tag, [s for s, _ in kinds]):
            body.append(f"| {dict(kinds)[suffix]} | {name} | {r['k_intra']} | {r['th_intra']:.2f} | {r['k_inter']} | {r['th_inter']:.2f} | "
                        f"{r['edges']} | {r['dev P@1']:.4f} | {r['dev MAP']:.4f} | {r['base dev MAP']:.4f} |")
        body += ["", f"Every sweep line: `target/eqag-oof/results/sweep-{tag}[-oof]-VARIANT.jsonl`.", ""]
    def directed_note():
        parts = []
        pairs = (("-oof", "-oof-dir", ""), ("-nf-oof", "-nf-oof-dir", " with node features"))
        for (und, dirc, what), (tag, title, base, about) in [(p, t) for p in pairs for t in sets]:
            for v, name in VARIANTS[:3]:
                a, d = seeds(f"{tag}{und}", v), seeds(f"{tag}{dirc}", v)
                if a and d:
                    parts.append(f"{title.split(' test')[0]} {name}{what}: test P@1 {statistics.mean(r['P@1'] for r in d):.4f} directed "
                                 f"against {statistics.mean(r['P@1'] for r in a):.4f} undirected (MAP "
                                 f"{statistics.mean(r['MAP'] for r in d):.4f} against {statistics.mean(r['MAP'] for r in a):.4f})")
        if not parts:
            return "Its runs are not in this file."
        return "Out of fold, 3 seeds each: " + "; ".join(parts) + "."

    # What the numbers say, computed from the same files.
    notes = []
    for tag, title, base, about in sets:
        ins, oo, bp = (os.path.join(res, f"{tag}-{x}.json") for x in ("train-insample", "train-oof", "base"))
        if ok(ins) and ok(oo) and ok(bp):
            i, o, b = load(ins), load(oo), load(bp)
            notes.append(f"{title.split(' test')[0]}: training rows in sample MAP {i['MAP']:.3f} / P@1 {i['P@1']:.3f}, "
                         f"out of fold {o['MAP']:.3f} / {o['P@1']:.3f}, test {b['MAP']:.3f} / {b['P@1']:.3f}")
    gains = []
    for tag, title, base, about in sets:
        for _, _, _, r in sweeps(tag, ("", "-oof", "-oof-dir")):
            gains.append(100 * (r["dev MAP"] - r["base dev MAP"]))
    collapsed = []
    for tag, title, base, about in sets:
        for suffix in ("", "-oof", "-nf", "-nf-oof", "-oof-dir", "-nf-oof-dir"):
            for v, name in VARIANTS[:3]:
                n_bad = 0
                rs = sorted(glob.glob(os.path.join(runs, f"{tag}{suffix}-{v}-s[0-9]", "model.json")))
                for p in rs:
                    m = json.load(open(p))["training"]["metrics"]
                    if m.get("dev MAP", 1) < m.get("base dev MAP", 0) - 0.1:
                        n_bad += 1
                if n_bad:
                    collapsed.append(f"{title.split(' test')[0]} {name}{' ' + suffix[1:] if suffix else ' in-sample'}: {n_bad} of {len(rs)} seeds")
    body += [
        "## What this shows",
        "",
        "- The out-of-fold scores remove the shift they were built to remove: the base ranks its own training questions "
        "far better in sample than out of fold, and the out-of-fold ranking is close to its test ranking ("
        + "; ".join(notes) + "). On TrecQA the out-of-fold ranking is still better than test's (TRAIN-ALL is not "
        "distributed like test-filtered, and each fold ranker still saw 80% of it).",
        "- They do not make EQAG beat its base: with the base score as the one node feature, no variant on either data set "
        "gains test P@1, in sample or out of fold (targets table), and the settings the dev sweeps choose are at most "
        f"{max(gains) if gains else float('nan'):.2f} dev MAP points above the base. The target is not met for these bases.",
        "- Seeds whose GCN ended more than 0.1 dev MAP below the base (their best evaluation): "
        + ("; ".join(collapsed) if collapsed else "none") + ". Likely cause, from the graph's definition "
        "(`training_graph` in crates/ansel-graph/src/graph.rs): T+ inter-row edges reach only stored positives and are "
        "undirected, so inside the training graph a positive node receives edges from the top nodes of every training "
        "question that has its question among its nearest ones, while a negative receives none — a training node's "
        "neighbourhood gives its label away, and an unseen question's nodes never receive such edges. With in-sample "
        "features a node's own score already predicts its label and the GCN has no need for that shortcut; with "
        "out-of-fold features (noisier) it can fit the training loss through it, and that fails on dev and test. TA "
        "(inter-row targets chosen by score) and T+- (negatives receive edges too) give labels away less and do not collapse. "
        "`--directed-inter` (extension) removes the shortcut: training answers send to a row's top nodes and receive "
        "nothing from other rows (test: `directed_inter_edges_keep_labels_out_of_the_training_graph`). "
        + directed_note(),
        "- What the graph adds over the no-graph peer: for the node-feature variants the peer (the z-score fusion of the "
        "same scorers) is the fair comparison (targets table: '... against the no-graph peer'); for the one-feature "
        "variants the no-graph counterpart is the base itself. On these efficient bases the lexical fusion peer is "
        "itself below the base.",
        "- Scope: efficient bases (Cosinenet, RelCNN), not the cross-encoders of eqag.md: retraining a cross-encoder 5 times "
        "does not fit this machine (`--oof-folds` refuses it and points to `--train-scores FILE`). TrecQA uses RelCNN "
        "list-wise without RNN, the fastest efficient TrecQA configuration, not the best (Cosinenet + BiRNN).",
        "",
    ]
    head = ["## Targets", "",
            "Target: EQAG (best variant) gains >= 3 P@1 points over its base on test without lowering MAP. 'best on test' is "
            "the variant with the best mean test P@1 (the issue's wording); 'picked on dev' is the variant whose sweep had "
            "the best dev MAP, a choice that does not look at test.", "",
            "| data | training-node scores | variant | ΔP@1 | ΔMAP | target |", "|---|---|---|---|---|---|"] + targets + [""]
    with open(out, "w") as f:
        f.write("\n".join(lines + head + body) + "\n")
    print(f"wrote {out}")


def ce_report():
    """docs/results/eqag-cross-encoder.md: cross-encoder bases whose training-row scores are out of sample."""
    sets = [
        ("wikiqa-minilm-trecqa-transfer-all", "WikiQA test (clean, 237 q)", "runs/minilm-trecqa-transfer-all",
         "out of sample: TANDA step 1 only (one epoch on TrecQA TRAIN-ALL), never saw WikiQA; not in the repository; "
         "graph rows: the 873 answered WikiQA train questions (8,672 pairs)"),
        ("trecqa-minilm-l6-wikiqa", "TrecQA test-filtered (68 q), graph rows from TRAIN", "models/minilm-l6-wikiqa",
         "out of sample: fine-tuned on WikiQA only, never saw TrecQA; graph rows: the 94 answered TRAIN questions (5,919 pairs)"),
        ("trecqaall-minilm-l6-wikiqa", "TrecQA test-filtered (68 q), graph rows from TRAIN-ALL", "models/minilm-l6-wikiqa",
         "out of sample: as above; graph rows: the 1,229 answered TRAIN-ALL questions (53,417 pairs)"),
        ("wikiqa-minilm-l6-tanda-all-2ep", "WikiQA test (clean, 237 q)", "models/minilm-l6-tanda-all-2ep",
         "in sample (the paper's setting, for comparison): full TANDA, two epochs on WikiQA train, so its scores of the "
         "graph's training rows are of pairs it was fine-tuned on; graph rows: the 873 answered WikiQA train questions"),
    ]
    kinds = [("", "undirected inter-row edges (the paper)"), ("-dir", "directed inter-row edges (`--directed-inter`, extension)"),
             ("-answer", "undirected, by answer similarity (`--inter-by answer`, extension)"),
             ("-answer-dir", "directed, by answer similarity (extensions)")]

    def met(dp, dm):
        return "met" if dp >= 0.03 - 1e-9 and dm >= 0 else "not met"

    lines = ["# EQAG-GNN over cross-encoders that never saw the graph's training questions (issue #7)", "",
             "Produced by `bash scripts/bench-eqag.sh ce` (this file: `python3 scripts/eqag-report.py target/eqag-ce/results "
             "docs/results/eqag-cross-encoder.md ce`; work files in target/eqag-ce). The paper's EQAG sits on a TANDA "
             "cross-encoder whose scores of the graph's training questions are in sample (it was fine-tuned on them), so "
             "the GCN is fitted on node features that look unlike an unseen question's. Here the bases never saw the "
             "graph's training questions: WikiQA over `runs/minilm-trecqa-transfer-all` (TrecQA only), TrecQA over "
             "`models/minilm-l6-wikiqa` (WikiQA only); the in-sample paper setting (WikiQA over the best cross-encoder, "
             "`models/minilm-l6-tanda-all-2ep`) is run for comparison. Every split is scored once by the base's ONNX "
             "Runtime fp32 export (`ansel quantize --precision fp32`, tch's scores to 1e-7) and cached; the EQAG models "
             "name the tch base, whose loader accepts the caches of its fp32 export, so training, dev and test node "
             "scores all come from the same base. Node feature: the base's probability (sigmoid of its logit). Graph and "
             "GCN as in eqag.md (K_rows 5, pretrained all-MiniLM-L6-v2 question similarity, 2-layer GCN with root weight, "
             "8 hidden, Adam 0.01, BCE on training nodes, up to 200 epochs, early stopping on dev MAP). Sweep grid (per "
             "variant, seed 42, best dev MAP): K_intra {1, 3, 5} x th_intra {0, 0.5} x K_inter {3, 10} x th_inter "
             "{0, 0.5, 0.9}, with undirected inter-row edges (the paper) and with `--directed-inter` (extension: training "
             "answers send to a row, never receive, so T+'s training graph does not give labels away). Extension rows "
             "'by answer similarity' (`--inter-by answer`) join each top node to the training answers most similar to its "
             "own answer (MiniLM bi-encoder), so that a question's candidates get different inter-row neighbours; with "
             "the paper's row edges every top node of a row is joined to the same training answers. Test rows: seeds "
             "1, 2, 3 of each chosen setting (mean ± sample std); RI: random node features on the chosen T+ graph. The "
             "cards' `train_scores: in-sample` means the base's own scores of the training rows (no out-of-fold "
             "scores), which for these bases are out of sample.", ""]
    targets, body = [], []
    for tag, title, base, about in sets:
        b, head = base_section(tag, title, base, about, "inter-row edges")
        if b is None:
            continue
        body += head
        for suffix, kname in kinds:
            t = tag + suffix
            best, dev_best = None, None
            for v, name in VARIANTS:
                rs = seeds(t, v)
                if not rs:
                    continue
                body.append(f"| {kname} | {name} | {seed_cells(rs, b)}")
                if v == "ri":
                    continue
                p1, mp = statistics.mean(r["P@1"] for r in rs), statistics.mean(r["MAP"] for r in rs)
                if best is None or p1 > best[1]:
                    best = (name, p1, mp)
                sp = os.path.join(res, f"sweep-{t}-{v}.jsonl")
                if ok(sp):
                    dm_ = max(json.loads(l)["dev MAP"] for l in open(sp) if l.strip())
                    if dev_best is None or dm_ > dev_best[0]:
                        dev_best = (dm_, name, p1, mp)
            if best:
                dp, dm = best[1] - b["P@1"], best[2] - b["MAP"]
                targets.append(f"| {title}, base `{base}` ({about.split(':')[0].split(' (')[0]}) | {kname} | best on test: {best[0]} | {dp:+.4f} | {dm:+.4f} | {met(dp, dm)} |")
            if dev_best:
                dp, dm = dev_best[2] - b["P@1"], dev_best[3] - b["MAP"]
                targets.append(f"| | | picked on dev: {dev_best[1]} | {dp:+.4f} | {dm:+.4f} | {met(dp, dm)} |")
        live, cached = os.path.join(res, f"{tag}-t+-s1-live.json"), os.path.join(res, f"{tag}-t+-s1.json")
        if ok(live) and ok(cached):
            a, c = load(live), load(cached)
            same = all(abs(a[k] - c[k]) < 1e-9 for k in ("P@1", "MAP", "MRR"))
            body += ["", f"Live check: `ansel eval` of undirected T+ seed 1 with the tch base scored live (no cache): P@1 "
                     f"{a['P@1']:.4f}, MAP {a['MAP']:.4f}, MRR {a['MRR']:.4f} ({'identical to' if same else 'DIFFERENT from'} "
                     "the run on the fp32 export's cached scores)."]
        tq = os.path.join(res, f"{tag}-train-base.json")
        if ok(tq):
            q = load(tq)
            body += ["", "The base's ranking of the graph's training rows (the scores the GCN is fitted on; `ansel eval-trec` "
                     "of the cached scores, clean) against dev and test:", "",
                     "| scores | questions | P@1 | MAP | MRR |", "|---|---|---|---|---|",
                     f"| training rows | {q['questions']} | {q['P@1']:.4f} | {q['MAP']:.4f} | {q['MRR']:.4f} |"]
            sp = os.path.join(res, f"sweep-{tag}-ta.jsonl")
            if ok(sp):
                r0 = json.loads(open(sp).readline())
                body.append(f"| dev | – | {r0['base dev P@1']:.4f} | {r0['base dev MAP']:.4f} | – |")
            body.append(f"| test | {b['questions']} | {b['P@1']:.4f} | {b['MAP']:.4f} | {b['MRR']:.4f} |")
        body += ["", "### Dev sweeps (seed 42; K_rows = 5): chosen settings", "",
                 "| inter-row edges | variant | K_intra | th_intra | K_inter | th_inter | training edges | best epoch | dev P@1 | dev MAP | base dev P@1 | base dev MAP | settings above base dev MAP |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for suffix, name, rows, r in sweeps(tag, [s for s, _ in kinds]):
            above = sum(1 for x in rows if x["dev MAP"] > x["base dev MAP"] + 1e-9)
            body.append(f"| {dict(kinds)[suffix]} | {name} | {r['k_intra']} | {r['th_intra']:.2f} | {r['k_inter']} | {r['th_inter']:.2f} | "
                        f"{r['edges']} | {r['best_epoch']} | {r['dev P@1']:.4f} | {r['dev MAP']:.4f} | {r['base dev P@1']:.4f} | "
                        f"{r['base dev MAP']:.4f} | {above} of {len(rows)} |")
        body += ["", f"Every sweep line: `target/eqag-ce/results/sweep-{tag}[-dir]-VARIANT.jsonl`.", ""]
    # What the numbers say, computed from the same files.
    same_p1, rows_all, dev_gains, quality, collapsed, best_gain, answer_best = 0, 0, [], [], [], None, []
    for tag, title, base, about in sets:
        bpath = os.path.join(res, f"{tag}-base.json")
        if not ok(bpath):
            continue
        b = load(bpath)
        short = f"{title.split(' test')[0]}{' (TRAIN-ALL rows)' if 'TRAIN-ALL' in title else ''} over `{base}`"
        tq = os.path.join(res, f"{tag}-train-base.json")
        if ok(tq):
            q = load(tq)
            quality.append(f"{short} ({about.split(':')[0].split(' (')[0]}): training rows MAP {q['MAP']:.3f} / P@1 {q['P@1']:.3f}, "
                           f"test {b['MAP']:.3f} / {b['P@1']:.3f}")
        for suffix, kname in kinds:
            for v, name in VARIANTS[:3]:
                rs = seeds(tag + suffix, v)
                if rs and suffix in ("", "-dir"):
                    rows_all += 1
                    same_p1 += all(abs(r["P@1"] - b["P@1"]) < 1e-9 for r in rs)
                if rs:
                    g = statistics.mean(r["P@1"] for r in rs) - b["P@1"]
                    if best_gain is None or g > best_gain[0]:
                        best_gain = (g, f"{short}, {name}, {kname}", statistics.mean(r["MAP"] for r in rs) - b["MAP"])
                sp = os.path.join(res, f"sweep-{tag}{suffix}-{v}.jsonl")
                if ok(sp) and suffix in ("", "-dir"):
                    r = max((json.loads(l) for l in open(sp) if l.strip()), key=lambda r: r["dev MAP"])
                    dev_gains.append(100 * (r["dev MAP"] - r["base dev MAP"]))
                bad = []
                for n, r in enumerate(rs, 1):
                    card = os.path.join(runs, f"{tag}{suffix}-{v}-s{n}", "model.json")
                    if r["P@1"] < b["P@1"] - 0.1 and ok(card):
                        m = json.load(open(card))["training"]["metrics"]
                        bad.append(f"seed {n}: test P@1 {r['P@1']:.3f}, dev MAP {100 * (m['dev MAP'] - m['base dev MAP']):+.1f} points vs base")
                if bad:
                    collapsed.append(f"{short}, {name}, {kname} ({'; '.join(bad)})")
        ab = [(statistics.mean(r["P@1"] for r in seeds(tag + sf, v)) - b["P@1"], name)
              for sf in ("-answer", "-answer-dir") for v, name in VARIANTS[:3] if seeds(tag + sf, v)]
        if ab:
            answer_best.append(f"{short} {100 * max(ab)[0]:+.1f} points ({max(ab)[1]})")
    any_met = any(t.endswith("| met |") for t in targets)
    ins = [(abs(statistics.mean(r[k] for r in seeds("wikiqa-minilm-l6-tanda-all-2ep" + sf, v)) - load(os.path.join(res, "wikiqa-minilm-l6-tanda-all-2ep-base.json"))[k]), k)
           for sf in ("", "-dir") for v, _ in VARIANTS[:3] for k in ("P@1", "MAP") if seeds("wikiqa-minilm-l6-tanda-all-2ep" + sf, v)]
    insample = ("largest |Δ| of a variant's mean over the base: P@1 " + f"{100 * max((d for d, k in ins if k == 'P@1'), default=0):.2f}"
                + f" points, MAP {100 * max((d for d, k in ins if k == 'MAP'), default=0):.2f} points") if ins else "not run"
    notes = ["## What this shows", ""]
    if quality:
        notes.append("- Out-of-sample bases do what they were chosen for: the base ranks the graph's training rows no better "
                     "than test (the GCN is fitted on features that look like an unseen question's), unlike the in-sample "
                     "setting: " + "; ".join(quality) + ".")
    if rows_all:
        notes.append(f"- They do not make EQAG beat its base. With the paper's row edges (undirected or directed), {same_p1} of "
                     f"{rows_all} variant rows have every seed's test P@1 exactly equal to the base's; the settings the dev "
                     f"sweeps choose are at most {max(dev_gains):.2f} dev MAP points above the base"
                     + (f"; the best mean test P@1 gain of any row is {100 * best_gain[0]:+.1f} points ({best_gain[1]}; "
                        f"MAP {100 * best_gain[2]:+.2f})" if best_gain else "") + ". "
                     + ("The target is met by a row of the targets table." if any_met else "The target is not met on either data set."))
    notes += [
        "- Why the top answer does not move (from the graph's definition, `row_edges` in crates/ansel-graph/src/graph.rs): "
        "with the paper's row edges every top node of a question is joined to the same training answers, and the top "
        "nodes form a clique, so the neighbourhood a GCN layer averages is nearly the same for all of a question's top "
        "candidates; what separates them is their own feature, the base score, and the fitted GCN keeps its order. "
        "The inter-row context can shift a whole question's scores, which changes nothing in its ranking. Answer-"
        "similarity edges (extension) give each candidate its own training neighbours; best mean test ΔP@1 of their "
        "rows: " + ("; ".join(answer_best) if answer_best else "not run") + ".",
        "- The in-sample paper setting (the best cross-encoder, `minilm-l6-tanda-all-2ep`): its graph rows are ranked "
        "better than test (first bullet), and EQAG stays on the base: " + insample + ".",
        "- Seeds whose test P@1 fell more than 10 points below the base's (the fitted GCN reorders a question's "
        "candidates against its own feature; dev MAP, which chose the epoch, moved much less): "
        + (", ".join(collapsed) if collapsed else "none") + ".",
        "- No model is committed: " + ("the target is not met, and " if not any_met else "") + "the WikiQA base that keeps "
        "the training rows out of sample (`runs/minilm-trecqa-transfer-all`) is not in the repository.",
        "",
    ]
    head = ["## Targets", "",
            "Target: EQAG (best variant) gains >= 3 P@1 points over its base on test without lowering MAP (WikiQA) and "
            ">= 3 P@1 points on TrecQA test-filtered ('met' below also asks that MAP does not drop on TrecQA). 'best on test' is the variant with the best mean test P@1 over 3 seeds "
            "(the issue's wording); 'picked on dev' is the variant whose sweep had the best dev MAP, a choice that does not "
            "look at test.", "",
            "| data and base | inter-row edges | variant | ΔP@1 | ΔMAP | target |", "|---|---|---|---|---|---|"] + targets + [""]
    ct = os.path.join(res, "cache-times.jsonl")
    tail = []
    if ok(ct):
        tail += ["## Base-score caching (wall seconds of `ansel rank` with the fp32 export, 1 thread, shared 2-core machine)", "",
                 "| data | scorer | seconds |", "|---|---|---|"]
        for l in open(ct):
            if l.strip():
                r = json.loads(l)
                tail.append(f"| {r['data']} | {r['base']} | {r['seconds']} |")
        tail.append("")
    with open(out, "w") as f:
        f.write("\n".join(lines + head + body + notes + tail) + "\n")
    print(f"wrote {out}")


DATASETS = [
    ("wikiqa-minilm-l6-wikiqa", "WikiQA test (clean, 237 q)", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda", "TrecQA test-filtered (68 q)", "models/minilm-l6-tanda"),
    ("wikiqa-minilm-l6-wikiqa-answer", "WikiQA test (clean, 237 q), extension: inter-row edges by answer similarity", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda-answer", "TrecQA test-filtered (68 q), extension: inter-row edges by answer similarity", "models/minilm-l6-tanda"),
    ("wikiqa-cosinenet-wikiqa", "WikiQA test (clean, 237 q), a second base: Cosinenet (node feature: min-max of its scores per question)", "models/cosinenet-wikiqa"),
    ("wikiqa-minilm-l6-wikiqa-fod", "WikiQA test (clean, 237 q), extension: GCN fitted on half of dev", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda-fod", "TrecQA test-filtered (68 q), extension: GCN fitted on half of dev", "models/minilm-l6-tanda"),
    ("wikiqa-minilm-l6-wikiqa-answer-fod", "WikiQA test (clean, 237 q), extensions: answer-similarity edges + GCN fitted on half of dev", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda-answer-fod", "TrecQA test-filtered (68 q), extensions: answer-similarity edges + GCN fitted on half of dev", "models/minilm-l6-tanda"),
    ("wikiqa-minilm-l6-wikiqa-nf", "WikiQA test (clean, 237 q), extension: node features [base, z(base), z(wo-rr)], GCN fitted on the training nodes (ablation, T+ only)", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda-nf", "TrecQA test-filtered (68 q), extension: node features [base, z(base), z(wo)], GCN fitted on the training nodes (ablation, T+ only)", "models/minilm-l6-tanda"),
    ("wikiqa-minilm-l6-wikiqa-nf-fod", "WikiQA test (clean, 237 q), extensions: node features [base, z(base), z(wo-rr)] + GCN fitted on half of dev", "models/minilm-l6-wikiqa"),
    ("trecqa-minilm-l6-tanda-nf-fod", "TrecQA test-filtered (68 q), extensions: node features [base, z(base), z(wo)] + GCN fitted on half of dev", "models/minilm-l6-tanda"),
]
if only_features:
    DATASETS = [d for d in DATASETS if "-nf" in d[0]]
only_mpnet = mode == "mpnet"
if only_mpnet:
    DATASETS = [("wikiqa-mpnet-base-squad-tanda-int8", "WikiQA test (clean, 237 q)", "models/mpnet-base-squad-tanda-int8")]
PV_WHAT = "node features [base, z(base), z({lex}), " + vec["feat"] + " (16 PCA components)], inter-row edges by answer similarity"
PV_CONTROL = "control: the same without " + vec["feat"] + ", node features [base, z(base), z({lex})], inter-row edges by answer similarity"
if only_pv:
    DATASETS = []
    for fod, fit in (("", "GCN fitted on the training nodes"), ("-fod", "GCN fitted on half of dev")):
        for ds, title, base, lex in (("wikiqa", "WikiQA test (clean, 237 q)", "models/minilm-l6-wikiqa", "wo-rr"),
                                     ("trecqa", "TrecQA test-filtered (68 q)", "models/minilm-l6-tanda", "wo")):
            tag = f"{ds}-{os.path.basename(base)}-answer-nf{fod}"
            DATASETS.append((tag + vec["suffix"], f"{title}, extension: {PV_WHAT.format(lex=lex)}, {fit}", base))
            DATASETS.append((tag, f"{title}, {PV_CONTROL.format(lex=lex)}, {fit}", base))
    if mode == "cv":
        # Fewer components: cls-vec:4 (tag "-cv4"), T+ on WikiQA; its control is the cls-vec run's.
        DATASETS.append(("wikiqa-minilm-l6-wikiqa-answer-nf-cv4", "WikiQA test (clean, 237 q), extension: "
                         + PV_WHAT.format(lex="wo-rr").replace("16 PCA", "4 PCA").replace("cls-vec (", "cls-vec:4 (")
                         + ", GCN fitted on the training nodes", "models/minilm-l6-wikiqa"))
    t = "wikiqa-minilm-trecqa-transfer-all-answer-nf"
    for tag, what in ((t + vec["suffix"], "extension: " + PV_WHAT), (t, PV_CONTROL)):
        DATASETS.append((tag, f"WikiQA test (clean, 237 q), base out of sample (never saw WikiQA), {what.format(lex='wo-rr')}, "
                              "GCN fitted on the training nodes", "runs/minilm-trecqa-transfer-all"))
VARIANTS = [("ta", "EQAG TA"), ("t+", "EQAG T+"), ("t+-", "EQAG T+-"), ("ri", "EQAG RI (random features, T+ graph)")]
if only_oof:
    oof_report()
    sys.exit(0)
if only_ce:
    ce_report()
    sys.exit(0)

lines = ["# EQAG-GNN over the cross-encoders (issue #7)" + (": extra node features (extension)" if only_features else "")
         + (f": {vec['title']} (extension)" if only_pv else "")
         + (": over the MPNet TANDA cross-encoder" if only_mpnet else ""), ""]
targets = []  # filled per data set, printed after the intro
if mode == "cv":
    lines += [
        "Produced by `bash scripts/bench-eqag.sh cv` (this file: `python3 scripts/eqag-report.py target/eqag-cv/results "
        "docs/results/eqag-cls-vec.md cv`; work files in target/eqag-cv). **Extension, not the paper** (the paper's node "
        "has one scalar feature, the base's score). As [eqag-pair-vec.md](eqag-pair-vec.md), with the base cross-encoder's "
        "own view of each pair in place of the bi-encoder pair vector: each node also gets `cls-vec`, the last layer's "
        "[CLS] hidden state of `[CLS] q [SEP] a [SEP]` in the base cross-encoder (384 values for MiniLM-L6; the vector its "
        "classification head reads through the pooler), projected on the first 16 principal axes of the training nodes' "
        "states and whitened (`ansel train --model eqag --node-features base,wo-rr,cls-vec --cls-cache FILE`; the PCA "
        "reads no labels and is stored in the model directory as `cls-pca.json`; the states of every pair are computed "
        "once and cached, keyed by the base's card and the pair's tokens; TrecQA has no document order, so `wo` there). "
        "Inter-row edges by answer similarity (`--inter-by answer`). The control rows are the same runs without "
        "`cls-vec` (same grid, seeds and edges); the peer row is the plain z-score fusion of the base and the lexical "
        "scorer (no graph, no training). Base scores: each split scored once by the base's ONNX Runtime fp32 export "
        "(the base row is that export's evaluation). Graph and GCN as in eqag.md (K_rows 5, 2-layer GCN with root "
        "weight, 8 hidden, Adam 0.01, BCE on the training nodes, up to 200 epochs, early stopping on dev MAP); sweep "
        "grid of eqag-pair-vec.md (36 settings: K_intra {1, 3, 5} x th_intra {0, 0.5} x K_inter {3, 10} x th_inter "
        "{0, 0.5, 0.9}, seed 42, best dev MAP), for T+, and for TA and T+- where the tables list them; test rows: seeds "
        "1, 2, 3 of the chosen setting (mean ± sample std). The `-fod` sections fit the GCN on the even dev questions "
        "(out-of-sample states and scores) and choose on the odd ones. The sections over `runs/minilm-trecqa-transfer-all` "
        "(TANDA step 1 on TrecQA only, never saw WikiQA; not in the repository) give the training nodes out-of-sample "
        "[CLS] states and scores. The `cls-vec:4` section keeps 4 components instead of 16 (T+ on WikiQA only; its "
        "control is the 16-component run's). Settings missing below were not run in this session.",
        "",
    ]
elif only_pv:
    lines += [
        "Produced by `bash scripts/bench-eqag.sh pv` (this file: `python3 scripts/eqag-report.py target/eqag-pv/results "
        "docs/results/eqag-pair-vec.md pv`; work files in target/eqag-pv). **Extension, not the paper.** With the paper's "
        "scalar node feature, or with [base, z(base), z(lexical)] ([eqag-features.md](eqag-features.md)), a question's top "
        "candidates get nearly the same neighbours and the GCN can only rescale. Here each node also gets `pair-vec`: the "
        "pair vector [q*a ; |q-a|] of the pretrained all-MiniLM-L6-v2 unit vectors of the question and the candidate "
        "(768 values), projected on the first 16 principal axes of the training nodes' pair vectors and whitened "
        "(`ansel train --model eqag --node-features base,wo-rr,pair-vec`; the PCA reads no labels and is stored in the "
        "model directory as `pair-pca.json`; TrecQA has no document order, so `wo` there). Inter-row edges join each top "
        "node to the training answers most similar to its own answer (`--inter-by answer`), so that neighbours differ per "
        "candidate. The control rows are the same runs without `pair-vec`; the peer row is the plain z-score fusion of the "
        "base and the lexical scorer (no graph, no training). Bases as in eqag-features.md, each split scored once by the "
        "base's ONNX Runtime fp32 export (tch's scores to 1e-7; the base row is that export's evaluation). Graph and GCN "
        "as in eqag.md (K_rows 5, 2-layer GCN with root weight, 8 hidden, Adam 0.01, BCE, up to 200 epochs, early stopping "
        "on dev MAP); sweep grid of eqag-oof.md / eqag-cross-encoder.md (36 settings: K_intra {1, 3, 5} x th_intra {0, 0.5} "
        "x K_inter {3, 10} x th_inter {0, 0.5, 0.9}, seed 42, best dev MAP), for T+, and for TA and T+- too where the GCN "
        "is fitted on the training nodes (the `-fod` runs have T+ only: the time this session had); test rows: seeds "
        "1, 2, 3 of the chosen setting (mean ± sample std). The last two sections use a base that never saw WikiQA "
        "(`runs/minilm-trecqa-transfer-all`, TANDA step 1 on TrecQA only, as in eqag-cross-encoder.md; not in the "
        "repository), so that the training nodes' base scores are out of sample and cannot stand in for the labels.",
        "",
    ]
elif only_mpnet:
    lines += [
        "Produced by `bash scripts/bench-eqag.sh mpnet` (this file: `python3 scripts/eqag-report.py target/eqag-mpnet/results "
        "docs/results/eqag-mpnet.md mpnet`; work files in target/eqag-mpnet). The paper's three variants as in "
        "[eqag.md](eqag.md) (same graph, GCN, sweep grid, seeds and training questions), over the strongest cross-encoder "
        "here instead of MiniLM-L6: `mpnet-base-squad-tanda-int8` (issue 19: SQuAD-sent transfer, then WikiQA + TrecQA). "
        "Its scores of every split come from `ansel rank` (int8 ONNX, each pair scored alone); as in eqag.md the training "
        "nodes' scores are in sample (the base adapted on WikiQA train). The question asked: with a stronger base, does "
        "the graph of similar training questions add what it did not add over MiniLM-L6?",
        "",
    ]
elif only_features:
    lines += [
        "Produced by `bash scripts/bench-eqag.sh features` (this file: `python3 scripts/eqag-report.py target/eqag/results "
        "docs/results/eqag-features.md features`). The paper-faithful variants and the other extensions are in "
        "[eqag.md](eqag.md) (same graph, GCN, sweep grid and seeds). **Extension, not the paper**: each node's input is "
        "[base probability (the paper's one feature, which also builds the graph), z(base score), z(lexical score)], the "
        "z-scores taken over the question's own candidates (`ansel train --model eqag --node-features base,wo-rr`; TrecQA "
        "has no document order, so `wo` there), and the GCN is fitted on the even-numbered dev questions joined to the "
        "training graph (`--fit-on-dev`: their base scores are out of sample, unlike the training nodes'), with early "
        "stopping and the sweep's choice on the odd-numbered ones; the ablation rows fit it on the training nodes as "
        "in eqag.md (early stopping and choice on all of dev). Sweeps, seeds, GCN size and optimiser as in eqag.md. "
        "eqag.md itself is the previous session's run: its raw result files were in a deleted worktree and "
        "re-running its nine sweeps did not fit in this session, so it is unchanged. The target's base is still the cross-encoder alone. "
        "The peer row is the plain z-score fusion of the same two scorers (`ansel eval --model BASE+wo-rr`), with no graph "
        "and no training: the difference between a variant and that row is what the graph and the fitted GCN add "
        "beyond the features.",
        "",
    ]
else:
    lines += [
        "Produced by `bash scripts/bench-eqag.sh` (this file: `python3 scripts/eqag-report.py target/eqag/results "
        "docs/results/eqag.md`). Graph: nodes are (q, a) pairs with the base cross-encoder's probability as the "
        "one feature; intra-row edges join a question's top K_intra candidates with feature >= th_intra; inter-row "
        "edges join them to the top K_inter answers (stored feature >= th_inter) of the K_rows = 5 most similar "
        "training questions (pretrained all-MiniLM-L6-v2, mean pooling, cosine; weight = the cosine). GCN: 2 layers "
        "(eq. 2 with a root weight), 8 hidden units, Adam lr 0.01, full batch, BCE on training nodes, up to 200 "
        "epochs with early stopping on dev MAP (evaluated every 10 epochs, patience 3, never before epoch 100). Graph settings: the best dev MAP of the sweep "
        "(seed 42); test rows: seeds 1, 2, 3 of that setting (mean ± sample std). Training rows: questions with "
        "a positive (WikiQA train: 873 q, 8,672 pairs; TrecQA TRAIN (not TRAIN-ALL): 94 q, 5,919 pairs). The base "
        "row is the cross-encoder alone on the same questions.",
        "",
    ]
for tag, title, base in DATASETS:
    bpath = os.path.join(res, f"{tag}-base.json")
    if not os.path.exists(bpath) or os.path.getsize(bpath) == 0:
        continue
    b = load(bpath)
    lines += [f"## {title}: base `{base}`", "", "| model | seeds | P@1 | MAP | MRR | ΔP@1 vs base | ΔMAP vs base |", "|---|---|---|---|---|---|---|"]
    lines.append(f"| base alone | – | {b['P@1']:.4f} | {b['MAP']:.4f} | {b['MRR']:.4f} | | |")
    for v, name in VARIANTS:
        rs = seeds(tag, v)
        if not rs:
            continue
        lines.append(f"| {name} | {seed_cells(rs, b)}")
    # The no-graph peer of a node-feature variant (the same scorers, z-score fusion).
    fpath = os.path.join(res, f"{tag}-fusion.json")
    if not os.path.exists(fpath):
        fpath = os.path.join(res, f"{tag}-fod-fusion.json")
    if os.path.exists(fpath) and os.path.getsize(fpath) > 0:
        fu = load(fpath)
        lines.append(
            f"| peer, no graph: `{fu['model']}` (z-score fusion of the same scorers) | – | {fu['P@1']:.4f} | {fu['MAP']:.4f} | "
            f"{fu['MRR']:.4f} | {fu['P@1'] - b['P@1']:+.4f} | {fu['MAP'] - b['MAP']:+.4f} |"
        )
    best_v = None
    for v, name in VARIANTS[:3]:
        rs = seeds(tag, v)
        if rs:
            p1 = statistics.mean(r["P@1"] for r in rs)
            mp = statistics.mean(r["MAP"] for r in rs)
            if best_v is None or p1 > best_v[1]:
                best_v = (name, p1, mp)
    if best_v:
        dp, dm = best_v[1] - b["P@1"], best_v[2] - b["MAP"]
        met = dp >= 0.03 and dm >= 0
        targets.append(f"| {title} | {best_v[0]} | {dp:+.4f} | {dm:+.4f} | {'met' if met else 'not met'} |")
        if os.path.exists(fpath) and os.path.getsize(fpath) > 0:
            fu = load(fpath)
            gp, gm = best_v[1] - fu["P@1"], best_v[2] - fu["MAP"]
            targets.append(f"| ... the same variant against its no-graph peer `{fu['model']}` (not the target's base) | {best_v[0]} | {gp:+.4f} | {gm:+.4f} | (what the graph adds) |")
    # The variant dev would pick (best dev MAP of its sweep), so that "best variant" is not
    # only a choice made on test.
    dev_best = None
    for v, name in VARIANTS[:3]:
        sp = os.path.join(res, f"sweep-{tag}-{v}.jsonl")
        rs = seeds(tag, v)
        if os.path.exists(sp) and rs:
            dm_ = max(json.loads(l)["dev MAP"] for l in open(sp) if l.strip())
            if dev_best is None or dm_ > dev_best[0]:
                dev_best = (dm_, name, statistics.mean(r["P@1"] for r in rs), statistics.mean(r["MAP"] for r in rs))
    if (only_features or only_pv or only_mpnet) and dev_best:
        dp, dm = dev_best[2] - b["P@1"], dev_best[3] - b["MAP"]
        met = dp >= 0.03 and dm >= 0
        targets.append(f"| ... the variant dev picks (best dev MAP; ties: first of TA, T+, T+-) | {dev_best[1]} | {dp:+.4f} | {dm:+.4f} | {'met' if met else 'not met'} |")
    live = os.path.join(res, f"{tag}-t+-s1-live.json")
    cached = os.path.join(res, f"{tag}-t+-s1.json")
    if os.path.exists(live) and os.path.getsize(live) > 0 and os.path.exists(cached):
        a, c = load(live), load(cached)
        same = all(a[k] == c[k] for k in ("P@1", "MAP", "MRR"))
        how = ("with the base's scores, the bi-encoder vectors and the [CLS] states all computed live (no caches)"
               if mode == "cv" else "with the base scored live (no cache)")
        lines += ["", f"Live check: `ansel eval` of T+ seed 1 {how}: P@1 {a['P@1']:.4f}, "
                  f"MAP {a['MAP']:.4f}, MRR {a['MRR']:.4f} ({'identical to' if same else 'DIFFERENT from'} the cached run)."]
    # Chosen settings and their sweeps.
    fod = tag.endswith("-fod")
    lines += ["", "### Dev sweeps (seed 42; K_rows = 5" + ("; GCN fitted on the even dev questions, metrics on the odd ones" if fod else "") + ")", ""]
    for v, name in VARIANTS[:3]:
        sp = os.path.join(res, f"sweep-{tag}-{v}.jsonl")
        if not os.path.exists(sp):
            continue
        rows = read_jsonl(sp)
        best = max(rows, key=lambda r: r["dev MAP"])
        lines += [
            f"**{name}** — base dev P@1 {rows[0]['base dev P@1']:.4f}, MAP {rows[0]['base dev MAP']:.4f}; "
            f"chosen: K_intra {best['k_intra']}, th_intra {best['th_intra']:.2f}, K_inter {best['k_inter']}, th_inter {best['th_inter']:.2f}",
            "",
            "| K_intra | th_intra | K_inter | th_inter | training edges | best epoch | dev P@1 | dev MAP | dev MRR |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            mark = " **" if r is best else ""
            lines.append(
                f"| {r['k_intra']} | {r['th_intra']:.2f} | {r['k_inter']} | {r['th_inter']:.2f} | {r['edges']} | {r['best_epoch']} | "
                f"{r['dev P@1']:.4f} | {r['dev MAP']:.4f}{mark} | {r['dev MRR']:.4f} |"
            )
        lines.append("")

if only_pv:
    cmp_rows = []
    for tag, title, base in DATASETS:
        sfx = next((x for x in (vec["suffix"], vec["suffix"] + "4") if tag.endswith(x)), None)
        if sfx is None:
            continue
        pv, ctl = seeds(tag, "t+"), seeds(tag[: -len(sfx)], "t+")
        fpath = os.path.join(res, f"{tag}-fusion.json")
        if not pv:
            continue
        m = lambda rs, k: statistics.mean(r[k] for r in rs)
        cells = [title.split(", extension")[0] + (" (GCN fitted on half of dev)" if "-fod" in tag else "")
                 + (" over `runs/minilm-trecqa-transfer-all`" if "transfer" in tag else "")
                 + (" (cls-vec:4, 4 components)" if sfx.endswith("4") else "")]
        cells.append(f"{m(pv, 'P@1') - m(ctl, 'P@1'):+.4f} / {m(pv, 'MAP') - m(ctl, 'MAP'):+.4f}" if ctl else "–")
        if ok(fpath):
            fu = load(fpath)
            cells.append(f"{m(pv, 'P@1') - fu['P@1']:+.4f} / {m(pv, 'MAP') - fu['MAP']:+.4f}")
        else:
            cells.append("–")
        for t, with_edges in ((tag, True), (tag[: -len(sfx)], False)):
            sp = os.path.join(res, f"sweep-{t}-t+.jsonl")
            if ok(sp):
                rows = read_jsonl(sp)
                best = max(rows, key=lambda r: r["dev MAP"])
                none = [r for r in rows if r["edges"] == 0]
                if with_edges:
                    cells.append(f"{best['edges']}")
                cells.append(f"{best['dev MAP']:.4f}")
                cells.append(f"{max(r['dev MAP'] for r in none):.4f}" if none else "–")
            else:
                cells += ["–", "–", "–"] if with_edges else ["–", "–"]
        cmp_rows.append("| " + " | ".join(cells) + " |")
    if cmp_rows:
        pvf = vec["feat"]
        lines += [f"## What the {vec['things']} and the graph add (T+, mean of 3 seeds on test; dev MAP of the sweep)", "",
                  f"| data | {pvf} vs control ΔP@1 / ΔMAP | {pvf} vs no-graph peer ΔP@1 / ΔMAP | {pvf}: chosen setting's training edges | {pvf}: chosen dev MAP | {pvf}: best dev MAP with no training edges | control: chosen dev MAP | control: best dev MAP with no training edges |",
                  "|---|---|---|---|---|---|---|---|"] + cmp_rows + [""]
        # Counts over the rows above (numbers, not prose, so that a re-run updates them).
        def count(col, both):
            vals = [r.split(" | ")[col].strip() for r in cmp_rows]
            vals = [v for v in vals if v != "–"]
            p = [float(v.split(" / ")[0]) for v in vals]
            m = [float(v.split(" / ")[1]) for v in vals]
            return sum(1 for a, b in zip(p, m) if a > 0 and (b > 0 or not both)), len(vals)
        a, n = count(1, False)
        c, n2 = count(2, False)
        lines += [f"{vec['plural']} raise mean test P@1 over the control (same edges and fitting, no {pvf}) in {a} of {n} "
                  f"settings; the {pvf} model beats the no-graph z-score fusion peer on P@1 in {c} of {n2}.", ""]
        cells = [[c.strip() for c in r.strip("|").split(" | ")] for r in cmp_rows]
        met_rows = "; ".join(sorted({t.split(" | ")[0].strip("| ").split(", extension")[0].split(", control")[0] + (" (control)" if ", control" in t else "")
                                     for t in targets if t.endswith("| met |") and not t.startswith("| ...")}))
        num = lambda v: float(v) if v[:1].isdigit() else float("nan")
        edged = sum(1 for c in cells if c[3] not in ("–", "0") and num(c[4]) > num(c[5]))
        mlp_worse = sum(1 for c in cells if num(c[5]) < num(c[7]))
        dev_better = sum(1 for c in cells if num(c[4]) > num(c[6]))
        at_rank_1 = "; ".join(f"{c[0]}: {float(c[1].split(' / ')[0]) * (237 if c[0].startswith('WikiQA') else 68):+.1f}" for c in cells if c[1] != "–")
        fusion_line = (f"; and no {pvf} row reaches the no-graph z-score fusion of the same scorers." if c == 0
                       else f"; {c} of {n2} {pvf} rows beat the no-graph z-score fusion of the same scorers on P@1.")
        if mode == "cv":
            lines += [
                "## What this shows",
                "",
                f"- On dev, the {pvf} sweep's chosen setting beats the control's chosen setting on dev MAP in {dev_better} "
                f"of {len(cells)} runs; its best setting without training edges (a per-node MLP over the features) is "
                f"below the control's in {mlp_worse} of {len(cells)}; a setting with training edges beats every no-edge "
                f"setting in {edged} of {len(cells)}. On test, {pvf} against the control is, in test questions answered "
                "right at rank 1 (mean over seeds), " + at_rank_1 + fusion_line,
                "- Over `minilm-l6-wikiqa` / `minilm-l6-tanda` the training nodes' [CLS] states, like their base scores, "
                "come from a cross-encoder fine-tuned on those very pairs (in sample), while a test question's come from "
                "pairs it never saw; a GCN fitted on the training nodes can learn a rule on them that does not transfer. "
                + (lambda oos: (
                    "If that were the whole reason, the rows where the GCN is fitted on out-of-sample states (a base "
                    "that never saw WikiQA; or fitted on half of dev) would put cls-vec ahead of its control. They do in "
                    f"{sum(1 for c in oos if c[1] != '–' and float(c[1].split(' / ')[0]) > 0)} of {len(oos)} ("
                    + "; ".join(f"{c[0]}: {c[1]} P@1 / MAP" for c in oos)
                    + "), so in-sample states do not explain it alone. Our reading (not tested further): with the base "
                    "score already an input, the whitened components add little that transfers and more inputs to "
                    "fit the training nodes with"
                    + "".join(f"; 4 components instead of 16 ({c[0]}) narrow the dev gap (chosen dev MAP {c[4]} against "
                              f"the control's {c[6]}) but still trail the control on test ({c[1]} P@1 / MAP)"
                              for c in cells if "cls-vec:4" in c[0]) + "."
                    if oos else "Not tested here with out-of-sample states: a hypothesis."))(
                    [c for c in cells if ("transfer" in c[0] or "half of dev" in c[0]) and c[1] != "–"]),
                f"- Rows that pass the target's letter (the targets table's 'met'): {met_rows or 'none'}"
                + (". None of them has cls-vec; on TrecQA one question is 1.5 P@1 points and the seeds' std is several "
                   "points, each such row sits below its no-graph peer, and we do not claim the target from them."
                   if met_rows and "(control)" in met_rows and all("(control)" in r for r in met_rows.split("; ")) else "."),
                "",
            ]
        else:
          lines += [
            "## What this shows",
            "",
            f"- On dev, the pair-vec sweeps pick settings with training edges that beat every pair-vec setting without "
            f"edges in {edged} of {len(cells)} runs, but that is partly because pair vectors as plain per-node inputs do "
            f"worse: the best no-edge pair-vec setting is below the control's best no-edge setting in {mlp_worse} of "
            f"{len(cells)} runs (the GCN with no edges is a per-node MLP, and 16 more inputs let it fit the training "
            f"nodes' labels in ways that do not transfer). The chosen pair-vec setting beats the control's chosen "
            f"setting on dev MAP in {dev_better} of {len(cells)} runs. On test: "
            "pair-vec against the control is, in test questions answered right at rank 1 (mean over seeds), "
            + at_rank_1 + fusion_line,
            "- Fitting on the training nodes, the GCN sees base scores that are in sample (the cross-encoders were "
            "fine-tuned on those pairs) and so nearly the labels; fitting on half of dev gives it out-of-sample "
            "scores but 63 WikiQA / 34 TrecQA questions, too few for 19 inputs per node (the `-fod` rows are not better).",
            f"- Rows that pass the target's letter (the targets table's 'met'): {met_rows or 'none'}. On TrecQA one "
            "question is 1.5 P@1 points and the seeds' std is several points, every such row sits below its peer, and "
            "we do not claim the target from them.",
            "- The base cross-encoder's [CLS] hidden state as node features (the brief's second option) was tried in a "
            "later session: [eqag-cls-vec.md](eqag-cls-vec.md).",
            "",
        ]
lat = os.path.join(res, "latency.json")
if os.path.exists(lat) and os.path.getsize(lat) > 0:
    l = load(lat)
    g, s, e, bm = l["graph_ms"], l["search_ms"], l["encode_ms"], l["base_ms"]
    lines += [
        "## Latency of the graph step",
        "",
        f"`ansel-lab eqag-latency --model {l['model']} --data {l['data']} --threads {l['threads']}`: "
        f"{l['stored_training_questions']} stored training questions ({l['stored_training_nodes']} nodes, "
        f"{l['stored_training_edges']} edges), {l['questions']} questions one at a time, "
        f"{l['candidates_mean']:.1f} candidates on average, on the shared 2-core machine.",
        "",
        "| stage | mean ms | p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|",
        f"| graph step (nearest questions + edges + GCN) | {g['mean']:.3f} | {g['p50']:.3f} | {g['p95']:.3f} | {g['max']:.3f} |",
        f"| of which nearest-question search (exact, {l['stored_training_questions']} x 384) | {s['mean']:.3f} | {s['p50']:.3f} | {s['p95']:.3f} | {s['max']:.3f} |",
        f"| {'question and candidate embeddings' if l.get('inter_by') == 'answer' or l.get('node_features') else 'question embedding'} (MiniLM-L6 bi-encoder) | {e['mean']:.3f} | {e['p50']:.3f} | {e['p95']:.3f} | {e['max']:.3f} |",
        f"| base ranker ({'the cross-encoder' if 'cls_ms' in l and 'cls-vec' in ','.join(l.get('node_features') or []) else 'Cosinenet'} here) | {bm['mean']:.3f} | {bm['p50']:.3f} | {bm['p95']:.3f} | {bm['max']:.3f} |",
    ] + ([
        f"| the base cross-encoder's [CLS] states of the candidates (`cls-vec`; a second forward pass here) | {l['cls_ms']['mean']:.3f} | {l['cls_ms']['p50']:.3f} | {l['cls_ms']['p95']:.3f} | {l['cls_ms']['max']:.3f} |",
    ] if 'cls-vec' in ','.join(l.get('node_features') or []) else []) + ([
        "",
        "Node features `" + ",".join(l["node_features"]) + "`" + (" and inter-row edges by answer" if l.get("inter_by") == "answer" else "")
        + (": the graph step includes the extra features (the lexical ranker, the [CLS] states' PCA projection); the "
           "embedding stage includes the bi-encoder vectors of every candidate, which answer-similarity edges need (the "
           f"paper's graph embeds the question only): {e['mean']:.0f} ms mean here; and `cls-vec` needs the base "
           f"cross-encoder's [CLS] state of every pair: {l['cls_ms']['mean']:.0f} ms mean here as a second forward pass "
           "(one pass could give both the score and the state; not done), at 1 thread on the shared machine, far above "
           "the graph step." if 'cls-vec' in ','.join(l['node_features']) else
           ": the graph step includes the extra features (the lexical ranker, the pair vectors' PCA projection); the "
           "embedding stage includes the bi-encoder vectors of every candidate, which `pair-vec` and answer-similarity "
           f"edges need (the paper's graph embeds the question only): {e['mean']:.0f} ms mean here, at 1 thread on the shared "
           "machine, far above the graph step."),
    ] if l.get("node_features") else []) + [
        "",
    ]
    if mode == "cv":
        lines += ["The latency model (all 2,118 WikiQA train questions as graph rows, one fixed graph setting, 50 "
                  "epochs) is built for timing only; its scores are not reported.", ""]
    if "search_scaling" in l:
        lines += ["Exact nearest-question search alone (top 5 of N random 384-d unit vectors, 50 queries, 1 thread):", "",
                  "| stored questions | mean ms | p50 ms | p95 ms |", "|---|---|---|---|"]
        for r in l["search_scaling"]:
            m = r["search_ms"]
            lines.append(f"| {r['stored']:,} | {m['mean']:.3f} | {m['p50']:.3f} | {m['p95']:.3f} |")
        lines.append("")
if only_features:
    lines += ["## The committed model", ""]
    c, f = os.path.join(res, "model-committed-dev-odd.json"), os.path.join(res, "model-features-dev-odd.json")
    dec = os.path.join(res, "model-features-decision.txt")
    if os.path.exists(c) and os.path.exists(f) and os.path.exists(dec):
        c, f = load(c), load(f)
        lines += [
            f"`bash scripts/bench-eqag.sh model-features`: T+ with `--node-features base,wo-rr --fit-on-dev`, the nf-fod T+ sweep's "
            f"setting, seed 1, against the committed paper-faithful T+ model, both on the odd-numbered WikiQA dev questions "
            f"({f['questions']} q; neither model was fitted on them; the paper-faithful model was chosen on all of dev):",
            "",
            "| model | dev-odd P@1 | dev-odd MAP | dev-odd MRR |",
            "|---|---|---|---|",
            f"| paper-faithful T+ (previous `models/eqag-minilm-l6-wikiqa`) | {c['P@1']:.4f} | {c['MAP']:.4f} | {c['MRR']:.4f} |",
            f"| node-feature T+, fitted on the even dev questions | {f['P@1']:.4f} | {f['MAP']:.4f} | {f['MRR']:.4f} |",
            "",
            f"Decision (higher dev-odd MAP wins): **{open(dec).read().strip()}**. The model directory references "
            "`../minilm-l6-wikiqa` and the bi-encoder by relative path.",
            "",
        ]
    tc, tl = os.path.join(res, "model-features-test-cached.json"), os.path.join(res, "model-features-test-live.json")
    if all(os.path.exists(p) and os.path.getsize(p) > 0 for p in (tc, tl)):
        tc, tl = load(tc), load(tl)
        same = all(tc[k] == tl[k] for k in ("P@1", "MAP", "MRR"))
        lines += [
            f"`ansel eval --model models/eqag-minilm-l6-wikiqa` on WikiQA test (clean, {tl['questions']} q): P@1 {tl['P@1']:.4f}, "
            f"MAP {tl['MAP']:.4f}, MRR {tl['MRR']:.4f} with the base scored live (no cache), "
            f"{'identical to' if same else 'DIFFERENT from'} the run on cached base scores.",
            "",
        ]
    lines += [
        "## What this shows",
        "",
        "- The extra node features carry the gain, not the graph. Every node-feature row sits below the plain z-score "
        "fusion of the same scorers (the peer rows; the '...against its no-graph peer' lines of the targets table), "
        "on both data sets and for every variant and seed mean.",
        "- The dev sweeps pick graphs with almost no edges: K_intra 1 (no intra-row edges) or K_intra 2 with few "
        "inter-row edges (see the 'training edges' column of the chosen rows; several settings tie). With no edges "
        "the 2-layer GCN with root weights is a per-node MLP over [base probability, z(base), z(lexical)]: a learned "
        "fusion. Settings with thousands of edges score lower on dev.",
        "- Fitting on half of dev (63 WikiQA / 34 TrecQA questions, out-of-sample base scores) is not better than "
        "fitting on the training nodes once the node has more than one feature: the fitted weights are noisier "
        "(TrecQA seeds range over 5 P@1 points) and the selection set is half of dev.",
        "- On WikiQA the best test row by mean P@1 (T+- with dev fitting, +3.4 P@1) passes the target's letter, but dev "
        "would have picked another variant (the 'variant dev picks' line), which does not; and it is below the no-graph "
        "fusion peer. We do not claim the target from that row.",
        "- So the diagnosis holds: with the base score as the only feature the GCN can only rescale a question's scores; "
        "with more features it learns a fusion that the untrained z-score sum already matches or beats here.",
        "",
    ]
elif not only_pv:
    lines += [
    "## How this differs from the paper, and why it does not help here",
    "",
    "- Question-question similarity: the pretrained all-MiniLM-L6-v2 bi-encoder (mean pooling, cosine), not a "
    "RoBERTa cross-encoder trained on Quora; nearest questions by an exact blocked dot product over the stored "
    "unit vectors.",
    "- Inter-row answers are ranked by the stored base score of the training pair itself, not by a cross-encoder "
    "score of (test question, training answer): that would cost K_rows x ~10 extra cross-encoder pairs per question "
    "(seconds on this CPU).",
    "- GCN: eq. 2 with symmetric normalisation and edge weights, plus a root weight and 8 hidden units. With d = 1 "
    "and no root weight every member of an intra-row clique gets the same aggregate, so the GCN cannot order a "
    "question's top candidates (`--no-root` gives eq. 2 exactly).",
    "- TrecQA: the graph is built on TRAIN (94 answered questions, 5,919 pairs), not TRAIN-ALL (53k pairs, too slow "
    "to score with the cross-encoder here); the TrecQA base (`minilm-l6-tanda`) was transferred on a part of "
    "TRAIN-ALL, so its TRAIN scores are also in-sample.",
    "- Why the faithful variants stay at the base: the training nodes' features are the base ranker's scores on "
    "the very pairs it was fine-tuned on, so they nearly equal the labels, and the GCN fitted on them learns to "
    "trust a node's own feature; the neighbourhood a row gets (the same positives for all its top nodes) carries "
    "little that separates its candidates. The RI row (random features, same graph) falls far below, as in the "
    "paper: the graph alone does not rank. The `-fod` extension fits the GCN on dev rows instead, whose base "
    "scores are out of sample; `-answer` gives each candidate its own neighbours (training answers similar to it). "
    "Neither reaches the target either (the targets table); the TrecQA changes are one or two questions of 68.",
    "",
]
ct = os.path.join(res, "cache-times.jsonl")
if os.path.exists(ct):
    lines += ["## Base-score caching (wall seconds of `ansel rank`, 1 thread, shared machine)", "", "| data | base | seconds |", "|---|---|---|"]
    for l in open(ct):
        if l.strip():
            r = json.loads(l)
            lines.append(f"| {r['data']} | {r['base']} | {r['seconds']} |")
    lines.append("")
if targets:
    i = lines.index("") + 1
    i = lines.index("", i) + 1  # after the intro paragraph
    head = ["## Targets", "",
            "Target: the best variant (by mean test P@1 over 3 seeds) gains >= 3 P@1 points over its base without lowering MAP.", "",
            "| data | best variant | ΔP@1 | ΔMAP | target |", "|---|---|---|---|---|"] + targets + [""]
    if os.path.exists(lat) and os.path.getsize(lat) > 0:
        l = load(lat)
        head += [f"Graph-step latency target (< 20 ms per question with >= 2,000 stored training questions): "
                 f"p95 {l['graph_ms']['p95']:.3f} ms with {l['stored_training_questions']} stored questions: "
                 f"{'met' if l['graph_ms']['p95'] < 20 and l['stored_training_questions'] >= 2000 else 'not met'}.", ""]
    lines[i:i] = head
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {out}")
