#!/usr/bin/env bash
# Dense retrieval beside BM25 (docs/results/dense-retrieval.{md,jsonl}), on the SQuAD dev questions
# only (data/squad-sent/dev-ask.jsonl; nothing here is tuned on test):
# 1. builds copies of the two indexes of scripts/bench-default-model.sh with dense vectors of
#    minilm-l6-cosine (`ansel index --dense`), stored as f32, and rewrites each into f16 and int8
#    (`ansel-lab dense-format`), recording the encoding rate and the machine's load;
# 2. recall@20/30/100 of the answer sentence (a sentence containing the answer text) for the bm25,
#    dense and hybrid retrievers, as bench-default-model.sh measures BM25's: `ansel eval-ask` with
#    --retrieve K --top K, `found` / questions;
# 3. the median time to encode a question and to search the vectors (`ansel-lab dense-bench`);
# 4. the default cascade's P@1 with each retriever (eval-ask with its defaults), p50/p99 latency.
# Rows already in the .jsonl are kept, so the script resumes; REPORT_ONLY=1 rewrites the page.
# The machine is shared: every timing row records the 1-minute load average at its end.
# Needs data/squad-sent and the two indexes (bash scripts/bench-default-model.sh makes them).
set -euo pipefail
cd "$(dirname "$0")/.."
ansel=target/release/ansel
lab=target/release/ansel-lab
rows=${ROWS:-docs/results/dense-retrieval.jsonl}
questions=data/squad-sent/dev-ask.jsonl
model=${DENSE_MODEL:-minilm-l6-cosine}
touch "$rows"
# name|documents|the BM25-only index built from the same documents
indexes=(
  "squad-index-dev|data/squad-sent/dev-docs.jsonl|data/squad-index-dev"
  "ask-index-large|data/squad-sent/large-index-docs.jsonl|data/ask-index-large"
)
formats=(f32 f16 int8)

load1() { cut -d' ' -f1 /proc/loadavg; }
have() { python3 -c 'import json,sys; sys.exit(0 if any(all(json.loads(l).get(k)==v for k,v in zip(sys.argv[2::2], sys.argv[3::2])) for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$@"; }
# Appends stdin's JSON object to the rows with the given string fields (and the load average).
record() { python3 -c 'import json,sys; r=json.load(sys.stdin); f=dict(zip(sys.argv[1::2], sys.argv[2::2])); print(json.dumps({**f, **r, "load1": float(open("/proc/loadavg").read().split()[0])}))' "$@" >>"$rows"; }

build() { # name docs
  local name=$1 docs=$2 dir=data/$1-dense-f32 out
  if ! have stage build index "$name"; then
    [ -d "$dir" ] && { echo "$dir exists but no build row: remove it to rebuild" >&2; exit 1; }
    echo "== encoding $docs into $dir" >&2
    out=$(nice -n 10 "$ansel" index --index "$dir" --dense "$model" --dense-format f32 "$docs")
    echo "$out" >&2
    python3 -c '
import json, re, sys
out = sys.stdin.read()
m = re.search(r"indexed (\d+) documents, (\d+) sentences in ([0-9.]+) s", out)
print(json.dumps({"documents": int(m[1]), "sentences": int(m[2]), "seconds": float(m[3]),
                  "sentences_per_s": int(m[2]) / float(m[3]), "model": sys.argv[1]}))' "$model" <<<"$out" |
      record stage build index "$name"
  fi
}
derive_formats() { # name: the f32 index rewritten into the other formats
  local name=$1 format
  for format in f16 int8; do
    [ -d "data/$name-dense-$format" ] && continue
    rm -rf "data/$name-dense-$format.tmp"
    cp -r "data/$name-dense-f32" "data/$name-dense-$format.tmp"
    "$lab" dense-format --index "data/$name-dense-$format.tmp" --format "$format"
    mv "data/$name-dense-$format.tmp" "data/$name-dense-$format"
  done
}

if [ -z "${REPORT_ONLY:-}" ]; then
  [ -x "$ansel" ] && [ -x "$lab" ] || cargo build --release -q -p ansel -p ansel-lab
  for line in "${indexes[@]}"; do
    IFS='|' read -r name docs _ <<<"$line"
    build "$name" "$docs"
  done
  [ -n "${BUILD_ONLY:-}" ] && exit 0
  # Encoding cost that a shared machine does not distort: CPU seconds and peak memory of encoding
  # the dev documents again (into a folder removed after).
  if ! have stage encode-probe; then
    probe=$(mktemp -d)
    /usr/bin/time -f '%e %U %S %M' -o "$probe/time" "$ansel" index --index "$probe/index" \
      --dense "$model" --dense-format f32 data/squad-sent/dev-docs.jsonl >/dev/null 2>&1
    read -r wall user sys rss <"$probe/time"
    n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]+"/index/ansel-index.json"))["dense"]["count"])' "$probe")
    python3 -c 'import json,sys; w,u,s,r,n=map(float,sys.argv[1:]); print(json.dumps({"sentences": int(n), "seconds": w, "cpu_seconds": u+s, "sentences_per_cpu_s": n/(u+s), "max_rss_mb": r/1024}))' \
      "$wall" "$user" "$sys" "$rss" "$n" | record stage encode-probe index squad-index-dev
    rm -rf "$probe"
  fi
  for line in "${indexes[@]}"; do
    derive_formats "${line%%|*}"
  done
  # Recall@K: `found` of eval-ask retrieving K and looking at K (bench-default-model.sh's recipe;
  # the bm25 model only reorders the K retrieved, which recall@K ignores).
  for line in "${indexes[@]}"; do
    IFS='|' read -r name _ original <<<"$line"
    for k in 20 30 100; do
      for run in "bm25|$original|bm25 (BM25-only index)" \
        "bm25|data/$name-dense-f32|bm25" \
        "dense|data/$name-dense-f32|dense f32" "dense|data/$name-dense-f16|dense f16" \
        "dense|data/$name-dense-int8|dense int8" "hybrid|data/$name-dense-f32|hybrid f32" \
        "hybrid|data/$name-dense-f16|hybrid f16" "hybrid|data/$name-dense-int8|hybrid int8"; do
        IFS='|' read -r retriever index label <<<"$run"
        have stage recall index "$name" retrieval "$label" k "$k" && continue
        echo "== recall@$k $label over $name" >&2
        nice -n 10 "$ansel" eval-ask --index "$index" --questions "$questions" --retriever "$retriever" \
          --model bm25 --prune-model none --retrieve "$k" --top "$k" --json |
          record stage recall index "$name" retrieval "$label" k "$k"
      done
    done
  done
  # Costs: encoding a question, searching the vectors, the whole hybrid retrieval (not niced:
  # timed). The formats of an index are timed in one run, question by question in turn, so that
  # the load of a shared machine falls on each alike.
  for line in "${indexes[@]}"; do
    name=${line%%|*}
    have stage timing index "$name" && continue
    echo "== timing ${formats[*]} over $name" >&2
    "$lab" dense-bench $(for format in "${formats[@]}"; do echo --index "data/$name-dense-$format"; done) \
      --questions "$questions" >"$rows.tmp"
    while read -r json; do record stage timing index "$name" <<<"$json"; done <"$rows.tmp"
    rm -f "$rows.tmp"
  done
  # The cascade the page measured (the former default: BM25 20, the AS2-only student keeps 2, MPNet
  # reranks; PRUNE_MODEL / KEEP / RETRIEVE and another ROWS measure another) with each retriever,
  # over the chosen format.
  bash scripts/restore-model.sh minilm-l6-mpnet-distilled-int8
  cascade=(--prune-model "${PRUNE_MODEL:-minilm-l6-mpnet-distilled-int8}" --keep "${KEEP:-2}" --retrieve "${RETRIEVE:-20}")
  chosen=${CHOSEN_FORMAT:-$(python3 scripts/dense-retrieval-report.py "$rows" --choose)}
  echo "== storage format: $chosen" >&2
  for line in "${indexes[@]}"; do
    name=${line%%|*}
    for retriever in bm25 hybrid dense; do
      have stage cascade index "$name" retrieval "$retriever" && continue
      echo "== default cascade, $retriever retriever, over $name" >&2
      "$ansel" eval-ask --index "data/$name-dense-$chosen" --questions "$questions" \
        --retriever "$retriever" "${cascade[@]}" --json |
        record stage cascade index "$name" retrieval "$retriever" format "$chosen"
    done
  done
fi
python3 scripts/dense-retrieval-report.py "$rows" docs/results/dense-retrieval.md
