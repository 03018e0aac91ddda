#!/usr/bin/env bash
# Does a question over a passage want more of the pretrained encoder's cosine than a question over
# a sentence? docs/results/general-passage-weight.md: the MPNet fusion (mpnet-base-squad-tanda-int8
# + w * mpnet-base-cosine-int8) with a cosine weight that grows with the words a pair reads, on the
# dev sets whose queries are questions (no test split is read). Both members score each set's
# candidates whole (bench-general.sh's 128-token cache) and every window of the candidates longer
# than a window (target/general/windows/scores); the grid is computed from those scores, as the
# windowed model would score each cell. About 35,000 windows: 82 minutes on 2 cores (2026-11-29,
# beside other work for a third of it); resumable. ANSEL names the binary that scores: a copy two
# folders below the checkout (target/bench-bin/ansel, where it finds vendor/libtorch), so that
# target/release can be rebuilt meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
members=(mpnet-base-squad-tanda-int8 vendor/models/mpnet-base-cosine-int8)
sets="squad-passage squad-long semeval-cqa wikiqa-dev trecqa-dev-f squad-sent-dev-x"
SCORE_ONLY=1 MODELS="${members[*]}" SETS="$sets" bash scripts/bench-general.sh
work=target/general
python3 scripts/general-passage-report.py windows "$work"
for m in "${members[@]}"; do
  for s in $sets; do
    out=$work/windows/scores/$s/$(basename "$m").jsonl
    [ -s "$out" ] && continue
    mkdir -p "$(dirname "$out")"
    echo "== $(basename "$m") on the windows of $s" >&2
    "${ANSEL:-target/release/ansel}" rank --data "$work/windows/$s.jsonl" --model "$m" >"$out.tmp"
    mv "$out.tmp" "$out"
  done
done
python3 scripts/general-passage-report.py report "$work"
