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
    return f"{r['P@1']:.3f} / {r['MRR']:.3f} / {r['p50_ms']:.0f}"


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
write_atomic(out_path, "\n".join(out) + "\n")
