"""Writes docs/results/tree-kernels.md (and .jsonl) from scripts/bench-tree-kernels.sh's outputs:
the tree-kernel SVM (`ansel-lab tk`), RelCNN (`ansel train --model relcnn`, scored by `ansel rank`)
and their combination, per data set, MAP/MRR/P@1 over the answered questions.

    python3 scripts/tree-kernel-report.py WORK_DIR DATASET [DATASET ...]

The combination adds the two systems' scores after standardising them within each question
(z-scores), the tree kernel's weighted by w; w is chosen on dev MAP from 0, 0.1, ..., 1 and the
test row uses that w."""
import json
import os
import sys

from reportlib import read_jsonl, write_atomic

work, datasets = sys.argv[1], sys.argv[2:]


def questions(path, clean):
    """(id, labels) of the answered questions (TrecQA: without the all-positive ones), in order."""
    out = []
    for r in read_jsonl(path):
        labels = [int(c.get("label") in (1, True)) for c in r["candidates"]]
        if any(labels) and not (clean and all(labels)):
            out.append((str(r.get("id", len(out))), labels))
    return out


def ap_rr_p1(labels, scores):
    # Ties ranked against the system: a positive tied with negatives sits below them.
    order = sorted(range(len(labels)), key=lambda i: (-scores[i], labels[i]))
    hits, ap, rr = 0, 0.0, 0.0
    for rank, i in enumerate(order, 1):
        if labels[i]:
            hits += 1
            ap += hits / rank
            if rr == 0.0:
                rr = 1.0 / rank
    return ap / max(hits, 1), rr, float(labels[order[0]] == 1)


def metrics(qs, scores):
    rows = [ap_rr_p1(l, scores[qid]) for qid, l in qs]
    n = len(rows)
    return {"MAP": sum(r[0] for r in rows) / n, "MRR": sum(r[1] for r in rows) / n,
            "P@1": sum(r[2] for r in rows) / n, "questions": n}


def zscores(s):
    m = sum(s) / len(s)
    sd = (sum((x - m) ** 2 for x in s) / len(s)) ** 0.5
    return [(x - m) / sd if sd > 0 else 0.0 for x in s]


def tk_scores(path):
    return {str(r["id"]): r["scores"] for r in read_jsonl(path)}


def ranked_scores(path):
    return {str(r["id"]): [c["score"] for c in r["scores"]] for r in read_jsonl(path)}


rows, lines = [], ["# Tree kernels (thesis chapter 4): CTK, RelCNN and both", ""]
lines += [
    "Produced by `bash scripts/bench-tree-kernels.sh`. CTK: shallow chunk trees of each (question, candidate)",
    "pair from spaCy's en_core_web_md (lemmas, Penn tags, noun chunks and verb/prepositional/adjective/adverb",
    "runs, entities; `scripts/parse-shallow.py`, pinned spaCy in `target/spacy-venv`), `REL-` marks on the",
    "part-of-speech and chunk nodes of content lemmas both texts hold, `REL-FOCUS-<type>` on the question's",
    "wh-word chunk and the candidate's chunks with an entity of the asked type; a tree kernel of the",
    "question trees plus that of the candidate trees, each normalised: the subset tree kernel (STK,",
    "Collins & Duffy, lambda 0.4) or the partial tree kernel (PTK, Moschitti 2006, the thesis' kernel:",
    "fragments may keep any subsequence of a node's children; lambda 0.4, mu 0.4, SVM-light-TK's defaults);",
    "an SVM (crate `ansel-tk`: LIBSVM's SMO on the precomputed kernel matrix, C 1, positives' box",
    "weighted by negatives / positives) on the training pairs of the answered questions. RelCNN:",
    "`ansel train --model relcnn --loss pointwise` (GloVe 50d), one seed. CTK + RelCNN: the sum of the",
    "two systems' per-question z-scores, the CTK's weighted by w chosen on dev MAP (0 to 1 by 0.1).",
    "Metrics over the answered questions (TrecQA: clean, also without the all-positive ones), percent.",
    "Differences from the thesis: ansel's own SMO, not SVM-light-TK; a weighted sum of z-scores, not a",
    "logistic-regression meta-classifier; GloVe 50d.",
    "",
]
for ds in datasets:
    d = os.path.join(work, ds)
    qs = {s: questions(os.path.join(work, "data", f"{ds}-{s}.jsonl"), ds == "trecqa") for s in ("dev", "test")}
    kernels = [(name, sub) for name, sub in (("STK", "tk"), ("PTK", "ptk"))
               if os.path.exists(os.path.join(d, sub, "report.json"))]
    tk = {name: {s: tk_scores(os.path.join(d, sub, f"{ds}-{s}.jsonl.scores.jsonl")) for s in ("dev", "test")}
          for name, sub in kernels}
    cnn = {s: ranked_scores(os.path.join(d, f"relcnn-{s}.scores.jsonl")) for s in ("dev", "test")}
    reports = {name: json.load(open(os.path.join(d, sub, "report.json"))) for name, sub in kernels}

    def fused(kernel, s, w):
        return {qid: [w * a + b for a, b in zip(zscores(tk[kernel][s][qid]), zscores(cnn[s][qid]))]
                for qid, _ in qs[s]}

    systems = [(f"CTK, {k} (tree-kernel SVM)", tk[k]) for k, _ in kernels] + [("RelCNN", cnn)]
    for k, _ in kernels:
        best_w = max((w / 10 for w in range(11)),
                     key=lambda w: (metrics(qs["dev"], fused(k, "dev", w))["MAP"], -w))
        systems.append((f"CTK, {k} + RelCNN (w = {best_w:.1f}, chosen on dev)",
                        {s: fused(k, s, best_w) for s in ("dev", "test")}))
    lines += [f"## {ds}", ""]
    for k, report in reports.items():
        lines.append(f"{k}: {report['train_pairs']:,} training pairs ({report['train_positives']:,} positive), "
                     f"{report['support_vectors']:,} support vectors; kernel matrix "
                     f"{report['kernel_matrix_seconds'] / 60:.1f} min on {report['arguments']['threads']} thread(s), "
                     f"SMO {report['svm_seconds']:.0f} s ({report['smo_iterations']:,} iterations), 2 shared cores.")
    lines += ["", "| system | dev MAP | dev MRR | test MAP | test MRR | test P@1 |", "|---|---|---|---|---|---|"]
    test_map = {}
    for name, scores in systems:
        m = {s: metrics(qs[s], scores[s]) for s in ("dev", "test")}
        test_map[name] = m["test"]["MAP"]
        rows.append({"dataset": ds, "system": name, "dev": m["dev"], "test": m["test"]})
        lines.append(f"| {name} | {100 * m['dev']['MAP']:.2f} | {100 * m['dev']['MRR']:.2f} | "
                     f"{100 * m['test']['MAP']:.2f} | {100 * m['test']['MRR']:.2f} | {100 * m['test']['P@1']:.2f} |")
    lines.append("")
    for k, _ in kernels:
        both = next(v for n, v in test_map.items() if n.startswith(f"CTK, {k} + "))
        alone = test_map[f"CTK, {k} (tree-kernel SVM)"]
        lines.append(f"- {k}: the combination's test MAP {100 * both:.2f} is "
                     f"{'above' if both >= max(alone, test_map['RelCNN']) else 'NOT above'} each system alone "
                     f"(CTK {100 * alone:.2f}, RelCNN {100 * test_map['RelCNN']:.2f}).")
    lines.append("")
lines += ["The thesis (chapter 4, `../shared/papers/bonadiman-thesis-structure-for-qa.txt`), test sets: WikiQA CTK",
          "MRR 72.51, RelCNN MRR 71.07, their combination MRR 75.52 / MAP 73.99; TrecQA CTK MRR 85.53 / MAP 75.18",
          "(SVM-light-TK's partial tree kernel, word2vec on Wikipedia and AQUAINT).",
          "Chapter 5, a CNN taught by the STK model on SemEval task B question pairs, is in",
          "[tk-student.md](tk-student.md).", ""]
write_atomic("docs/results/tree-kernels.md", "\n".join(lines))
write_atomic("docs/results/tree-kernels.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
print("\n".join(lines))
