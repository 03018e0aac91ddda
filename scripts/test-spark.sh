#!/usr/bin/env bash
# ansel.spark against a local[2] Spark (Java 17): installs the pinned pyspark, pandas and
# pyarrow into the Python package's test environment (scripts/test-python.sh makes it) and
# runs the Spark tests.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v java >/dev/null || { echo "test-spark: java not found (Spark needs Java 17)" >&2; exit 1; }
venv=target/python-venv
[ -x "$venv/bin/python" ] || bash scripts/test-python.sh
"$venv/bin/pip" install -q --disable-pip-version-check "./bindings/python[test,spark]"
"$venv/bin/python" -m pytest -q bindings/python/tests/test_spark.py
