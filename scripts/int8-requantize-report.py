"""Writes docs/results/int8-requantize.md: the committed int8 models with 8-bit dense weights (as
first converted) against 7 bits (after `ansel-lab onnx-requantize`), MAP / P@1.

    python3 scripts/int8-requantize-report.py ROWS SQUAD_TRANSFER RECORDED CPU OUT.md
"""
import sys

from reportlib import read_jsonl, write_atomic

rows_path, committed_path, recorded_path, cpu, out_path = sys.argv[1:6]
MODELS = ["mpnet-base-squad-tanda-int8", "minilm-l6-mpnet-distilled-int8"]
DEV = ["WikiQA dev", "TrecQA dev-filtered", "SQuAD-sent dev-x"]
SETS = DEV + ["WikiQA test"]
eight = {(r["model"], r["set"]): r for r in read_jsonl(rows_path) if r["cpu"] == cpu}
seven = {(r["model"], r["set"]): r for r in read_jsonl(committed_path) if r["model"] in MODELS}
recorded = {(r["model"], r["set"]): r for r in read_jsonl(recorded_path, missing_ok=True) if r["model"] in MODELS}


def cell(rows, model, s):
    r = rows.get((model, s))
    return "" if r is None else f"{r['MAP']:.3f} / {r['P@1']:.3f}"


def mean_dev(rows, model):
    maps = [rows[(model, s)]["MAP"] for s in DEV if (model, s) in rows]
    return f"{sum(maps) / len(maps):.3f}" if len(maps) == len(DEV) else ""


out = ["# int8 dense weights in 8 bits against 7 bits", "",
       "Produced by `bash scripts/bench-requantize.sh` (rows in `int8-requantize.jsonl`). ONNX Runtime's",
       "`DynamicQuantizeMatMul` multiplies uint8 activations by int8 weights; on x86 CPUs without VNNI its",
       "AVX2 kernel adds pairs of products with VPMADDUBSW, which saturates at 32,767 when weights use all 8",
       "bits (2 x 255 x 127 = 64,770), so scores go wrong there and nowhere else. ansel now quantizes dense",
       "weights in 7 bits (2 x 255 x 63 = 32,130 fits); the two committed int8 models, whose float weights",
       "are not kept, were rescaled from their 8-bit values by `ansel-lab onnx-requantize` (each output",
       "column: round(q x 63 / max|q|), its scale times max|q| / 63).", "",
       f"CPU of the measured rows: {cpu}. The 7-bit rows are the committed models' rows of",
       "[squad-transfer.md](squad-transfer.md), measured on the same machine after the requantization; the",
       "recorded 8-bit rows are those that page held before it, measured on an earlier machine where the",
       "8-bit graphs did not saturate. MAP / P@1; dev chooses, test reports.", "",
       "| model | dense weights | measured | " + " | ".join(SETS) + " | mean dev MAP |",
       "|---|---|---|" + "---|" * (len(SETS) + 1)]
for model in MODELS:
    for label, where, rows in (("8 bits", "earlier machine (recorded)", recorded),
                               ("8 bits", "this CPU", eight), ("7 bits (committed)", "this CPU", seven)):
        if any((model, s) in rows for s in SETS):
            out.append(f"| `{model}` | {label} | {where} | " + " | ".join(cell(rows, model, s) for s in SETS)
                       + f" | {mean_dev(rows, model)} |")
out.append("")
for model in MODELS:
    a, b = mean_dev(eight, model), mean_dev(seven, model)
    if a and b:
        out.append(f"- `{model}` on this CPU: mean dev MAP {a} with 8 bits, {b} with 7 bits "
                   f"({float(b) - float(a):+.3f}).")
write_atomic(out_path, "\n".join(out) + "\n")
print(open(out_path).read())
