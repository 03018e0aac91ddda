#!/usr/bin/env python3
"""Encoding rate of `ansel.spark.encode_units` on local[2] (issue 43): the documents of a JSON
lines file split into sentences (`ansel.spark.units`) and encoded into `.ansel-vectors` files.

    python bench/spark_encode.py DOCS.jsonl MODEL OUT_DIR     # prints one JSON object

Needs the package with its Spark extra (scripts/test-spark.sh installs it into
target/python-venv). The time includes Spark's own start of the job, not of the session."""
import json
import os
import sys
import time

from pyspark.sql import SparkSession

from ansel.spark import encode_units, units

docs, model, out = sys.argv[1:4]
os.environ["PYSPARK_PYTHON"] = sys.executable
spark = (SparkSession.builder.master("local[2]").appName("ansel-encode")
         .config("spark.ui.enabled", "false").getOrCreate())
frame = spark.read.json(docs).select("id", "title", "text").repartition(2).cache()
frame.count()
start = time.perf_counter()
written = encode_units(units(frame), model, out).collect()
seconds = time.perf_counter() - start
spark.stop()
sentences = sum(r.vectors for r in written)
print(json.dumps({"sentences": sentences, "files": len(written), "wall_s": round(seconds, 2),
                  "sentences_per_s": round(sentences / seconds, 1), "master": "local[2]"}))
