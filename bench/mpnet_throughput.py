"""MPNet cross-encoder throughput: PyTorch vs Python onnxruntime on ansel's own ONNX graphs.

Run by scripts/bench-mpnet-throughput.sh, in three steps:

  prepare WORK  builds one fixed batch of BATCH (question, candidate) pairs per length (64 and
                128 tokens, exactly) from WikiQA test, writes them as ansel JSON lines (for
                `ansel bench` / `ansel rank`) and as token ids; writes onnxruntime's
                transformer-optimized form of ansel's fp32 graph and its int8 quantization.
  time WORK     times every Python engine on those batches in this one process, round-robin
                batch by batch (so all see the same machine load), 2 threads each.
  report WORK   merges the Python timings with ansel's own (`ansel bench`, run by the shell
                script in its own processes) into docs/results/mpnet-throughput.{md,jsonl}.

Settings come from the environment (the shell script sets them): HF (the Hugging Face model
directory), INT8 and FP32 (ansel's graph directories), DATA (WikiQA-test.tsv), ITERS, BATCH, OUT.
"""
import csv
import json
import os
import statistics
import sys
import time

import numpy as np

LENGTHS = (64, 128)
WARMUP = 3
THREADS = 2


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        sys.exit(f"{name} is not set")
    return value


def loadavg():
    return open("/proc/loadavg").read().strip()


# ---------------------------------------------------------------- prepare


def assemble(q, c, length, cls, sep):
    """ansel's `PairTokenizer::assemble` for one segment in the RoBERTa layout
    (`<s> q </s></s> c </s>`): the question keeps at least half of the budget."""
    budget = length - 4
    q = q[: budget - min(len(c), budget // 2)]
    c = c[: budget - len(q)]
    return [cls] + q + [sep, sep] + c + [sep]


def pairs_of_length(tok, question, passages, length, batch, cls, sep):
    """BATCH candidate texts cut from `passages` so that (question, text) is exactly `length`
    tokens in ansel's layout, verified by re-encoding the cut text (a cut inside a word can
    re-tokenize differently: such passages are skipped)."""
    q = tok.encode(question, add_special_tokens=False).ids
    want = length - 4 - len(q)
    out = []
    for p in passages:
        enc = tok.encode(p, add_special_tokens=False)
        if len(enc.ids) < want:
            continue
        text = p[: enc.offsets[want - 1][1]]
        ids = assemble(q, tok.encode(text, add_special_tokens=False).ids, length, cls, sep)
        if len(ids) == length and ids[length - 2] != sep:
            out.append((text, ids))
        if len(out) == batch:
            return out
    sys.exit(f"only {len(out)} pairs of {length} tokens")


def prepare(work):
    from tokenizers import Tokenizer

    hf, batch = env("HF"), int(env("BATCH", "16"))
    tok = Tokenizer.from_file(f"{hf}/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    cls, sep = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    rows = list(csv.DictReader(open(env("DATA")), delimiter="\t", quoting=csv.QUOTE_NONE))
    # The question with the most candidates (the first such in file order); its candidates are
    # passages of WikiQA documents (a sentence and the ones after it in its document) long
    # enough to be cut to any length, its own document first, then the next ones in the file.
    counts = {}
    for r in rows:
        counts[r["QuestionID"]] = counts.get(r["QuestionID"], 0) + 1
    qid = max(counts, key=lambda k: (counts[k], -list(counts).index(k)))
    question = next(r["Question"] for r in rows if r["QuestionID"] == qid)
    docs, seen = {}, set()
    start = next(i for i, r in enumerate(rows) if r["QuestionID"] == qid)
    for r in rows[start:] + rows[:start]:
        if r["SentenceID"] not in seen:
            seen.add(r["SentenceID"])
            docs.setdefault(r["DocumentID"], []).append(r["Sentence"])
    passages = [" ".join(s[i:]) for s in docs.values() for i in range(len(s))]

    batches = {"question_id": qid, "question": question}
    for length in LENGTHS:
        pairs = pairs_of_length(tok, question, passages, length, batch, cls, sep)
        batches[f"len{length}"] = {"texts": [t for t, _ in pairs], "ids": [i for _, i in pairs]}
        with open(f"{work}/len{length}.jsonl", "w") as f:
            cands = [{"id": f"c{i}", "text": t} for i, (t, _) in enumerate(pairs)]
            f.write(json.dumps({"id": f"{qid}-len{length}", "question": question, "candidates": cands}) + "\n")
    # The same pairs through transformers' own tokenizer: ids must be the ones timed here.
    from transformers import AutoTokenizer

    hf_tok = AutoTokenizer.from_pretrained(hf)
    same = [hf_tok(question, t)["input_ids"] == i
            for length in LENGTHS for t, i in zip(batches[f"len{length}"]["texts"], batches[f"len{length}"]["ids"])]
    batches["transformers_tokenizer_ids_equal"] = f"{sum(same)}/{len(same)}"
    json.dump(batches, open(f"{work}/batches.json", "w"))
    print(f"question {qid} ({question!r}); ids equal to transformers' tokenizer: {batches['transformers_tokenizer_ids_equal']}")
    optimize(work)


def optimize(work):
    """onnxruntime's transformer optimizer on ansel's fp32 graph (model_type bert, its default
    opt_level 1: ORT's basic passes first, which fold ansel's float16 weight casts, then the
    Python fusions), that graph quantized by onnxruntime (dynamic, per channel, int8 weights) and
    with hand-fused attention. Also records what the optimizer does to ansel's int8 graph directly
    and what ONNX Runtime's own session optimisation fuses in ansel's graphs (neither timed)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    fusions = {}
    opts = dict(model_type="bert", num_heads=12, hidden_size=768)
    m = optimizer.optimize_model(f"{env('FP32')}/model.onnx", **opts)
    fusions["fp32"] = {k: v for k, v in m.get_fused_operator_statistics().items() if v}
    m.save_model_to_file(f"{work}/opt-fp32.onnx")
    quantize_dynamic(f"{work}/opt-fp32.onnx", f"{work}/opt-int8.onnx", per_channel=True,
                     weight_type=QuantType.QInt8,
                     # contrib ops (SkipLayerNormalization, ...) have no ONNX type inference.
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    ops = {}
    for n in onnx.load(f"{work}/opt-int8.onnx", load_external_data=False).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    fusions["int8_quantized_opt_fp32_ops"] = ops
    m = optimizer.optimize_model(f"{env('INT8')}/model.onnx", **opts)
    fusions["ansel_int8_directly"] = {k: v for k, v in m.get_fused_operator_statistics().items() if v}
    fusions["hand_fused_attention_layers"] = fuse_attention(f"{work}/opt-fp32.onnx", f"{work}/attn-fp32.onnx")
    # What ONNX Runtime itself makes of ansel's graphs when a session opens them (all graph
    # optimisations, as in ansel's sessions): the ops it runs.
    import onnxruntime as ort

    for prec, path in (("fp32", f"{env('FP32')}/model.onnx"), ("int8", f"{env('INT8')}/model.onnx")):
        so = ort.SessionOptions()
        so.optimized_model_filepath = f"{work}/session-{prec}.onnx"
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ops = [n.op_type for n in onnx.load(so.optimized_model_filepath, load_external_data=False).graph.node]
        fusions[f"ort_session_ops_ansel_{prec}"] = {k: ops.count(k) for k in sorted(set(ops))}
        os.remove(so.optimized_model_filepath)
    json.dump(fusions, open(f"{work}/fusions.json", "w"))
    print(json.dumps(fusions))


def fuse_attention(src, dst, num_heads=12):
    """Rewrites each layer's attention of the optimized fp32 graph (Q, K, V MatMul + Add ->
    Reshape -> Transpose, QK MatMul -> Mul(scale) -> Add(mask + relative position bias) ->
    Softmax -> MatMul V -> Transpose -> Reshape) into one com.microsoft.Attention node whose
    attention_bias input is that (mask + bias) tensor: the fused form the optimizer cannot find
    in MPNet, as a Rust writer could emit it. fp32 only: QAttention (its int8 form) has no
    attention_bias input. Returns the number of layers fused."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(src)
    g = m.graph
    init = {t.name: t for t in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    cons = {}
    for n in g.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)

    def proj(name):
        tr = prod[name]
        rs = prod[tr.input[0]]
        ad = prod[rs.input[0]]
        mm = prod[ad.input[0]]
        assert [tr.op_type, rs.op_type, ad.op_type, mm.op_type] == ["Transpose", "Reshape", "Add", "MatMul"]
        return [tr, rs, ad, mm], mm.input[0], numpy_helper.to_array(init[mm.input[1]]), numpy_helper.to_array(init[ad.input[1]])

    drop, replace = set(), {}
    for sm in [n for n in g.node if n.op_type == "Softmax"]:
        add = prod[sm.input[0]]
        mul = prod[add.input[0]]
        qk = prod[mul.input[0]]
        pv = cons[sm.output[0]][0]
        tr = cons[pv.output[0]][0]
        rs = cons[tr.output[0]][0]
        qn, root, wq, bq = proj(qk.input[0])
        kn, root_k, wk, bk = proj(qk.input[1])
        vn, root_v, wv, bv = proj(pv.input[1])
        assert root == root_k == root_v and [mul.op_type, add.op_type, pv.op_type, rs.op_type] == ["Mul", "Add", "MatMul", "Reshape"]
        name = f"attention_{len(replace)}"
        w = numpy_helper.from_array(np.concatenate([wq, wk, wv], 1).astype(np.float32), f"{name}.qkv_weight")
        b = numpy_helper.from_array(np.concatenate([bq, bk, bv]).astype(np.float32), f"{name}.qkv_bias")
        g.initializer.extend([w, b])
        scale = float(numpy_helper.to_array(init[mul.input[1]]))
        replace[id(rs)] = helper.make_node("Attention", [root, w.name, b.name, "", "", add.input[1]], [rs.output[0]],
                                           name=name, domain="com.microsoft", num_heads=num_heads, scale=scale)
        drop.update(id(n) for n in qn + kn + vn + [qk, mul, add, sm, pv, tr])
    nodes = [replace.get(id(n), n) for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    onnx.save(m, dst)
    return len(replace)


# ---------------------------------------------------------------- time


def engines(work):
    """PyTorch's attention implementation, and name -> (precision, run(ids) -> logits)."""
    import onnxruntime as ort
    import torch
    from transformers import MPNetForSequenceClassification

    torch.set_num_threads(THREADS)
    model = MPNetForSequenceClassification.from_pretrained(env("HF"), num_labels=1, dtype=torch.float32).float().eval()
    int8 = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

    def torch_run(m):
        def run(ids):
            with torch.inference_mode():
                t = torch.from_numpy(ids)
                return m(input_ids=t, attention_mask=torch.ones_like(t)).logits[:, 0].numpy()
        return run

    def ort_run(path):
        so = ort.SessionOptions()
        so.intra_op_num_threads = THREADS
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # as ansel's sessions
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]

        def run(ids):
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            return s.run(["logits"], {k: feed[k] for k in names})[0].reshape(-1)
        return run

    return getattr(model.config, "_attn_implementation", "?"), {
        "pytorch_fp32": ("fp32", torch_run(model)),
        "pytorch_int8": ("int8", torch_run(int8)),
        "ort_ansel_fp32": ("fp32", ort_run(f"{env('FP32')}/model.onnx")),
        "ort_ansel_int8": ("int8", ort_run(f"{env('INT8')}/model.onnx")),
        "ort_opt_fp32": ("fp32", ort_run(f"{work}/opt-fp32.onnx")),
        "ort_opt_int8": ("int8", ort_run(f"{work}/opt-int8.onnx")),
        "ort_attn_fp32": ("fp32", ort_run(f"{work}/attn-fp32.onnx")),
    }


def spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def time_all(work):
    import onnxruntime as ort
    import torch
    import transformers

    iters = int(env("ITERS", "20"))
    batches = json.load(open(f"{work}/batches.json"))
    out = {"loadavg_start": loadavg(), "iters": iters, "warmup": WARMUP, "threads": THREADS,
           "torch": torch.__version__, "transformers": transformers.__version__, "onnxruntime": ort.__version__,
           "torch_quantized_engine": torch.backends.quantized.engine}
    t0 = time.time()
    out["attn_implementation"], engs = engines(work)
    out["load_seconds"] = round(time.time() - t0, 1)
    names = list(engs)
    for length in LENGTHS:
        ids = np.array(batches[f"len{length}"]["ids"], dtype=np.int64)
        times = {n: [] for n in names}
        logits = {}
        for i in range(WARMUP + iters):
            # Round-robin, the order rotated each round so that no engine always runs first.
            k = i % len(names)
            for n in names[k:] + names[:k]:
                t = time.perf_counter()
                logits[n] = engs[n][1](ids)
                if i >= WARMUP:
                    times[n].append(time.perf_counter() - t)
        rows = {}
        for n in names:
            ms = statistics.median(times[n]) * 1e3
            rows[n] = {"precision": engs[n][0], "ms_per_batch": round(ms, 1),
                       "pairs_per_s": round(len(ids) * 1e3 / ms, 2),
                       "max_abs_logit_diff_vs_pytorch_fp32": float(np.abs(logits[n] - logits["pytorch_fp32"]).max()),
                       # Ranking is what answer selection uses: rank correlation of the scores.
                       "spearman_vs_pytorch_fp32": round(spearman(logits[n], logits["pytorch_fp32"]), 4),
                       "same_top1_as_pytorch_fp32": bool(np.argmax(logits[n]) == np.argmax(logits["pytorch_fp32"])),
                       "logits": [float(x) for x in logits[n]]}
            print(f"len {length} {n}: {ms:.0f} ms/batch, {rows[n]['pairs_per_s']} pairs/s, "
                  f"diff {rows[n]['max_abs_logit_diff_vs_pytorch_fp32']:.2e}", flush=True)
        out[f"len{length}"] = rows
    out["loadavg_end"] = loadavg()
    json.dump(out, open(f"{work}/python.json", "w"))


# ---------------------------------------------------------------- report


def ansel_rates(work, side):
    """`ansel bench` reports for one side (before/after the Python process), by length and
    precision; pairs/s from the median pass time (the report's own pairs/s is rounded)."""
    rates = {}
    path = f"{work}/ansel-{side}.jsonl"
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        b = r["report"]
        rates[(r["len"], r["precision"])] = round(b["pairs"] / b["median_seconds"], 2)
    return rates


def rank_check(work, py):
    """Max abs diff of `ansel rank`'s scores (the Rust engine) vs Python onnxruntime's logits on
    the same graph: ~0 shows that ansel tokenized the JSON lines to the very ids timed here."""
    diffs = {}
    for length in LENGTHS:
        for prec in ("fp32", "int8"):
            path = f"{work}/rank-{prec}-len{length}.jsonl"
            if os.path.exists(path):
                scores = [c["score"] for c in json.loads(open(path).readline())["scores"]]
                ref = py[f"len{length}"][f"ort_ansel_{prec}"]["logits"]
                diffs[f"{prec} len{length}"] = float(np.abs(np.array(scores) - np.array(ref)).max())
    return diffs


RATIOS = {  # name: (numerator engine, denominator engine)
    "ansel_int8_graph_over_pytorch_int8": ("ort_ansel_int8", "pytorch_int8"),
    "ansel_fp32_graph_over_pytorch_fp32": ("ort_ansel_fp32", "pytorch_fp32"),
    "optimized_over_ansel_graph_fp32": ("ort_opt_fp32", "ort_ansel_fp32"),
    "optimized_over_ansel_graph_int8": ("ort_opt_int8", "ort_ansel_int8"),
    "fused_attention_over_ansel_graph_fp32": ("ort_attn_fp32", "ort_ansel_fp32"),
    "pytorch_int8_over_pytorch_fp32": ("pytorch_int8", "pytorch_fp32"),
    "ansel_graph_int8_over_fp32": ("ort_ansel_int8", "ort_ansel_fp32"),
}
NAMES = {"pytorch_fp32": "PyTorch fp32", "pytorch_int8": "PyTorch dynamic int8", "ort_ansel_fp32": "ORT ansel fp32",
         "ort_ansel_int8": "ORT ansel int8", "ort_opt_fp32": "ORT optimized fp32", "ort_opt_int8": "ORT optimized int8",
         "ort_attn_fp32": "ORT optimized + fused Attention fp32"}


def report(work):
    py = json.load(open(f"{work}/python.json"))
    batches = json.load(open(f"{work}/batches.json"))
    fusions = json.load(open(f"{work}/fusions.json"))
    sides = {s: ansel_rates(work, s) for s in ("before", "after")}
    batch = len(batches["len64"]["ids"])
    meta = {k: py.get(k) for k in ("torch", "transformers", "onnxruntime", "torch_quantized_engine", "threads",
                                   "iters", "warmup", "loadavg_start", "loadavg_end", "load_seconds", "attn_implementation")}
    meta.update({"batch": batch, "question_id": batches["question_id"], "question": batches["question"],
                 "transformers_tokenizer_ids_equal": batches["transformers_tokenizer_ids_equal"], "fusions": fusions,
                 "ansel_rank_vs_ort_same_graph_max_abs_diff": rank_check(work, py),
                 # cpu, ansel version, script start/end load, seconds waited, wall time: from the shell.
                 **json.load(open(f"{work}/run.json"))})
    rows = []
    for length in LENGTHS:
        e = py[f"len{length}"]
        ref = e["pytorch_fp32"]["logits"]
        row = {"len": length, "batch": batch, "iters": py["iters"], "threads": THREADS,
               "pytorch_fp32_logit_range": [round(min(ref), 3), round(max(ref), 3)],
               "pairs_per_s": {n: e[n]["pairs_per_s"] for n in e},
               "ms_per_batch": {n: e[n]["ms_per_batch"] for n in e},
               "max_abs_logit_diff_vs_pytorch_fp32": {n: e[n]["max_abs_logit_diff_vs_pytorch_fp32"] for n in e if n != "pytorch_fp32"},
               "spearman_vs_pytorch_fp32": {n: e[n]["spearman_vs_pytorch_fp32"] for n in e if n != "pytorch_fp32"},
               "same_top1_as_pytorch_fp32": {n: e[n]["same_top1_as_pytorch_fp32"] for n in e if n != "pytorch_fp32"},
               "ratios": {k: round(e[a]["pairs_per_s"] / e[b]["pairs_per_s"], 3) for k, (a, b) in RATIOS.items()}}
        for prec in ("fp32", "int8"):
            got = {side: rates[(length, prec)] for side, rates in sides.items() if (length, prec) in rates}
            if got:
                mean = statistics.mean(got.values())
                row[f"ansel_bench_{prec}"] = {**{f"{k}_pairs_per_s": v for k, v in got.items()},
                                              "mean_pairs_per_s": round(mean, 2),
                                              f"mean_over_pytorch_{prec}": round(mean / e[f"pytorch_{prec}"]["pairs_per_s"], 3),
                                              f"mean_over_ort_ansel_{prec}_python": round(mean / e[f"ort_ansel_{prec}"]["pairs_per_s"], 3)}
        rows.append(row)
    out = env("OUT")
    with open(f"{out}.jsonl", "w") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    open(f"{out}.md", "w").write(markdown(meta, rows))
    print(open(f"{out}.md").read())


def verdict(a, b):
    """A ratio pair (64, 128 tokens) in words; 5% is about this shared machine's noise."""
    if a > 1.05 and b > 1.05:
        return "faster"
    if a < 0.95 and b < 0.95:
        return "slower"
    if 0.95 <= a <= 1.05 and 0.95 <= b <= 1.05:
        return "no clear difference (within 5%)"
    return "mixed (the two lengths disagree)"


def markdown(meta, rows):
    f = meta["fusions"]
    fmt = lambda d: ", ".join(f"{k} {v}" for k, v in d.items()) or "none"
    r64, r128 = rows
    rat = lambda k: (r64["ratios"][k], r128["ratios"][k])
    two = lambda k: "{:.2f}x / {:.2f}x".format(*rat(k))
    own = [r[f"ansel_bench_{p}"][f"mean_over_ort_ansel_{p}_python"] for r in rows for p in ("fp32", "int8") if f"ansel_bench_{p}" in r]
    drift = max([abs(b["after_pairs_per_s"] / b["before_pairs_per_s"] - 1) for r in rows for p in ("fp32", "int8")
                 for b in [r.get(f"ansel_bench_{p}", {})] if "after_pairs_per_s" in b and "before_pairs_per_s" in b] or [0])
    L = [
        "# MPNet cross-encoder throughput: ansel's ONNX graphs vs PyTorch",
        "",
        "Produced by `bash scripts/bench-mpnet-throughput.sh` (issue 19 item 6). Model mpnet-base-squad-tanda:",
        "ansel's int8 graph `models/mpnet-base-squad-tanda-int8`, its fp32 graph (`ansel quantize --precision fp32`",
        "of `runs/mpnet-squad-tanda-gpu`), and that Hugging Face directory's fp16 weights loaded by PyTorch as",
        f"float32. Input: one WikiQA test question ({meta['question_id']}, \"{meta['question']}\") with {meta['batch']} candidate",
        "passages, cut so that every pair is exactly 64 (resp. 128) tokens in ansel's layout `<s> q </s></s> c </s>`:",
        "one [%d, 64] and one [%d, 128] batch%s, no padding, the same ids in every engine (transformers' tokenizer"
        % (meta["batch"], meta["batch"], " (not 32 as in cross-encoder-throughput.md: 7 engines x 2 lengths x 32 pairs would"
           " take ~25 min on 2 cores)" if meta["batch"] < 32 else ""),
        f"gives the same ids: {meta['transformers_tokenizer_ids_equal']}; `ansel rank`'s scores of the JSON lines equal Python",
        "onnxruntime's logits on the same graphs, max abs diff "
        + ", ".join(f"{k} {v:.1e}" for k, v in meta["ansel_rank_vs_ort_same_graph_max_abs_diff"].items()) + ").",
        "",
        f"{meta['threads']} threads per engine (torch.set_num_threads; ORT intra-op {meta['threads']}, inter-op 1, all graph",
        f"optimisations as in ansel's sessions); median of {meta['iters']} batches after {meta['warmup']} warm-up batches; all Python",
        "engines in one process, round-robin batch by batch (the order rotated each round), so they share",
        f"the load. CPU: {meta['cpu']}, 2 cores, shared with other engineers' jobs (the script waited",
        f"{meta['waited_seconds']} s for their ansel/cargo/rustc processes to end). Load average (1/5/15 min): script start",
        f"{meta['loadavg_script_start']}; Python timing start {meta['loadavg_start']}, end",
        f"{meta['loadavg_end']}; script end {meta['loadavg_script_end']}. Wall time {meta['wall_seconds']} s.",
        "",
        f"PyTorch {meta['torch']} (transformers {meta['transformers']} MPNetForSequenceClassification, {meta['attn_implementation']} attention, eval, inference_mode;",
        f"int8: `torch.ao.quantization.quantize_dynamic` of every nn.Linear, qint8, engine {meta['torch_quantized_engine']}).",
        f"Python onnxruntime {meta['onnxruntime']} (CPU provider), the same release ansel links. ansel: {meta['ansel']}.",
        "",
        "## Pairs per second (one process, same load)",
        "",
        "| len | " + " | ".join(NAMES.values()) + " |",
        "|---" * (len(NAMES) + 1) + "|",
    ]
    for r in rows:
        L.append(f"| {r['len']} | " + " | ".join(f"{r['pairs_per_s'][n]:.1f}" for n in NAMES) + " |")
    L += ["", "Ratios of pairs/s in that process (64 / 128 tokens):", "",
          "| ratio | 64 | 128 |", "|---|---|---|"]
    labels = {"ansel_int8_graph_over_pytorch_int8": "ansel int8 graph / PyTorch dynamic int8",
              "ansel_fp32_graph_over_pytorch_fp32": "ansel fp32 graph / PyTorch fp32",
              "optimized_over_ansel_graph_fp32": "ORT-optimized / ansel graph, fp32",
              "optimized_over_ansel_graph_int8": "ORT-optimized (ORT-quantized) / ansel graph, int8",
              "fused_attention_over_ansel_graph_fp32": "optimized + fused Attention / ansel graph, fp32",
              "pytorch_int8_over_pytorch_fp32": "int8 / fp32, PyTorch",
              "ansel_graph_int8_over_fp32": "int8 / fp32, ansel graphs"}
    for k, label in labels.items():
        L.append(f"| {label} | {r64['ratios'][k]:.2f}x | {r128['ratios'][k]:.2f}x |")
    L += ["", "Against PyTorch fp32 on the same batch: max abs logit difference; Spearman correlation of the",
          f"{meta['batch']} candidates' scores; * = a different top candidate. PyTorch fp32 logits span "
          f"{r64['pytorch_fp32_logit_range']} at 64, {r128['pytorch_fp32_logit_range']} at 128.", "",
          "| len | " + " | ".join(v for k, v in NAMES.items() if k != "pytorch_fp32") + " |",
          "|---" * len(NAMES) + "|"]
    for r in rows:
        L.append(f"| {r['len']} | " + " | ".join(
            f"{r['max_abs_logit_diff_vs_pytorch_fp32'][n]:.1e}, {r['spearman_vs_pytorch_fp32'][n]:.3f}{'' if r['same_top1_as_pytorch_fp32'][n] else ' *'}"
            for n in NAMES if n != "pytorch_fp32") + " |")
    L += ["", "## ansel's own engine (`ansel bench`, separate processes)", "",
          f"`ansel bench --data lenL.jsonl --model DIR --repeat {meta['iters']}` (the Rust binary: ONNX Runtime through the `ort`",
          "crate, the same graphs and pairs; the JSON line is one question with the batch's candidates, so ansel",
          "scores them as one batch), run once right before and once right after the Python process. Its pass",
          "times include tokenizing the batch, and it warms up with one pass, not three. Ratios against PyTorch",
          "are across processes and minutes, so less steady than the ones above.", "",
          "| len | ansel fp32 before / after | ansel int8 before / after | ansel fp32 / PyTorch fp32 | ansel int8 / PyTorch dynamic int8 | ansel / Python ORT, same graph, fp32 / int8 |",
          "|---|---|---|---|---|---|"]
    for r in rows:
        a, b = r.get("ansel_bench_fp32", {}), r.get("ansel_bench_int8", {})
        ba = lambda d: f"{d.get('before_pairs_per_s', '-')} / {d.get('after_pairs_per_s', '-')}"
        L.append(f"| {r['len']} | {ba(a)} | {ba(b)} | {a.get('mean_over_pytorch_fp32', '-')}x | {b.get('mean_over_pytorch_int8', '-')}x | "
                 f"{a.get('mean_over_ort_ansel_fp32_python', '-')}x / {b.get('mean_over_ort_ansel_int8_python', '-')}x |")
    L += ["", "## onnxruntime's transformer optimizer", "",
          "`onnxruntime.transformers.optimizer.optimize_model(ansel fp32 graph, model_type=\"bert\", num_heads=12,",
          "hidden_size=768)` at its default opt_level 1 (ORT's basic passes first, which fold ansel's fp16 -> fp32",
          f"weight casts). Fusions: {fmt(f['fp32'])}. **No Attention fusion**: ansel's graph",
          "adds one precomputed (padding mask + relative position bias) tensor to every layer's attention scores,",
          "and the optimizer's BERT attention pattern wants the mask arithmetic (Mul <- Sub <- Cast <- Unsqueeze of",
          "attention_mask) right on that Add; MPNet's relative position bias blocks it.",
          "",
          "ONNX Runtime's own session-level optimisation (what ansel's sessions already run) fuses on ansel's graphs:",
          "fp32 " + fmt({k: v for k, v in f["ort_session_ops_ansel_fp32"].items() if k in FUSED_OPS}) + "; int8 "
          + fmt({k: v for k, v in f["ort_session_ops_ansel_int8"].items() if k in FUSED_OPS}) + ".",
          "",
          "Optimized int8 = the optimized fp32 graph quantized by `onnxruntime.quantization.quantize_dynamic`",
          "(per channel, QInt8 weights, uint8 activations quantized at run time, word embeddings int8 through",
          "QEmbedLayerNormalization). It therefore differs from ansel's int8 graph in the quantizer's choices too, not",
          "only in fusions. The optimizer run on ansel's int8 graph directly finds only "
          + fmt(f["ansel_int8_directly"]) + " (its symbolic shape",
          "inference does not know com.microsoft.DynamicQuantizeMatMul, so SkipLayerNormalization is not fused).",
          "",
          f"Fused Attention (fp32 only): the optimized graph with each layer's attention ({f['hand_fused_attention_layers']} layers) rewritten",
          "by hand (`fuse_attention` in bench/mpnet_throughput.py) into one com.microsoft.Attention node whose",
          "attention_bias input is the (mask + relative position bias) tensor: what a Rust writer could emit. Not",
          "done for int8: QAttention, the quantized form, has no attention_bias input.",
          "",
          "## Reading", "",
          f"- Same precision, same process: ansel's int8 graph runs {two('ansel_int8_graph_over_pytorch_int8')} (64 / 128 tokens) the pairs/s",
          f"  of PyTorch's dynamic int8; ansel's fp32 graph {two('ansel_fp32_graph_over_pytorch_fp32')} PyTorch fp32.",
          f"- onnxruntime's transformer optimizer: fp32 {two('optimized_over_ansel_graph_fp32')}, int8 {two('optimized_over_ansel_graph_int8')} ansel's graph: "
          f"{verdict(*rat('optimized_over_ansel_graph_fp32'))} in fp32, {verdict(*rat('optimized_over_ansel_graph_int8'))} in int8",
          "  (the int8 one also differs in quantization, above). ONNX Runtime's session optimisation already fuses",
          "  Gelu/BiasGelu and LayerNormalization in ansel's graphs; the optimizer adds SkipLayerNormalization and",
          "  EmbedLayerNormalization, which save little here.",
          f"- Fused Attention on top (fp32, by hand): {two('fused_attention_over_ansel_graph_fp32')} ansel's graph: {verdict(*rat('fused_attention_over_ansel_graph_fp32'))}.",
          "  At these lengths attention's own products (QK^T, softmax x V: 4 L^2 d FLOPs a layer) are L / 6d = "
          f"{64 / (6 * 768):.1%} / {128 / (6 * 768):.1%}",
          "  of the dense layers' 24 L d^2, so there is little for a fused kernel to save. " + (
              "Still, it is faster here: emitting it from Rust is future work worth doing."
              if verdict(*rat("fused_attention_over_ansel_graph_fp32")) == "faster" else
              "Emitting fused kernels from Rust (future work) would not pay on this CPU at 64-128 tokens, by this run."),
          "- int8 costs ranking accuracy in every stack (max abs logit diff vs PyTorch fp32, Spearman of the batch's",
          "  scores, 64 / 128 tokens): " + "; ".join(
              f"{NAMES[n]} {r64['max_abs_logit_diff_vs_pytorch_fp32'][n]:.2f} / {r128['max_abs_logit_diff_vs_pytorch_fp32'][n]:.2f}, "
              f"{r64['spearman_vs_pytorch_fp32'][n]:.3f} / {r128['spearman_vs_pytorch_fp32'][n]:.3f}"
              for n in ("ort_ansel_int8", "pytorch_int8", "ort_opt_int8")) + ". The fp32 graphs agree with PyTorch to ~1e-5.",
          "  PyTorch's default dynamic qconfig quantizes weights per tensor (ansel and onnxruntime: per output",
          "  channel) and every Linear including the head's last one (ansel keeps that in float32); its",
          "  same-precision speed ratio is therefore against a less accurate int8.",
          "- ansel's own engine (`ansel bench`, mean of before/after) runs "
          + ", ".join(f"{x:.2f}x" for x in own)
          + " (fp32, int8 at 64; fp32, int8 at 128) the pairs/s of Python onnxruntime on the same graph, across",
          f"  processes; the same ansel command before vs after the Python process differs by up to {drift:.0%}"
          + (", so these differences are within the cross-process noise: the Rust side adds no cost this run can see."
             if own and max(abs(x - 1) for x in own) <= max(drift, 0.1) else
             f", less than the largest of these ({max(abs(x - 1) for x in own):.0%}): a process of its own may run a graph faster"
             " than the Python process shared by seven engines and their thread pools; one run does not settle it."),
          "- Weak points: one batch (one question) per length, one run, a shared 2-core machine (absolute",
          "  numbers move run to run; the same-process ratios are the result); the ansel bench ratios cross processes.",
          ""]
    return "\n".join(L)


FUSED_OPS = {"Attention", "MultiHeadAttention", "SkipLayerNormalization", "EmbedLayerNormalization", "BiasGelu", "Gelu",
             "FastGelu", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "FusedMatMul", "FusedGemm", "LayerNormalization",
             "QEmbedLayerNormalization", "QAttention"}


if __name__ == "__main__":
    step, work = sys.argv[1], sys.argv[2]
    {"prepare": prepare, "time": time_all, "report": report}[step](work)
