"""Scores a table of (question, candidate) pairs on Spark with an ansel model.

    pip install "./bindings/python[spark]"
    python examples/spark_score.py PAIRS OUT [--model SPEC] [--master local[2]]

PAIRS is a parquet file or folder (or .jsonl: one pair a line) with columns `qid`, `question`,
`text` and optionally `pos` (the candidate's place in its document, which `wo-rr` and context
models read); OUT is written as parquet with a `score` column added. On a cluster, run it with
spark-submit and see docs/guide/python.md for what the executors need.
"""
import argparse
import os
import sys

from pyspark.sql import SparkSession

import ansel
from ansel.spark import score_pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs")
    parser.add_argument("out")
    parser.add_argument("--model", default=ansel.DEFAULT_MODEL)
    parser.add_argument("--master", default=None, help="e.g. local[2]; spark-submit sets it otherwise")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("ansel-score")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    reader = spark.read.json if args.pairs.endswith(".jsonl") else spark.read.parquet
    pairs = reader(args.pairs)
    ordered = "pos" in pairs.columns
    scored = score_pairs(pairs, args.model, order="pos" if ordered else None,
                         in_document_order=ordered)
    scored.write.mode("overwrite").parquet(args.out)
    print(f"scored {scored.count()} pairs with {args.model} into {args.out}")
    spark.stop()


if __name__ == "__main__":
    main()
