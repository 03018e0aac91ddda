"""Writes docs/results/int8.{md,jsonl} from what scripts/bench-int8.sh left in its run folder:
`ansel eval --json` lines (with eval wall time and load average) and the trec run files of each
model, from which per-pair score differences and top-1 agreement against the tch source follow.
Usage: python3 scripts/int8-report.py RUN_DIR OUT_PREFIX"""
import glob
import json
import os
import sys
from collections import defaultdict

run_dir, out_prefix = sys.argv[1], sys.argv[2]
QUIET_LOAD = 2.0
SETS = [
    ("wikiqa", "WikiQA test (answered questions)", "minilm-l6-wikiqa"),
    ("wikiqa", "WikiQA test (answered questions)", "minilm-l6-tanda-all-2ep"),
    ("trecqa", "TrecQA test-filtered (--clean)", "minilm-l6-tanda"),
]


def read_run(path):
    scores = defaultdict(dict)
    for line in open(path):
        qid, _, doc, _, score, _ = line.split()
        scores[qid][doc] = float(score)
    return scores


def run_of(tag, model_spec):
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in model_spec)
    return read_run(os.path.join(run_dir, f"trec-{tag}", f"{safe}.run"))


def compare(ref, other):
    diffs, top_same, questions = [], 0, 0
    for qid, cands in ref.items():
        o = other.get(qid, {})
        common = [d for d in cands if d in o]
        if not common:
            continue
        diffs += [abs(cands[d] - o[d]) for d in common]
        questions += 1
        top_same += max(common, key=lambda d: cands[d]) == max(common, key=lambda d: o[d])
    return {
        "pairs": len(diffs),
        "max_abs_diff": max(diffs),
        "mean_abs_diff": sum(diffs) / len(diffs),
        "top1_agreement": top_same / questions,
        "questions": questions,
    }


def cpu_line():
    """The CPU model and whether it has VNNI, which decides how ONNX Runtime multiplies int8."""
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    vnni = "with" if flags & {"avx512_vnni", "avx_vnni"} else "without"
    return f"{model}, {vnni} VNNI"


rows, lines = [], []
lines += [
    "# int8 cross-encoder through ONNX Runtime: ranking quality",
    "",
    "Produced by `bash scripts/bench-int8.sh` (this file by `scripts/int8-report.py`). Each committed",
    "cross-encoder is converted by `ansel quantize` (no Python) into an ONNX graph scored by ONNX",
    "Runtime 1.31.1 through `ort`: `fp32` (the same float32 arithmetic, a reference within ONNX Runtime)",
    "and `int8` (dynamic quantization: dense weights int8 in 7 bits per output channel, activations",
    "quantized at run time; 7 bits because ONNX Runtime's uint8 x int8 kernel on x86 CPUs without VNNI",
    "saturates with 8-bit weights). `tch` is the source model as ansel scores it with libtorch. The",
    f"CPU of this run: {cpu_line()}. Metrics from `ansel eval`",
    "on the set each model was trained for; score differences are per (question, candidate) pair",
    "against the tch scores; top-1 agreement is the share of questions whose best-scored candidate",
    "is the same as under tch (over every question in the run file, answered or not). Eval wall time",
    "(2 threads; the 1-minute load average after it in brackets) is indicative only: the machine is",
    "shared, and its load moved between runs; `bench/throughput.sh` compares speed properly.",
    "",
    "| set | model | backend | questions | P@1 | MAP | MRR | max abs score diff vs tch | mean abs diff | top-1 agreement | eval s (load avg) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
]
deltas = []
for tag, label, source in SETS:
    specs = [("tch", f"models/{source}"), ("ort fp32", f"{run_dir}/{source}-fp32"),
             ("ort int8", f"{run_dir}/{source}-int8")]
    ref_run = run_of(tag, specs[0][1])
    metrics = {}
    for backend, spec in specs:
        r = json.load(open(os.path.join(run_dir, f"{tag}-{os.path.basename(spec)}.json")))
        cmp = compare(ref_run, run_of(tag, spec)) if backend != "tch" else None
        metrics[backend] = r
        row = {"set": tag, "model": source, "backend": backend, "questions": r["questions"],
               "P@1": r["P@1"], "MAP": r["MAP"], "MRR": r["MRR"], "eval_seconds": r["eval_seconds"],
               "loadavg_after": r["loadavg_after"], "vs_tch": cmp}
        rows.append(row)
        c = ("| {max_abs_diff:.3g} | {mean_abs_diff:.3g} | {top1_agreement:.1%} of {questions} ".format(**cmp)
             if cmp else "| - | - | - ")
        lines.append(f"| {label} | {source} | {backend} | {r['questions']} | {r['P@1']:.4f} | {r['MAP']:.4f} | "
                     f"{r['MRR']:.4f} {c}| {r['eval_seconds']} ({r['loadavg_after'].split()[0]}) |")
    t, q = metrics["tch"], metrics["ort int8"]
    deltas.append(f"- {label}, {source}: int8 minus tch: P@1 {q['P@1'] - t['P@1']:+.4f}, "
                  f"MAP {q['MAP'] - t['MAP']:+.4f}, MRR {q['MRR'] - t['MRR']:+.4f}; "
                  f"fp32 ONNX minus tch: MAP {metrics['ort fp32']['MAP'] - t['MAP']:+.4f}")
lines += ["", "Differences (int8 against its fp32 source):", ""] + deltas + [""]

# Speed: the ONNX Runtime rows of bench/throughput.sh runs (docs/results/cross-encoder-throughput*.jsonl).
speed, seen = [], set()
for path in sorted(glob.glob("docs/results/cross-encoder-throughput*.jsonl")):
    text = open(path).read()
    if text in seen:  # the latest run is also kept under a run name
        continue
    seen.add(text)
    recs = [json.loads(l) for l in text.splitlines() if l.strip()]
    meta = recs[0].get("meta", {})
    for r in recs[1:]:
        if "ort_int8_pairs_per_s" in r:
            speed.append((os.path.basename(path), meta, r))
if speed:
    lines += [
        "## Speed (from `bash bench/throughput.sh`)",
        "",
        "Batch 32, 2 threads, all-MiniLM-L6-v2 + a seeded head, identical inputs. tch, ort fp32 and ort int8 run",
        "batch by batch in turn in one process; PyTorch in its own process right after. int8 / fp32 is measured",
        "within ONNX Runtime, under the same load, and is the steadiest figure here.",
        "",
        "| run file | len | load avg at start | OMP_WAIT_POLICY | tch | ort fp32 | ort int8 | PyTorch | int8 / fp32 (ort) | int8 / tch | int8 / PyTorch | fp32 / PyTorch |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, meta, r in speed:
        lines.append(
            f"| {name} | {r['len']} | {meta.get('ort_loadavg_start', '?').split(' ')[0]} | {meta.get('OMP_WAIT_POLICY') or '(unset)'} | {r['ort_tch_pairs_per_s']} | "
            f"{r['ort_fp32_pairs_per_s']} | {r['ort_int8_pairs_per_s']} | {r['torch_pairs_per_s']} | "
            f"{r['ort_int8_pairs_per_s'] / r['ort_fp32_pairs_per_s']:.2f}x | {r['ratio_ort_int8_over_tch_interleaved']:.2f}x | "
            f"{r['ratio_ort_int8_over_torch']:.2f}x | {r['ratio_ort_fp32_over_torch']:.2f}x |")
    lines.append("")
    # Runs that started with nothing but the benchmark's own 2 threads on the machine.
    quiet = [(m, r) for _, m, r in speed if float(m.get("ort_loadavg_start", "9").split()[0]) <= QUIET_LOAD]
    if quiet:
        def span(key):
            v = [key(m, r) if callable(key) else r[key] for m, r in quiet]
            return f"{min(v):.2f}-{max(v):.2f}x"
        lines += [
            f"Quiet machine ({len(quiet) // 2} runs whose load average at start was <= {QUIET_LOAD}, that is the",
            "benchmark alone; both lengths): against PyTorch in its own process, ort int8 "
            f"{span('ratio_ort_int8_over_torch')}, ort fp32 {span('ratio_ort_fp32_over_torch')}, tch "
            f"{span(lambda m, r: r['ort_tch_pairs_per_s'] / r['torch_pairs_per_s'])}; within ONNX Runtime int8 / fp32 "
            f"{span(lambda m, r: r['ort_int8_pairs_per_s'] / r['ort_fp32_pairs_per_s'])}. Under load (the other runs) libtorch",
            "slows down far more than ONNX Runtime, so their ratios against PyTorch are inflated.",
            "",
        ]
with open(f"{out_prefix}.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
open(f"{out_prefix}.md", "w").write("\n".join(lines))
print("\n".join(lines))
