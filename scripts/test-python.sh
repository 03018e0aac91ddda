#!/usr/bin/env bash
# The Python package: installs ./bindings/python into a fresh virtual environment (as a user
# would, with pip) and runs its pytest suite against the command line built beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "./bindings/python[test]"
"$venv/bin/python" -m pytest -q bindings/python/tests
