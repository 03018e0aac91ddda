#!/usr/bin/env python3
"""Scores run files with pytrec_eval as `trec_eval -c` would and compares with `ansel eval-trec
--trec-eval --json`. Usage: trec-car-pytrec-eval.py ANSEL QRELS RUN[.gz]...  Prints one JSON line
per run (both means and the largest absolute difference per measure); exits 1 on a difference
above 1e-4."""
import gzip, json, subprocess, sys
import pytrec_eval

MEASURES = ["map", "Rprec", "ndcg_cut_10", "P_10", "recip_rank"]


def read(path, run):
    out = {}
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if run:
                out.setdefault(p[0], {})[p[2]] = float(p[4])
            else:
                out.setdefault(p[0], {})[p[2]] = int(p[3])
    return out


def main():
    ansel, qrels_path, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    qrels = read(qrels_path, False)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "ndcg_cut", "P", "recip_rank"})
    worst = 0.0
    for path in runs:
        res = ev.evaluate(read(path, True))
        # -c: every query of the qrels counts, a query the run lacks scores 0.
        mean = {m: sum(res.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels) for m in MEASURES}
        ours = json.loads(subprocess.check_output(
            [ansel, "eval-trec", "--trec-eval", "--per-query", "--json", "--qrels", qrels_path, "--run", path]))
        diff = {m: abs(mean[m] - ours["mean"][m]) for m in MEASURES}
        perq = max(abs(res.get(q, {}).get(m, 0.0) - ours["per_query"][q][m]) for q in qrels for m in MEASURES)
        worst = max(worst, perq, *diff.values())
        print(json.dumps({"run": path, "queries": len(qrels), "pytrec_eval": mean,
                          "ansel": {m: ours["mean"][m] for m in MEASURES},
                          "max_abs_diff_mean": max(diff.values()), "max_abs_diff_per_query": perq}))
    sys.exit(1 if worst > 1e-4 else 0)


main()
