"""PyTorch peer of ansel's cross-encoder throughput benchmark.

Reads what `cargo run --release -p ansel-bert --example throughput` wrote (the exact weights,
the exact [32, len] input batches and ansel's logits and timings), runs the same weights on the
same inputs with PyTorch (Hugging Face transformers' BertForSequenceClassification, 2 threads),
and checks correctness on the way:
  - token ids: the HF tokenizer (Python binding) vs ansel's tokenizers-crate ids,
  - the all-MiniLM-L6-v2 mean-pooled sentence embedding (transformers' BertModel) vs ansel's,
  - the cross-encoder logits on every benchmark batch.
Writes JSON lines and a Markdown table. Run by bench/throughput.sh.
"""
import json
import os
import statistics
import sys
import time

import torch
import transformers
from transformers import AutoModel, AutoTokenizer, BertForSequenceClassification

base, work, out_prefix = sys.argv[1], sys.argv[2], sys.argv[3]
iters = int(sys.argv[4]) if len(sys.argv) > 4 else 20
torch.set_num_threads(2)
torch.manual_seed(0)
ansel = json.load(open(f"{work}/ansel.json"))
tok = AutoTokenizer.from_pretrained(base)

checks = {}
ids = tok(ansel["sentence"])["input_ids"]
checks["sentence_ids_equal"] = ids == ansel["sentence_ids"]
pair_ok = [tok(p["q"], p["c"])["input_ids"] == p["ids"] for p in ansel["pair_ids"]]
checks["pair_ids_equal"] = f"{sum(pair_ok)}/{len(pair_ok)}"

encoder = AutoModel.from_pretrained(base).eval()
with torch.inference_mode():
    enc = tok(ansel["sentence"], return_tensors="pt")
    hidden = encoder(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    emb = (hidden * mask).sum(1) / mask.sum(1)
ref = emb[0]
mine = torch.tensor(ansel["sentence_embedding"])
checks["embedding_max_abs_diff"] = float((ref - mine).abs().max())
checks["embedding_first8_reference"] = [round(float(x), 6) for x in ref[:8]]

model = BertForSequenceClassification.from_pretrained(f"{work}/model", num_labels=1).eval()
rows = []
for key in ("len64", "len128"):
    b = ansel[key]
    ids = torch.tensor(b["ids"])
    types = torch.tensor(b["types"])
    mask = torch.tensor(b["mask"])
    n, length = ids.shape
    with torch.inference_mode():
        for _ in range(3):
            model(input_ids=ids, token_type_ids=types, attention_mask=mask)
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            logits = model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits[:, 0]
            times.append((time.perf_counter() - t) * 1e3)
    diff = float((logits - torch.tensor(b["logits"])).abs().max())
    texts = [s for row in b["texts"] for s in row]
    tok_times = []
    for _ in range(iters):
        t = time.perf_counter()
        tok(texts, add_special_tokens=False)
        tok_times.append((time.perf_counter() - t) * 1e3)
    torch_ms = statistics.median(times)
    rows.append({
        "batch": n, "len": length, "real_tokens_mean": b["real_tokens_mean"], "threads": 2, "iters": iters,
        "ansel_ms": round(b["forward_ms_median"], 2), "ansel_pairs_per_s": round(b["pairs_per_s"], 1),
        "torch_ms": round(torch_ms, 2), "torch_pairs_per_s": round(n * 1e3 / torch_ms, 1),
        "ratio_ansel_over_torch": round(b["pairs_per_s"] / (n * 1e3 / torch_ms), 3),
        "ansel_tokenize_ms": round(b["tokenize_ms_median"], 3),
        "python_tokenize_ms": round(statistics.median(tok_times), 3),
        "logits_max_abs_diff": diff,
    })

# ONNX Runtime rows (crates/ansel-onnx/examples/throughput.rs): tch, ort fp32 and ort int8 timed
# batch by batch in turn in one process, on the same weights and batches.
ort = json.load(open(f"{work}/ort.json")) if os.path.exists(f"{work}/ort.json") else None
if ort:
    for r, key in zip(rows, ("len64", "len128")):
        o = ort[key]
        torch_pps = r["torch_pairs_per_s"]
        r.update({
            "ort_tch_pairs_per_s": round(o["tch"]["pairs_per_s"], 1),
            "ort_fp32_pairs_per_s": round(o["ort_fp32"]["pairs_per_s"], 1),
            "ort_int8_pairs_per_s": round(o["ort_int8"]["pairs_per_s"], 1),
            "ratio_ort_fp32_over_torch": round(o["ort_fp32"]["pairs_per_s"] / torch_pps, 3),
            "ratio_ort_int8_over_torch": round(o["ort_int8"]["pairs_per_s"] / torch_pps, 3),
            "ratio_ort_int8_over_tch_interleaved": round(o["ort_int8"]["pairs_per_s"] / o["tch"]["pairs_per_s"], 3),
            "ratio_ort_fp32_over_tch_interleaved": round(o["ort_fp32"]["pairs_per_s"] / o["tch"]["pairs_per_s"], 3),
            "ort_fp32_logits_max_abs_diff": o["ort_fp32"]["logits_max_abs_diff_vs_ansel_json"],
            "ort_int8_logits_max_abs_diff": o["ort_int8"]["logits_max_abs_diff_vs_ansel_json"],
        })

meta = {"torch": torch.__version__, "transformers": transformers.__version__,
        "attn_implementation": getattr(model.config, "_attn_implementation", "?"),
        "ansel": ansel["stack"], **checks}
if ort:
    meta.update({"ort": ort["stack"], "ort_loadavg_start": ort["loadavg_start"], "ort_loadavg_end": ort["loadavg_end"]})
meta["loadavg_torch_end"] = open("/proc/loadavg").read().strip()
meta["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", "")
with open(f"{out_prefix}.jsonl", "w") as f:
    f.write(json.dumps({"meta": meta}) + "\n")
    for r in rows:
        f.write(json.dumps(r) + "\n")
lines = [
    "# Cross-encoder inference throughput: ansel vs PyTorch",
    "",
    "Produced by `bash bench/throughput.sh` (all-MiniLM-L6-v2 + a seeded random one-logit head, the",
    "same weights and the same [batch, len] inputs in both stacks, 2 threads, median of "
    f"{iters} batches after 3 warm-up batches). The machine is shared by several engineers: absolute",
    "numbers move 15-30% run to run; compare the ratio, measured in the same run.",
    "",
    f"PyTorch {meta['torch']}, transformers {meta['transformers']} ({meta['attn_implementation']} attention); {meta['ansel']}.",
    "",
    "| batch x len | real tokens (mean) | ansel pairs/s | PyTorch pairs/s | ansel / PyTorch | tokenize ms/batch ansel / HF Python | max abs logit diff |",
    "|---|---|---|---|---|---|---|",
]
for r in rows:
    lines.append(f"| {r['batch']} x {r['len']} | {r['real_tokens_mean']:.1f} | {r['ansel_pairs_per_s']} | {r['torch_pairs_per_s']} | "
                 f"{r['ratio_ansel_over_torch']:.2f}x | {r['ansel_tokenize_ms']:.2f} / {r['python_tokenize_ms']:.2f} | {r['logits_max_abs_diff']:.2e} |")
if ort:
    lines += [
        "",
        "## ONNX Runtime: fp32 and int8 (dynamic quantization) of the same weights",
        "",
        "`crates/ansel-onnx/examples/throughput.rs` converts the same weights with `ansel quantize`'s writer",
        "and times tch, ort fp32 and ort int8 on the same batches, batch by batch in turn in one process",
        f"(2 threads each, median of {iters} after 3 warm-up rounds), so the ratio against tch is measured under",
        "the same load; PyTorch ran in its own process right after (ratios against it are less steady).",
        f"{ort['stack']}. Load average (1/5/15 min) at its start: {ort['loadavg_start']}; at its end: {ort['loadavg_end']};"
        f" after PyTorch: {meta['loadavg_torch_end']}. OMP_WAIT_POLICY={meta['OMP_WAIT_POLICY'] or '(unset)'}.",
        "",
        "| batch x len | tch pairs/s | ort fp32 pairs/s | ort int8 pairs/s | PyTorch pairs/s | ort int8 / PyTorch | ort fp32 / PyTorch | ort int8 / tch (same process) | ort fp32 / tch (same process) | max abs logit diff fp32 / int8 vs tch |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['batch']} x {r['len']} | {r['ort_tch_pairs_per_s']} | {r['ort_fp32_pairs_per_s']} | {r['ort_int8_pairs_per_s']} | "
                     f"{r['torch_pairs_per_s']} | {r['ratio_ort_int8_over_torch']:.2f}x | {r['ratio_ort_fp32_over_torch']:.2f}x | "
                     f"{r['ratio_ort_int8_over_tch_interleaved']:.2f}x | {r['ratio_ort_fp32_over_tch_interleaved']:.2f}x | "
                     f"{r['ort_fp32_logits_max_abs_diff']:.2e} / {r['ort_int8_logits_max_abs_diff']:.2e} |")
lines += [
    "",
    "Correctness checks in the same run:",
    f"- token ids of a fixed sentence equal to the HF tokenizer's: {checks['sentence_ids_equal']}; (question, candidate) pairs: {checks['pair_ids_equal']}",
    f"- all-MiniLM-L6-v2 mean-pooled embedding of that sentence, max abs diff vs transformers: {checks['embedding_max_abs_diff']:.2e}",
    "",
    "Every kept run (`cross-encoder-throughput-*.jsonl`, with its load average) is tabulated, and the",
    "quiet-machine runs summarised, in [int8.md](int8.md) (`python3 scripts/int8-report.py runs/int8 docs/results/int8`).",
    "",
]
open(f"{out_prefix}.md", "w").write("\n".join(lines))
print("\n".join(lines))
