#!/usr/bin/env bash
# The scale benchmark (issue 43): docs/results/scale.{md,jsonl}.
# Per size (SIZES="117k 1m 10m"; 117k is the natural text alone, the 118k index of dense-retrieval.md):
# 1. the corpus: the natural documents, then distractors (bench/scale_corpus.py says how, and why
#    no answer is in them), in shards of 100k sentences;
# 2. a BM25 index and a dense one (minilm-l6-cosine int8 ONNX vectors, with the HNSW graph), built
#    shard by shard under /usr/bin/time: wall seconds and peak RSS per shard, disk at the end. A
#    shard is one `ansel index` run, so a stopped build resumes at the next shard (DENSE=0 skips
#    the dense index, whose encoding takes hours on 2 cores);
# 3. `ansel eval-ask` over the 500 SQuAD dev questions of held-out articles (their articles are in
#    every index): P@1, R@20 (the answer among those retrieved), p50/p99 and peak RSS, for bm25 and,
#    once the dense index is whole, dense and hybrid;
# 4. `ansel-lab graph-bench`: the graph's recall@100/@20 against the exact search, and search times;
#    bench/ann-compare: usearch (what ansel builds) against hnsw_rs on the same vectors.
# Rows already in the .jsonl are kept (the script resumes); REPORT_ONLY=1 rewrites the page.
set -euo pipefail
# The whole script is one function, read before it runs: editing the file while a long run goes on
# cannot change what that run does.
main() {
cd "$(dirname "$0")/.."
ansel=target/release/ansel
lab=target/release/ansel-lab
rows=${ROWS:-docs/results/scale.jsonl}
questions=data/squad-sent/dev-ask.jsonl
encoder=${DENSE_MODEL:-vendor/models/minilm-l6-cosine-int8}
# The cascade measured: `ask`'s default (BM25 16, the general student keeps 3, MPNet reranks:
# DEFAULT_RETRIEVE, DEFAULT_PRUNE_MODEL, DEFAULT_KEEP), or the one PRUNE_MODEL, KEEP and RETRIEVE
# name (the former default: minilm-l6-mpnet-distilled-int8, 2, 20). Rows are kept per cascade.
prune=${PRUNE_MODEL:-minilm-l6-general-distilled-int8} keep=${KEEP:-3} retrieve=${RETRIEVE:-16}
cascade=(--prune-model "$prune" --keep "$keep" --retrieve "$retrieve")
[ "$prune" = minilm-l6-mpnet-distilled-int8 ] && bash scripts/restore-model.sh "$prune"
work=target/scale
touch "$rows"
mkdir -p "$work"

have() { python3 -c 'import json,sys; sys.exit(0 if any(all(str(json.loads(l).get(k))==v for k,v in zip(sys.argv[2::2], sys.argv[3::2])) for l in open(sys.argv[1]) if l.strip()) else 1)' "$rows" "$@"; }
# Appends stdin's JSON object to the rows with the given string fields (and the load average).
record() { python3 -c 'import json,sys; r=json.load(sys.stdin); f=dict(zip(sys.argv[1::2], sys.argv[2::2])); print(json.dumps({**f, **r, "load1": float(open("/proc/loadavg").read().split()[0])}))' "$@" >>"$rows"; }
# Runs a command under /usr/bin/time; prints {"seconds", "peak_rss_mb"} (its stdout goes to $1).
timed() {
  local out=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$out"
  python3 -c 'import json,sys; s,m=open(sys.argv[1]).read().split()[-2:]; print(json.dumps({"seconds": float(s), "peak_rss_mb": round(int(m)/1024)}))' "$work/time"
}

[ -f data/squad-sent/dev-docs.jsonl ] || bash scripts/bench-default-model.sh
[ -x "$lab" ] || cargo build --release -q -p ansel-lab

build() { # size kind(bm25|dense) shards...
  local size=$1 kind=$2 dir=$work/$1-$2
  shift 2
  local flags=()
  [ "$kind" = dense ] && flags=(--dense "$encoder")
  for shard in "$@"; do
    local name
    name=$(basename "$shard")
    have stage build size "$size" index "$kind" shard "$name" && continue
    echo "== $size $kind: $name" >&2
    timed "$work/out" nice -n 5 "$ansel" index --index "$dir" "${flags[@]}" "$shard" |
      record stage build size "$size" index "$kind" shard "$name"
    flags=()  # the index records its encoder
    cat "$work/out" >&2
  done
  if ! have stage disk size "$size" index "$kind"; then
    python3 - "$dir" <<'PY' | record stage disk size "$size" index "$kind"
import json, os, sys
d = sys.argv[1]
path = os.path.join(d, "ansel-index.json")
settings = json.load(open(path)) if os.path.exists(path) else {}
files = {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f))}
dense = settings.get("dense") or {}
graph = (dense.get("graph") or {}).get("file")
vec = sum(s for f, s in files.items() if f.startswith("vectors-"))
print(json.dumps({"disk_mb": round(sum(files.values()) / 1e6, 1), "vectors_mb": round(vec / 1e6, 1),
                  "graph_mb": round(files.get(graph, 0) / 1e6, 1), "vectors": dense.get("count", 0),
                  "graph_vectors": (dense.get("graph") or {}).get("rows", 0)}))
PY
  fi
}

evaluate() { # size kind retriever
  local size=$1 kind=$2 retriever=$3
  have stage ask size "$size" index "$kind" retriever "$retriever" prune_model "$prune" keep "$keep" \
    retrieve "$retrieve" && return
  echo "== $size: eval-ask --retriever $retriever" >&2
  local cost
  cost=$(timed "$work/ask.json" "$ansel" eval-ask --index "$work/$size-$kind" --questions "$questions" \
    --retriever "$retriever" "${cascade[@]}" --reader none --json)
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); c=json.loads(sys.argv[2]); a["R@20"]=a["found"]/a["questions"]; a["eval_peak_rss_mb"]=c["peak_rss_mb"]; print(json.dumps(a))' \
    "$work/ask.json" "$cost" | record stage ask size "$size" index "$kind" retriever "$retriever"
}

if [ -z "${REPORT_ONLY:-}" ]; then
  # The encoding rate of `index --dense`: the 4161 sentences of the dev articles, one text a run
  # (ANSEL_INT8_BATCH=1, as before) against the default batches, back to back, three rounds.
  for round in 1 2 3; do
    for batch in 1 default; do
      have stage encode-rate batch "$batch" round "$round" && continue
      rm -rf "$work/encode-probe"
      settings=()
      [ "$batch" = 1 ] && settings=(ANSEL_INT8_BATCH=1)
      env "${settings[@]}" /usr/bin/time -f '%e %U %S %M' -o "$work/encode-time" "$ansel" index \
        --index "$work/encode-probe" --dense "$encoder" data/squad-sent/dev-docs.jsonl >/dev/null
      python3 -c 'import json,sys; e,u,s,m=map(float, open(sys.argv[1]).read().split()[-4:]); n=json.load(open(sys.argv[2]))["dense"]["count"]; print(json.dumps({"sentences": n, "wall_s": e, "cpu_s": u+s, "sentences_per_s": n/e, "sentences_per_cpu_s": n/(u+s), "peak_rss_mb": round(m/1024)}))' \
        "$work/encode-time" "$work/encode-probe/ansel-index.json" | record stage encode-rate batch "$batch" round "$round"
    done
  done
  # Encoding elsewhere: the same sentences encoded on Spark (local[2]) into precomputed vector
  # files, then `index --vectors` storing them without encoding (issue 43).
  if ! have stage spark-encode; then
    venv=target/python-venv
    "$venv/bin/python" -c 'import pyspark, ansel.spark' 2>/dev/null || bash scripts/test-spark.sh >&2
    rm -rf "$work/spark-vectors" "$work/spark-probe"
    "$venv/bin/python" bench/spark_encode.py data/squad-sent/dev-docs.jsonl "$encoder" \
      "$work/spark-vectors" | record stage spark-encode
    timed "$work/out" "$ansel" index --index "$work/spark-probe" --dense "$encoder" \
      --vectors "$work/spark-vectors" data/squad-sent/dev-docs.jsonl | record stage index-precomputed
    cat "$work/out" >&2
  fi
  for size in ${SIZES:-117k 1m}; do
    case $size in
      117k) sentences=1 ;;  # the natural documents alone
      1m) sentences=1000000 ;;
      10m) sentences=10000000 ;;
      *) echo "unknown size $size (1m or 10m)" >&2; exit 1 ;;
    esac
    corpus=$work/corpus-$size
    if [ ! -f "$corpus/corpus.json" ]; then
      python3 bench/scale_corpus.py --natural data/squad-sent/large-index-docs.jsonl \
        --held-out data/squad-sent/dev-docs.jsonl --questions "$questions" \
        --sentences "$sentences" --out "$corpus"
    fi
    have stage corpus size "$size" || record stage corpus size "$size" <"$corpus/corpus.json"
    mapfile -t shards < <(ls "$corpus"/shard-*.jsonl)
    build "$size" bm25 "${shards[@]}"
    evaluate "$size" bm25 bm25
    [ "${DENSE:-1}" = 0 ] && continue
    build "$size" dense "${shards[@]}"
    evaluate "$size" dense dense
    evaluate "$size" dense hybrid
    if ! have stage graph size "$size"; then
      "$lab" graph-bench --index "$work/$size-dense" --questions "$questions" \
        --dump-queries "$work/queries.f32" >"$work/graph.jsonl"
      while read -r json; do record stage graph size "$size" <<<"$json"; done <"$work/graph.jsonl"
    fi
    # Two HNSW crates on the same vectors (bench/ann-compare, outside the workspace); at 117k only
    # by default (ANN_COMPARE_SIZES): hnsw_rs took 192 s to build 117k vectors.
    if [[ " ${ANN_COMPARE_SIZES:-117k} " == *" $size "* ]] && ! have stage ann-compare size "$size"; then
      [ -f "$work/queries.f32" ] || "$lab" graph-bench --index "$work/$size-dense" \
        --questions "$questions" --dump-queries "$work/queries.f32" >/dev/null
      cargo build --release -q --manifest-path bench/ann-compare/Cargo.toml
      bench/ann-compare/target/release/ann-compare "$work/$size-dense" "$work/queries.f32" 200 \
        >"$work/ann.jsonl"
      while read -r json; do record stage ann-compare size "$size" <<<"$json"; done <"$work/ann.jsonl"
    fi
  done
fi
python3 scripts/scale-report.py "$rows" docs/results/scale.md
}
main "$@"; exit $?
