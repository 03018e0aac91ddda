"""Writes docs/results/squad-transfer.md from the rows of scripts/bench-squad-transfer.sh.

    python3 scripts/squad-transfer-report.py ROWS.jsonl OUT.md
"""
import os
import sys

from reportlib import read_jsonl, training_rate, write_atomic

rows_path, out_path = sys.argv[1], sys.argv[2]
rows = read_jsonl(rows_path)
by = {(r["set"], r["model"]): r for r in rows}
models = list(dict.fromkeys(r["model"] for r in rows))
DEV = ["WikiQA dev", "TrecQA dev-filtered", "SQuAD-sent dev", "SQuAD-sent dev-x"]
TEST = ["WikiQA test", "TrecQA test-filtered", "SQuAD-sent test", "SQuAD-sent test-x"]


def cell(set_name, model):
    r = by.get((set_name, model))
    return "" if r is None else f"{r['MAP']:.3f} / {r['P@1']:.3f}"


def ask_cell(set_name, model):
    r = by.get((set_name, model))
    if r is None:
        return ""
    return f"{r['P@1']:.3f} / {r['MRR']:.3f} / {r['p50_ms']:.0f}" + (" †" if "measured_with" in r else "")


def training(model):
    """Median training pairs/s and hours from a model directory's train-log.jsonl."""
    return training_rate(os.path.join(model if os.path.isdir(model) else os.path.join("models", model), "train-log.jsonl"))


out = []
w = out.append
w("# A stronger encoder and SQuAD-scale transfer\n")
w("Produced by `bash scripts/bench-squad-transfer.sh` (`MODELS=...`; rows in `squad-transfer.jsonl`,")
w("`REPORT_ONLY=1` rewrites this page). Data: `bash scripts/squad-sent-data.sh` splits SQuAD v1.1 train by")
w("article (seed 13: 22 dev and 22 test articles held out, 398 for training; `data/squad-sent/split.json`).")
w("SQuAD-sent lists are a held-out paragraph's sentences (positive: the sentence holding the answer span);")
w("`-x` adds the 10 BM25-best sentences of *other* articles, which a model must learn to put below the")
w("answer. The SQuAD-sent rows score a seeded sample of 500 questions per split. `(ask)` is `ansel eval-ask`")
w("over an index of the 22 held-out articles (BM25 retrieves 100 sentences, BM25 keeps 30, the model")
w("reranks): P@1 / MRR of the first sentence containing the answer text, and the median ms per question")
w("on this 2-core machine while other work ran (latency only indicative). WikiQA rows score the answered")
w("questions; TrecQA rows the filtered sets. `a+b` fuses standardised scores.\n")
w("## Dev sets (choose here): MAP / P@1\n")
w("| model | " + " | ".join(DEV) + " |")
w("|---|" + "---|" * len(DEV))
for m in models:
    w(f"| `{m}` | " + " | ".join(cell(s, m) for s in DEV) + " |")
w("\n## Test sets (report only): MAP / P@1\n")
w("| model | " + " | ".join(TEST) + " |")
w("|---|" + "---|" * len(TEST))
for m in models:
    w(f"| `{m}` | " + " | ".join(cell(s, m) for s in TEST) + " |")
w("\n## Answering from the held-out articles (`eval-ask`): P@1 / MRR / median ms\n")
w("| model | SQuAD dev (ask) | SQuAD test (ask) | training |")
w("|---|---|---|---|")
for m in models:
    w(f"| `{m}` | {ask_cell('SQuAD dev (ask)', m)} | {ask_cell('SQuAD test (ask)', m)} | {training(m)} |")
earlier = sorted({r["measured_with"] for r in by.values() if "measured_with" in r})
if earlier:
    w(f"\n† measured with the earlier graph ({'; '.join(earlier)}), on a machine where it did not saturate.")
w("\nModels: `minilm-l6-squad-transfer` (committed) is TANDA's transfer step on SQuAD-sent alone")
w("(`bash scripts/train-cross-encoder.sh squad-transfer`); `runs/minilm-squad-tanda` adapts it on WikiQA")
w("(`squad-tanda`; not committed: dev preferred the transfer model); `minilm-l6-tanda-all-2ep` is the former")
w("best cross-encoder (TrecQA transfer, then WikiQA); `minilm-l6-cosine` and `mpnet-base-cosine` are the")
w("pretrained sentence encoders scored by cosine, untrained here; `target/minilm-l6-squad-transfer-int8` is")
w("the transfer model as an int8 ONNX graph (`ansel quantize --model minilm-l6-squad-transfer --out")
w("target/minilm-l6-squad-transfer-int8`, one second; not committed, and made before `quantize` stored the")
w("word embeddings int8); `mpnet-base-squad-transfer-int8` is the transfer step from all-mpnet-base-v2 on")
w("the CPU (`bash scripts/train-cross-encoder.sh mpnet-squad-transfer`, 320 steps x 32 pairs, then `ansel")
w("quantize`; superseded, `bash scripts/restore-model.sh mpnet-base-squad-transfer-int8` brings it back);")
w("`mpnet-base-squad-tanda-int8` (committed) is TANDA from all-mpnet-base-v2 on a GPU")
w("(`bash scripts/train-cross-encoder-gpu.sh tanda`: all 383k SQuAD-sent pairs, then adapted on WikiQA +")
w("TrecQA TRAIN-ALL, chosen on the dev sets above); `minilm-l6-mpnet-distilled-int8` (committed) is")
w("all-MiniLM-L6-v2 distilled from it on the GPU")
w("(`train-cross-encoder-gpu.sh distill`: 168k pairs of the same training lists, loss = MSE to the")
w("teacher's logit + BCE on the gold label; dev kept the distilled model over a further WikiQA + TrecQA")
w("adaptation). Training: median pairs/s of the logged steps and wall-clock hours: one core beside")
w("running benchmarks, except the two GPU models (one H100, bf16; their rate mixes the transfer and adapt")
w("phases). An empty cell was not run yet; the script fills it (rows already measured are kept).")
w("The ranking rows of the committed int8 models were scored as ansel scores int8 graphs now, one pair")
w("at a time; their `(ask)` rows are older and had each question's pairs in batches of 32, which moves")
w("a pair's score by up to 1.9 logits but MAP by under 0.01 ([int8-batching.md](int8-batching.md)).")

# TANDA against adapting alone (MPNet, GPU): the dev events of the run logs.
ALONE = "docs/results/mpnet-adapt-alone"
ALONE_RUNS = [("tanda-recipe", "TANDA's adapt recipe: lr 1e-5, batch 32, 45 s a mix"),
              ("ft-2ep", "lr 2e-5, batch 32, 2 epochs or 120 s a mix"),
              ("ft-2ep-full", "lr 2e-5, batch 32, 2 full epochs")]
DEV_LOGGED = ["wikiqa-dev", "trecqa-dev-filtered", "squad-dev-x-500"]


def dev_rows(log_path, label):
    """(label, candidate, pairs trained in the candidate's last phase, dev MAPs, mean) per dev event."""
    pairs, rows = {}, []
    for e in read_jsonl(log_path):
        if e["event"] == "step":
            pairs[e["phase"]] = e["step"]
        elif e["event"] == "dev":
            phase = "transfer" if e["candidate"] == "transfer" else "adapt " + e["candidate"]
            batch = 64 if phase == "transfer" else 32
            rows.append((label, e["candidate"], pairs.get(phase, 0) * batch,
                         [e[d]["MAP"] for d in DEV_LOGGED], e["mean MAP"]))
    return rows


alone = [r for name, label in ALONE_RUNS if os.path.exists(f"{ALONE}/{name}.train-log.jsonl")
         for r in dev_rows(f"{ALONE}/{name}.train-log.jsonl", "alone: " + label)]
if alone:
    tanda = dev_rows("models/mpnet-base-squad-tanda-int8/train-log.jsonl", "TANDA (shipped run)")
    w("\n## MPNet: TANDA against adapting alone (dev MAP)\n")
    w("`bash scripts/train-cross-encoder-gpu.sh tanda` and `... adapt-alone` (one H100, bf16; the base's weights")
    w("rounded to fp16 in both). The same adapt mixes, dev sets and trainer; \"alone\" starts each mix from")
    w("all-mpnet-base-v2 itself instead of the SQuAD-sent transfer (TANDA's FT baseline). MAP as the trainer")
    w("computes it in PyTorch (questions with a positive and a negative), so the absolute values differ slightly")
    w("from ansel's int8 rows above. `pairs` counts the pairs of the candidate's last phase (the transfer")
    w("before TANDA's adapt candidates saw 383k more). Logs and cards: `docs/results/mpnet-adapt-alone/`.\n")
    w("| run | candidate | pairs | WikiQA dev | TrecQA dev-filtered | SQuAD-sent dev-x-500 | mean |")
    w("|---|---|---|---|---|---|---|")
    for label, cand, n, maps, mean in tanda + alone:
        w(f"| {label} | {cand} | {n:,} | " + " | ".join(f"{m:.3f}" for m in maps) + f" | {mean:.3f} |")
    best_alone = max(alone, key=lambda r: r[4])
    best_tanda = max(tanda, key=lambda r: r[4])
    w(f"\nBest by mean dev MAP: TANDA {best_tanda[4]:.3f} ({best_tanda[1]}) against {best_alone[4]:.3f} adapting")
    w(f"alone ({best_alone[0][7:]}, {best_alone[1]}): the transfer step is worth "
      f"{best_tanda[4] - best_alone[4]:+.3f} mean dev MAP, "
      + ", ".join(f"{d} {best_tanda[3][i] - best_alone[3][i]:+.3f}" for i, d in enumerate(DEV_LOGGED)) + ".")
write_atomic(out_path, "\n".join(out) + "\n")
