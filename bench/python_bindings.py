"""The Python package against the command line on the same machine (scripts/bench-python.sh).

1. Overhead: the median time of `Ranker.score` on one 30-text question against the CLI's
   (`ansel bench --per-question`: the same model scoring the same questions one at a time in
   Rust), in alternating rounds so that both see the same machine load.
2. Spark: pairs/s of `ansel.spark.score_pairs` on local[2] over a parquet table of pairs
   (PAIRS with `wo-rr`, whose scoring costs nothing, so the engine's own cost shows;
   DEFAULT_PAIRS with the default model), against `ansel bench` (scoring only) and `ansel rank`
   (reading the file, scoring, writing JSON lines) on the same pairs.

    python bench/python_bindings.py OUT_DIR REPORT.md   # rows in OUT_DIR/python.jsonl, then the report
"""

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ansel

REPO = Path(__file__).resolve().parents[1]
CLI = REPO / "target" / "release" / "ansel"
WIKIQA = REPO.parent / "shared" / "data" / "wikiqa" / "WikiQA-train.tsv"
CANDIDATES = 30


def questions(count, seed):
    """`count` questions of 30 WikiQA sentences each (a question with sentences of others)."""
    rows = [line.rstrip("\n").split("\t") for line in open(WIKIQA, encoding="utf-8")][1:]
    asked = sorted({r[1] for r in rows})
    sentences = sorted({r[5] for r in rows})
    rng = random.Random(seed)
    return [
        {"id": f"q{i}", "question": rng.choice(asked), "in_document_order": True,
         "candidates": [{"text": t} for t in rng.sample(sentences, CANDIDATES)]}
        for i in range(count)
    ]


def write_jsonl(path, qs):
    with open(path, "w", encoding="utf-8") as f:
        for q in qs:
            f.write(json.dumps(q) + "\n")


def cli_bench(data, model, repeat, per_question):
    args = [str(CLI), "bench", "--data", str(data), "--model", model, "--repeat", str(repeat)]
    if per_question:
        args.append("--per-question")
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def python_per_question_ms(ranker, qs, repeat):
    texts = [[c["text"] for c in q["candidates"]] for q in qs]
    for q, t in zip(qs, texts):
        ranker.score(q["question"], t, in_document_order=True)
    times = []
    for _ in range(repeat):
        for q, t in zip(qs, texts):
            start = time.perf_counter()
            ranker.score(q["question"], t, in_document_order=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def overhead(out, model, count, repeat, rounds):
    data = out / f"overhead-{count}.jsonl"
    qs = questions(count, seed=7)
    write_jsonl(data, qs)
    ranker = ansel.Ranker(model)
    cli_ms, py_ms = [], []
    for _ in range(rounds):
        cli_ms.append(cli_bench(data, model, repeat, per_question=True)["median_ms_per_question"])
        py_ms.append(python_per_question_ms(ranker, qs, repeat))
    cli_median, py_median = statistics.median(cli_ms), statistics.median(py_ms)
    return {"part": "overhead", "model": model, "questions": count, "candidates": CANDIDATES,
            "repeat": repeat, "rounds": rounds, "cli_ms_per_question": cli_ms,
            "python_ms_per_question": py_ms, "cli_median_ms": cli_median,
            "python_median_ms": py_median, "python_over_cli": py_median / cli_median}


def spark_throughput(out, model, pairs):
    from pyspark.sql import SparkSession

    import pandas as pd

    count = pairs // CANDIDATES
    qs = questions(count, seed=11)
    data = out / f"spark-{count}.jsonl"
    write_jsonl(data, qs)
    table = out / f"spark-{count}.parquet"
    pd.DataFrame(
        [(q["id"], q["question"], i, c["text"]) for q in qs for i, c in enumerate(q["candidates"])],
        columns=["qid", "question", "pos", "text"],
    ).to_parquet(table)
    total = count * CANDIDATES

    bench = cli_bench(data, model, repeat=1, per_question=False)
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        subprocess.run([str(CLI), "rank", "--data", str(data), "--model", model], stdout=sink,
                       stderr=subprocess.DEVNULL, check=True)
    rank_s = time.perf_counter() - start

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").appName("ansel-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    from ansel.spark import score_pairs

    df = spark.read.parquet(str(table))
    start = time.perf_counter()
    score_pairs(df, model, order="pos", in_document_order=True).write.format("noop").mode("overwrite").save()
    spark_s = time.perf_counter() - start
    spark.stop()
    return {"part": "spark", "model": model, "pairs": total, "questions": count,
            "cli_bench_pairs_per_s": bench["median_pairs_per_second"],
            "cli_rank_seconds": rank_s, "cli_rank_pairs_per_s": total / rank_s,
            "spark_local2_seconds": spark_s, "spark_local2_pairs_per_s": total / spark_s,
            "spark_over_cli_rank": rank_s / spark_s,
            "spark_over_cli_bench": (total / spark_s) / bench["median_pairs_per_second"],
            "cores": os.cpu_count()}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for model, count, repeat in [("wo-rr", 100, 5), (ansel.DEFAULT_MODEL, 20, 2),
                                 ("minilm-l6-squad-transfer", 10, 1)]:
        rows.append(overhead(out, model, count, repeat, rounds=3))
        print(json.dumps(rows[-1]), flush=True)
    # A model that costs nothing shows the engine's own cost; the default model, a real job.
    for model, pairs in [("wo-rr", int(os.environ.get("PAIRS", "1000000"))),
                         (ansel.DEFAULT_MODEL, int(os.environ.get("DEFAULT_PAIRS", "3000")))]:
        rows.append(spark_throughput(out, model, pairs))
        print(json.dumps(rows[-1]), flush=True)
    with open(out / "python.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    Path(sys.argv[2]).write_text(report(rows))


def report(rows):
    lines = [
        "# The Python package and Spark against the command line",
        "",
        "Written by `bash scripts/bench-python.sh` (bench/python_bindings.py) on one machine, "
        f"{os.cpu_count()} cores, while other jobs may run: each comparison alternates its two "
        "sides in rounds, and the ratios compare medians of the same rounds.",
        "",
        "## Overhead of `Ranker.score` (one question of 30 texts)",
        "",
        "The median time of one `Ranker.score` call against the CLI scoring the same questions one "
        "at a time in Rust (`ansel bench --per-question`), same model and inputs.",
        "",
        "| model | questions x repeats | CLI ms/question (rounds) | Python ms/question (rounds) | Python / CLI |",
        "|---|---|---|---|---|",
    ]
    fmt = lambda xs: ", ".join(f"{x:.3f}" for x in xs)
    for r in rows:
        if r["part"] == "overhead":
            lines.append(
                f"| `{r['model']}` | {r['questions']} x {r['repeat']} | {fmt(r['cli_ms_per_question'])} "
                f"| {fmt(r['python_ms_per_question'])} | {r['python_over_cli']:.3f} |"
            )
    lines += [
        "",
        "## Spark `local[2]` against the CLI",
        "",
        "`ansel.spark.score_pairs` over a parquet table (read, regrouped by question, scored, written "
        "to Spark's `noop` sink; Spark's start-up not counted) against `ansel rank` on the same pairs "
        "as JSON lines (read, scored, written to /dev/null) and `ansel bench` (scoring only). "
        "`wo-rr` costs almost nothing to score, so its row shows the engine's own cost.",
        "",
        "| model | pairs | `ansel bench` pairs/s | `ansel rank` pairs/s | Spark local[2] pairs/s | Spark / rank | Spark / bench |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["part"] == "spark":
            lines.append(
                f"| `{r['model']}` | {r['pairs']:,} | {r['cli_bench_pairs_per_s']:,.0f} | "
                f"{r['cli_rank_pairs_per_s']:,.0f} | {r['spark_local2_pairs_per_s']:,.0f} | "
                f"{r['spark_over_cli_rank']:.2f} | {r['spark_over_cli_bench']:.2f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
