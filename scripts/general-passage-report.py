#!/usr/bin/env python3
"""docs/results/general-passage-weight.md (scripts/bench-general-passages.sh): does a question over a
passage want more of the cosine than a question over a sentence?

    python3 scripts/general-passage-report.py windows WORK   # WORK/windows/SET.jsonl to score
    python3 scripts/general-passage-report.py report WORK

WORK is bench-general.sh's folder (suite/SET.jsonl, scores/SET/MODEL.jsonl). The MPNet fusion scores
a pair logit + w * cosine; today w is 6 for a question and 20 for a query that is not one. Here, for
a question, w grows with the candidate's length in words (whitespace-separated): 6 up to FROM words,
P from 2 x FROM words, a straight line between. Both depend on the pair alone (no list statistics).
The shipped model reads a candidate of more than 80 words by its best window (80 words every 60,
ansel_model::Windows): `windows` writes, per set, the windows of those candidates as lists of their
own (ids `CANDIDATE#K`), which both members score once; the fused score of a long candidate is then
its best window's logit + w(window's words) * cosine, of a short one its own, so every cell of the
grid is the windowed model's score without running the model once per cell. The 128-token scores
of whole candidates (bench-general.sh's cache) are shown beside them.
The rule is general-report.py's: at or above BM25's order on every set chosen on, mean AS2 dev MAP
within 0.01 of the cross-encoder alone, then the best mean primary metric, read in windows as the
shipped model reads; squad-long is reported, not chosen on (as on general-reranker.md).
Keyword and heading queries (squad-keyword, trec-car) keep their weight, so those sets do not move.
"""
import importlib
import json
import os
import statistics
import sys

from reportlib import read_jsonl, write_atomic

report = importlib.import_module("general-report")

CE, BI = "mpnet-base-squad-tanda-int8", "mpnet-base-cosine-int8"
QUESTION_WEIGHT = 6
SETS = ["squad-passage", "squad-long", "semeval-cqa", "wikiqa-dev", "trecqa-dev-f", "squad-sent-dev-x"]
FROM_WORDS = [20, 30, 40]
PASSAGE_WEIGHTS = [8, 10, 12, 15, 20, 30]
UNIFORM_WEIGHTS = [0, 2, 4, 6, 8, 10, 15, 20]
PAGE = "docs/results/general-passage-weight.md"


def windows_of(text, words=report.WINDOWS["words"], stride=report.WINDOWS["stride"]):
    """ansel_model::Windows::of: the text itself up to `words` words, else windows of `words` words
    every `stride`, the last one ending at the end."""
    split = text.split()
    if len(split) <= words:
        return [text]
    starts = list(range(0, len(split) - words, stride)) + [len(split) - words]
    return [" ".join(split[s:s + words]) for s in starts]


def write_windows(work):
    """WORK/windows/SET.jsonl: each list's candidates of more than one window, as their windows."""
    os.makedirs(f"{work}/windows", exist_ok=True)
    for s in SETS:
        lines = []
        for q in read_jsonl(f"{work}/suite/{s}.jsonl"):
            cands = [{"id": f"{c['id']}#{k}", "text": w} for c in q["candidates"]
                     if len(c["text"].split()) > report.WINDOWS["words"]
                     for k, w in enumerate(windows_of(c["text"]))]
            if cands:
                lines.append(json.dumps({"id": q["id"], "question": q["question"], "candidates": cands}))
        write_atomic(f"{work}/windows/{s}.jsonl", "".join(line + "\n" for line in lines))


def window_scores(work, s, model):
    """{(question id, candidate id): [(window words, score)]} of a set's long candidates."""
    path = f"{work}/windows/scores/{s}/{model}.jsonl"
    if not os.path.exists(path):
        sys.exit(f"no window scores in {path}: run scripts/bench-general-passages.sh")
    texts = {(q["id"], c["id"]): len(c["text"].split())
             for q in read_jsonl(f"{work}/windows/{s}.jsonl") for c in q["candidates"]}
    out = {}
    for q in read_jsonl(path):
        for c in q["scores"]:
            owner = c["id"].rsplit("#", 1)[0]
            out.setdefault((q["id"], owner), []).append((texts[(q["id"], c["id"])], c["score"]))
    return out


def run_report(work):
    data, words, ids = {}, {}, {}
    for s in SETS:
        data[s] = report.load_set(work, s)
        for q in read_jsonl(f"{work}/suite/{s}.jsonl"):
            words[(s, q["id"])] = [len(c["text"].split()) for c in q["candidates"]]
            ids[(s, q["id"])] = [c["id"] for c in q["candidates"]]
    fmt = report.fmt
    scores = {(s, m): report.load_scores(work, s, m) for s in SETS for m in (CE, BI)}
    missing = [f"{s}/{m}" for (s, m), v in scores.items() if v is None]
    if missing:
        sys.exit(f"no cached scores for {', '.join(missing)}: run scripts/bench-general-passages.sh")
    windowed = {(s, m): window_scores(work, s, m) for s in SETS for m in (CE, BI)}

    def metric(s, score_of):
        order, labels = data[s]
        return report.metrics([(score_of(q), labels[q]) for q in order])[report.PRIMARY[s]]

    def ramp(start, passage):
        """A question's weight by the words read: 6 up to START, PASSAGE from 2 x START, linear."""
        return lambda n: QUESTION_WEIGHT + (passage - QUESTION_WEIGHT) * min(max((n - start) / start, 0.0), 1.0)

    def pair(s, q, i, w, windows):
        """Candidate i's logit + w(words) * cosine: read whole (cut at 128 tokens), or by its best
        window when it is longer than a window and `windows`."""
        if windows and words[(s, q)][i] > report.WINDOWS["words"]:
            key = (q, ids[(s, q)][i])
            return max(a + w(n) * b for (n, a), (_, b) in zip(windowed[(s, CE)][key], windowed[(s, BI)][key]))
        return scores[(s, CE)][q][i] + w(words[(s, q)][i]) * scores[(s, BI)][q][i]

    def fused(s, w, windows=True):
        # Every query of these sets is phrased as a question (general-reranker.md's shares).
        return metric(s, lambda q: [pair(s, q, i, w, windows) for i in range(len(words[(s, q)]))])

    def on_sets(w, windows=True):
        return {s: fused(s, w, windows) for s in SETS}

    floor = {s: metric(s, lambda q: [-i for i in range(len(data[s][1][q]))]) for s in SETS}
    alone = on_sets(lambda n: 0.0)
    today = on_sets(lambda n: QUESTION_WEIGHT)
    today_128 = on_sets(lambda n: QUESTION_WEIGHT, windows=False)
    shipped = {r["set"]: r[report.PRIMARY[r["set"]]]
               for r in read_jsonl("docs/results/general-reranker.jsonl", missing_ok=True)
               if r["model"] == "mpnet-base-general"}
    cells = [(f, p) for f in FROM_WORDS for p in PASSAGE_WEIGHTS]
    grid = {c: on_sets(ramp(*c)) for c in cells}
    grid_128 = {c: on_sets(ramp(*c), windows=False) for c in cells}
    chosen_on = [s for s in SETS if s != "squad-long"]
    as2 = [s for s in chosen_on if s in report.AS2]

    def admissible(g):
        kept = statistics.mean(g[s] for s in as2) >= statistics.mean(alone[s] for s in as2) - report.AS2_SLACK
        return kept and all(g[s] >= floor[s] for s in chosen_on)

    def mean_chosen(g):
        return statistics.mean(g[s] for s in chosen_on)

    ok = [c for c in cells if admissible(grid[c])]
    best = max(ok, key=lambda c: mean_chosen(grid[c])) if ok else None

    def lengths(s):
        ns = sorted(n for q in data[s][0] for n in words[(s, q)])
        return f"{ns[len(ns) // 2]} ({ns[len(ns) // 10]}-{ns[9 * len(ns) // 10]})"

    out = ["# A cosine weight by candidate length (issue 40): measured, not shipped\n",
           "Produced by `bash scripts/bench-general-passages.sh` (dev sets of",
           "[general-reranker.md](general-reranker.md); no test split is read). `mpnet-base-general` scores a pair",
           f"logit + w x cosine (mpnet-base-squad-tanda-int8, mpnet-base-cosine-int8) with w = {QUESTION_WEIGHT} for a",
           "question and 20 for other queries, and reads a candidate of more than 80 words by its best",
           "window (80 words every 60). Here, for a question, w grows with the words the pair reads (the",
           f"candidate, or the window): {QUESTION_WEIGHT} up to FROM words, P from 2 x FROM words, linear between;",
           "a pair's weight is its own (no list statistics). Each cell is computed from the two members'",
           "scores of every window (`windows`: each scored once), as the windowed model would score it.",
           "Keyword and heading queries keep 20, so squad-keyword and trec-car do not move and are not",
           "shown. nDCG@10 on the general sets, MAP on the AS2 sets.\n",
           "| set | words per candidate: median (p10-p90) |", "|---|---|"]
    out += [f"| {s} | {lengths(s)} |" for s in SETS]
    out += ["", "| FROM | P | " + " | ".join(SETS) + " | mean (without squad-long) |",
            "|---|---|" + "---|" * (len(SETS) + 1)]

    def row(label_from, label_p, g):
        return (f"| {label_from} | {label_p} | " + " | ".join(fmt(g[s]) for s in SETS)
                + f" | {fmt(mean_chosen(g))} |")

    out.append(row("BM25 order", "", floor))
    out.append(row("cross-encoder alone, windows", "", alone))
    out.append(row("shipped (as measured by bench-general.sh)", "", {s: shipped.get(s, float("nan")) for s in SETS}))
    out.append(row("shipped, from the window scores", QUESTION_WEIGHT, today))
    for c in cells:
        out.append(row(f"**{c[0]}** (the rule's pick)" if c == best else c[0], c[1], grid[c]))
    out.append("")
    if best:
        g = grid[best]
        gains = ", ".join(f"{s} {g[s] - today[s]:+.3f}" for s in SETS)
        out += [f"The rule picks FROM {best[0]}, P {best[1]}: against the weights without length, {gains}; the",
                f"mean of the sets chosen on moves {mean_chosen(g) - mean_chosen(today):+.4f}."]
    else:
        out.append("No cell meets the rule.")
    passage_gain = {s: today[s] - today_128[s] for s in ("squad-passage", "squad-long")}
    out += ["",
            "Not shipped. Read in windows, the passage sets want no more cosine than sentences do: squad-passage",
            f"falls from {fmt(today['squad-passage'])} at {QUESTION_WEIGHT} to "
            f"{fmt(grid[(40, 15)]['squad-passage'])} at FROM 40, P 15, where the 128-token scores (below) gained;",
            "the cosine made up for the words a 128-token cut leaves unread, and windows read them (they give",
            f"squad-passage {passage_gain['squad-passage']:+.3f} and squad-long {passage_gain['squad-long']:+.3f} "
            f"at {QUESTION_WEIGHT}). The cell the rule picks moves the mean by "
            f"{(mean_chosen(grid[best]) - mean_chosen(today)) if best else 0.0:+.4f}, a question or two:",
            "no reason to change the default. The reconstruction holds: the shipped weights computed from",
            "the window scores give the model's own measured row.\n"]
    out += ["## One weight at every length, in windows\n",
            "The same window scores with one question weight w for every pair: where each set peaks.\n",
            "| w | " + " | ".join(SETS) + " | mean (without squad-long) |", "|---|" + "---|" * (len(SETS) + 1)]
    for w in UNIFORM_WEIGHTS:
        g = on_sets(lambda n, w=w: w)
        out.append(f"| {w} | " + " | ".join(fmt(g[s]) for s in SETS) + f" | {fmt(mean_chosen(g))} |")
    out.append("")
    out += ["## Read whole, cut at 128 tokens (the first measurement)\n",
            "The same grid on whole candidates cut at 128 tokens, as general-reranker.md's lambda grids read",
            "them: the passage sets gain more here, where the cosine makes up for the words the cut leaves",
            "unread.\n",
            "| FROM | P | " + " | ".join(SETS) + " | mean (without squad-long) |",
            "|---|---|" + "---|" * (len(SETS) + 1), row("no length", QUESTION_WEIGHT, today_128)]
    out += [row(c[0], c[1], grid_128[c]) for c in cells]
    out.append("")
    write_atomic(PAGE, "\n".join(out))


if __name__ == "__main__":
    mode, work = sys.argv[1], sys.argv[2]
    {"windows": write_windows, "report": run_report}[mode](work)
