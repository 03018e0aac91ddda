#!/usr/bin/env python3
"""The GPU general cross-encoders' page (issue 40): docs/results/general-ce-gpu.{md,jsonl}.

    python3 scripts/general-ce-report.py WORK NAME...

NAME: a variant trained by `scripts/train-cross-encoder-gpu.sh general-train` and received as
runs/NAME-int8 (its card: the trainer's own dev evaluation) and runs/NAME (read in windows, scored
by `MODELS=runs/NAME SCORE_ONLY=1 bash scripts/bench-general.sh` into WORK/scores). Each variant
is measured as scripts/general-report.py measures every model; its peers (BM25's order, the
untrained encoders, the default and its members) are the rows of docs/results/general-reranker.jsonl,
which the same command wrote from the same suite files (the suite is rebuilt identically from the
split; accuracy does not depend on the machine).
"""
import importlib.util
import json
import os
import sys

from reportlib import read_jsonl, write_atomic

spec = importlib.util.spec_from_file_location(
    "general_report", os.path.join(os.path.dirname(__file__), "general-report.py"))
general_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(general_report)
PRIMARY, GENERAL, AS2 = general_report.PRIMARY, general_report.GENERAL, general_report.AS2
PEERS = ["bm25-order", "minilm-l6-cosine-int8", "mpnet-base-cosine-int8", "mpnet-base-squad-tanda-int8",
         "mpnet-base-general", "minilm-l6-general"]
PUBLISHED = general_report.PUBLISHED


def fmt(x):
    return "" if x is None else f"{x:.3f}"


def main():
    work, names = sys.argv[1], sys.argv[2:]
    sets = list(PRIMARY)
    table = {(r["model"], r["set"]): r for r in read_jsonl(PUBLISHED) if r["model"] in PEERS}
    rows = []
    for name in names:
        for s in sets:
            order, labels = general_report.load_set(work, s)
            scores = general_report.load_scores(work, s, name)
            if scores is None or any(q not in scores for q in order):
                continue
            m = general_report.metrics([(scores[q], labels[q]) for q in order])
            m["seconds_per_30_pairs"] = general_report.seconds_per_30(
                work, s, name, sum(len(v) for v in scores.values()))
            table[(name, s)] = {"set": s, "model": name, **m}
            rows.append(table[(name, s)])
    scored = [n for n in names if any((n, s) in table for s in sets)]
    cards = {n: json.load(open(f"runs/{n}-int8/model.json")) for n in names
             if os.path.exists(f"runs/{n}-int8/model.json")}

    def mean(model, group):
        vals = [table[(model, s)][PRIMARY[s]] for s in group if (model, s) in table]
        return sum(vals) / len(vals) if len(vals) == len(group) else None

    out = ["# One MPNet cross-encoder taught the default: the GPU runs (issue 40)\n",
           "`bash scripts/train-cross-encoder-gpu.sh general-prepare`, then its device calls (the script's",
           "header), `general-receive`, `MODELS=runs/NAME SCORE_ONLY=1 bash scripts/bench-general.sh` and",
           f"`python3 scripts/general-ce-report.py target/general {' '.join(names)}`.\n",
           "Each variant is all-mpnet-base-v2 (the untrained bi-encoder's weights) trained as a cross-encoder",
           "on the general student's mixture (36,604 pairs: SQuAD passage ranking over the split's train",
           "articles as questions and as keywords, SemEval-2016 task A train, WikiQA train, TrecQA train-all,",
           "SQuAD-sent train), its target the shipped default's score of each pair (`mpnet-base-general`:",
           "the TANDA cross-encoder + 6 x, 20 x for keywords, all-mpnet-base-v2's cosine, read in windows)",
           "beside the gold label (MSE + 0.5 x BCE), lr 2e-5, batch 64, frozen word embeddings, bf16 on one",
           "GPU. The variants differ only in epochs. One MPNet forward per pair, where the default runs two.\n",
           "## The trainer's own dev evaluation\n",
           "MAP in float at 128 tokens, on the GPU, as `bench/cross_encoder_gpu.py` chooses (the card's",
           "metrics); the suite below is what ansel itself measures.\n",
           "| variant | epochs | pairs/s | train s | squad-keyword | semeval-cqa | wikiqa-dev | trecqa-dev-f | mean |",
           "|---|---|---|---|---|---|---|---|---|"]
    for n, card in cards.items():
        hp, met = card["training"]["hyperparameters"], card["training"]["metrics"]
        phase = hp["phases"][0]
        cells = [fmt(met.get(f"dev {s} MAP")) for s in ("squad-keyword", "semeval-cqa", "wikiqa-dev", "trecqa-dev-f")]
        out.append(f"| {n} | {phase['epochs']} | {phase['pairs_per_s']:.0f} | {phase['seconds']:.0f} | "
                   + " | ".join(cells) + f" | {fmt(met.get('dev mean MAP'))} |")
    out += ["", "## On the general dev suite, through ansel\n",
            "The int8 graph (`ansel quantize`) read in windows of 80 words every 60, as the default reads",
            "passages; nDCG@10 on the general suite, MAP on the AS2 dev sets (docs/results/general-reranker.md",
            "describes each set). Peer rows are that page's.\n",
            "| model | " + " | ".join(sets) + " | mean general | mean AS2 |", "|---|" + "---|" * (len(sets) + 2)]
    for model in PEERS + scored:
        if not any((model, s) in table for s in sets):
            continue
        out.append(f"| {model} | " + " | ".join(fmt(table.get((model, s), {}).get(PRIMARY[s])) for s in sets)
                   + f" | {fmt(mean(model, GENERAL))} | {fmt(mean(model, AS2))} |")
    out += ["", "Against the default, set by set (primary metric; + means the variant is higher):\n",
            "| variant | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for n in scored:
        out.append(f"| {n} | " + " | ".join(
            f"{table[(n, s)][PRIMARY[s]] - table[('mpnet-base-general', s)][PRIMARY[s]]:+.3f}"
            if (n, s) in table else "" for s in sets) + " |")

    def below_bm25(model):
        return [s for s in sets if (model, s) in table
                and table[(model, s)][PRIMARY[s]] < table[("bm25-order", s)][PRIMARY[s]]]

    out += ["", "Below BM25's order: " + "; ".join(
        f"{n} on {', '.join(below_bm25(n)) or 'none'} of the {sum((n, s) in table for s in sets)} sets scored"
        for n in scored) + ".\n"]
    for n in scored:
        if not all((n, s) in table for s in sets):
            continue
        worse = [s for s in sets if table[(n, s)][PRIMARY[s]] < table[("mpnet-base-general", s)][PRIMARY[s]]]
        below = below_bm25(n)
        verdict = "is not a default" if worse or below else "is above the default on every dev set"
        out += [f"**{n} {verdict}**: below the default on {len(worse)} of {len(sets)} dev sets (mean general "
                f"{mean(n, GENERAL) - mean('mpnet-base-general', GENERAL):+.3f}, mean AS2 "
                f"{mean(n, AS2) - mean('mpnet-base-general', AS2):+.3f}), below BM25's order on {len(below)}."]
        if "trec-car" in below and "trec-car" not in below_bm25("mpnet-base-general"):
            out += ["On TREC CAR's heading-path queries, which no training list resembles, it falls below BM25's",
                    "order where the default, whose cosine term keeps all-mpnet-base-v2's own judgement, stays above",
                    "it: taught the fusion's scores on the mixture, one cross-encoder learned the mixture, not the",
                    "bi-encoder's generality."]
        out.append("")
    out += [
        "Seconds per 30 pairs (`ansel rank`'s wall time over a set, loading included, 2 cores with other",
        "work beside it; a throughput):\n",
        "| model | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for model in ["mpnet-base-general", "mpnet-base-squad-tanda-int8"] + scored:
        out.append(f"| {model} | " + " | ".join(
            fmt(table.get((model, s), {}).get("seconds_per_30_pairs")) for s in sets) + " |")
    timed = [m for m in ["mpnet-base-general", "mpnet-base-squad-tanda-int8"] + scored
             if general_report.latency_per_30(work, m, "passages") is not None]
    if timed:
        out += ["", "## Latency per 30 pairs\n",
                "`MODELS=\"mpnet-base-general mpnet-base-squad-tanda-int8 runs/NAME\" LATENCY_ONLY=1 SCORE_ONLY=1",
                "bash scripts/bench-general.sh` in one session, nothing else running: the median time to score one",
                "list on its own (as `/rerank` does), scaled to 30 pairs, over 20 lists of SQuAD paragraphs and",
                "20 of SQuAD-sent sentences (docs/results/general-reranker.md says which), 2 cores.\n",
                "| model | 30 paragraphs (ms) | 30 sentences (ms) |", "|---|---|---|"]
        for m in timed:
            out.append(f"| {m} | " + " | ".join(
                f"{v:.0f}" if (v := general_report.latency_per_30(work, m, k)) is not None else ""
                for k in ("passages", "sentences")) + " |")
    write_atomic("docs/results/general-ce-gpu.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    write_atomic("docs/results/general-ce-gpu.md", "\n".join(out) + "\n")


if __name__ == "__main__":
    main()
