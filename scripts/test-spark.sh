#!/usr/bin/env bash
# ansel.spark against a local[2] Spark (Java 17): installs the pinned pyspark, pandas and
# pyarrow into the Python package's test environment (scripts/test-python.sh makes it) and
# runs the Spark tests.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v java >/dev/null || { echo "test-spark: java not found (Spark needs Java 17)" >&2; exit 1; }
# The spark extra's pins, read from the package's pyproject.toml: installing "./bindings/python[spark]"
# would build the package again. Their wheels (pyspark's built from its source archive) go to a
# folder of their own, which `--prepare` fills alone (scripts/test.sh runs it in the background).
mapfile -t pins < <(python3 -c 'import sys, tomllib
print(*tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["spark"], sep="\n")' \
  bindings/python/pyproject.toml)
wheels=target/spark-wheels
if [ "$(cat "$wheels/pins" 2>/dev/null)" != "${pins[*]}" ]; then
  python3 -m pip wheel -q --disable-pip-version-check -w "$wheels" "${pins[@]}"
  echo "${pins[*]}" >"$wheels/pins"
fi
[ "${1:-}" = --prepare ] && exit 0
venv=target/python-venv
[ -x "$venv/bin/python" ] || bash scripts/test-python.sh
"$venv/bin/pip" install -q --disable-pip-version-check --find-links "$wheels" "${pins[@]}"
"$venv/bin/python" -m pytest -q bindings/python/tests/test_spark.py
