#!/usr/bin/env bash
# The spaCy venv for the shallow parse of the tree-kernel data (scripts/parse-shallow.py):
# creates target/spacy-venv when missing, with spaCy pinned to suit vendor/models/spacy-en-md
# (en_core_web_md 3.8.0, spaCy >=3.8.0,<3.9.0) and every dependency pinned too, so the parse
# is reproducible. From PyPI, for CPython 3.11. Prints the venv's python path.
#   scripts/spacy-venv.sh && target/spacy-venv/bin/python scripts/parse-shallow.py --help
# spaCy 3.8.18 declares click itself (older 3.8.x break with typer >= 0.2x: spaCy issue #13971).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/spacy-venv
pins=(spacy==3.8.18 thinc==8.3.14 blis==1.3.4 cymem==2.0.16 preshed==3.0.15 murmurhash==1.0.16
  srsly==2.5.6 wasabi==1.1.3 catalogue==2.0.10 confection==1.3.4 weasel==1.0.1 spacy-legacy==3.0.12
  spacy-loggers==1.0.5 numpy==2.4.6 pydantic==2.14.4 pydantic_core==2.50.5 typing-inspection==0.4.5
  typing_extensions==4.16.0 annotated-types==0.8.0 annotated-doc==0.0.7 typer==0.29.2 click==8.5.1
  rich==15.0.0 shellingham==1.5.4 markdown-it-py==4.3.0 mdurl==0.1.2 Pygments==2.21.0 Jinja2==3.1.6
  MarkupSafe==3.0.4 packaging==26.4 tqdm==4.70.1 requests==2.34.2 urllib3==2.8.0 idna==3.20
  certifi==2026.10.19.post1 charset-normalizer==3.5.3 cloudpathlib==0.26.0 smart_open==9.0.2
  wrapt==2.5.2 httpx==0.28.1 httpcore==1.0.9 h11==0.16.0 anyio==4.16.0)
if ! "$venv/bin/python" -c 'import spacy, sys; sys.exit(spacy.__version__ != "3.8.18")' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
fi
echo "$PWD/$venv/bin/python"
