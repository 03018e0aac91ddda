#!/usr/bin/env python3
"""TREC CAR reference row: a cross-encoder of this project reranks BM25's top paragraphs per outline query.

    python3 bench/trec_car_rerank.py lists PARAGRAPHS.cbor RUN.gz OUT.jsonl
        ansel JSON lines, one per query of RUN (the query: title and heading path from its id, as
        STNet's queries read; candidates: its retrieved paragraphs' texts, in BM25's order)
    python3 bench/trec_car_rerank.py run SCORES.jsonl TAG OUT.run
        `ansel rank`'s scores of those lists as a trec_eval run, best first

The model is used as it is (zero-shot: no TREC CAR training); paragraphs are cut at the model's
max_len like any candidate. Needs cbor2 for `lists`.
"""
import gzip
import json
import sys
import urllib.parse


def paragraph_texts(path):
    import cbor2

    texts = {}
    with open(path, "rb") as f:
        decoder = cbor2.CBORDecoder(f)
        while True:
            try:
                record = decoder.decode()
            except (EOFError, cbor2.CBORDecodeEOF):
                return texts
            # [0, id, [body...]]; a body is [0, text] or a link [1, [0, page, ..., anchor text]].
            _, pid, bodies = record
            words = (b[1] if b[0] == 0 else b[1][-1] for b in bodies)
            texts[pid.decode() if isinstance(pid, bytes) else pid] = "".join(words)


def query_text(qid):
    """`Title/Heading/Sub` (URL-encoded) as the words of the title and heading path."""
    return " ".join(urllib.parse.unquote(part) for part in qid.split("/"))


def lists(paragraphs, run, out):
    texts = paragraph_texts(paragraphs)
    queries = {}
    with gzip.open(run, "rt") as f:
        for line in f:
            qid, _, pid, rank, _, _ = line.split()
            queries.setdefault(qid, []).append((int(rank), pid))
    with open(out, "w") as f:
        for qid, ranked in queries.items():
            cands = [{"id": pid, "text": texts[pid]} for _, pid in sorted(ranked)]
            f.write(json.dumps({"id": qid, "question": query_text(qid), "candidates": cands}) + "\n")
    print(f"{len(queries)} queries, {sum(len(r) for r in queries.values())} paragraphs -> {out}")


def run_file(scores, tag, out):
    with open(scores) as f, open(out, "w") as o:
        for line in f:
            q = json.loads(line)
            ranked = sorted(q["scores"], key=lambda s: -s["score"])
            for rank, s in enumerate(ranked, 1):
                o.write(f"{q['id']} Q0 {s['id']} {rank} {s['score']:.6f} {tag}\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["lists"]:
        lists(*sys.argv[2:5])
    elif sys.argv[1:2] == ["run"]:
        run_file(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
