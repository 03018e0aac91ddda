#!/usr/bin/env python3
"""The general dev suite (issue 40): relevance that is not "the sentence holding a SQuAD span".

    python3 bench/general_suite.py build --squad SQUAD.json.gz --split SPLIT.json \
        [--trec-car LISTS.jsonl --trec-car-qrels QRELS] --out DIR
    python3 bench/general_suite.py train --squad SQUAD.json.gz --split SPLIT.json --out DIR \
        --questions N --k K     # squad-passage-train.jsonl: training lists of train articles only

Writes ansel JSON lines (one question a line, candidates in first-stage order, labels 0/1), built
only from dev material: SQuAD's *dev* articles of `ansel-lab squad-sent`'s split (split.json; its
test articles are never read, not even as distractors) and TREC CAR's dev article fold.

  squad-passage.jsonl   a dev question against the SQuAD paragraphs of train + dev articles,
                        BM25's top K (the question's own paragraph relevant): passage ranking
  squad-keyword.jsonl   the same questions as a web user types them (question words and stop words
                        dropped), BM25's top K for that query
  squad-long.jsonl      passages of 200-400 words (consecutive paragraphs of one article joined);
                        the passage holding the question's paragraph relevant; BM25's top K
  trec-car.jsonl        TREC CAR test200 outline queries (title + heading path) of the dev article
                        fold (articles whose title's CRC32 is even), BM25's top 40 paragraphs

BM25 here is Okapi BM25 (k1 0.9, b 0.4, as Anserini's MS MARCO runs) over lower-cased word tokens.
A question whose relevant passage BM25 does not retrieve is left out (counted in suite.json), as the
AS2 literature's "clean" lists do; every set is a seeded sample (seed 7).
"""
import argparse
import collections
import gzip
import json
import math
import random
import re
import sys
import zlib

TOKEN = re.compile(r"\w+", re.UNICODE)
# Question words and English stop words a web searcher leaves out.
STOP = set(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    whose why will with would you your yours yourself yourselves many much name called kind type one
    used use""".split()
)


def tokens(text):
    return TOKEN.findall(text.lower())


def keyword_query(question):
    """The question as keywords: its words minus question words and stop words, order kept."""
    words = [w for w in TOKEN.findall(question) if w.lower() not in STOP]
    return " ".join(words) if words else question


class Bm25:
    def __init__(self, texts, k1=0.9, b=0.4):
        self.k1, self.b = k1, b
        self.postings = collections.defaultdict(list)
        self.lengths = []
        for i, text in enumerate(texts):
            counts = collections.Counter(tokens(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((i, tf))
        self.n = len(texts)
        self.avg = sum(self.lengths) / max(self.n, 1)

    def top(self, query, k):
        scores = collections.defaultdict(float)
        for term in set(tokens(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (self.n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return [i for i, _ in sorted(scores.items(), key=lambda s: (-s[1], s[0]))[:k]]


def write(path, questions):
    with open(path, "w") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")


def ranked_lists(questions, passages, index, k, query_of, relevant_of):
    """`questions` against BM25's top `k` of `passages`; (lists, questions left out)."""
    out, missed = [], 0
    for q in questions:
        top = index.top(query_of(q), k)
        relevant = relevant_of(q)
        if not any(i in relevant for i in top):
            missed += 1
            continue
        cands = [
            {"id": passages[i]["id"], "text": passages[i]["text"], "label": i in relevant}
            for i in top
        ]
        out.append({"id": q["id"], "question": query_of(q), "candidates": cands})
    return out, missed


def squad_sets(args, summary):
    with gzip.open(args.squad, "rt") as f:
        data = json.load(f)["data"]
    split = json.load(open(args.split))
    dev_titles = set(split["splits"]["dev"]["titles"])
    test_titles = set(split["splits"]["test"]["titles"])
    if not dev_titles or dev_titles & test_titles:
        sys.exit(f"{args.split}: no dev titles, or dev and test share an article")
    paragraphs, long_passages, questions = [], [], []
    for a, article in enumerate(data):
        if article["title"] in test_titles:
            continue  # never read a test article, not even as a distractor
        words, joined, members = 0, [], []
        for p, para in enumerate(article["paragraphs"]):
            pid = len(paragraphs)
            paragraphs.append({"id": f"{a}-{p}", "text": para["context"], "article": a})
            if article["title"] in dev_titles:
                for qa in para["qas"]:
                    questions.append({"id": qa["id"], "question": qa["question"], "paragraph": pid})
            joined.append(para["context"])
            members.append(pid)
            words += len(para["context"].split())
            last = p == len(article["paragraphs"]) - 1
            if words >= 200 or last:
                if words >= 200 or not long_passages or long_passages[-1]["article"] != a:
                    long_passages.append(
                        {"id": f"{a}-L{len(long_passages)}", "text": " ".join(joined),
                         "article": a, "members": set(members)}
                    )
                else:  # a short tail joins the article's previous passage
                    prev = long_passages[-1]
                    prev["text"] += " " + " ".join(joined)
                    prev["members"] |= set(members)
                words, joined, members = 0, [], []
    rng = random.Random(7)
    rng.shuffle(questions)
    chosen = questions[: args.questions]
    print(f"{len(paragraphs)} paragraphs of {len(data) - len(test_titles)} train+dev articles, "
          f"{len(long_passages)} long passages, {len(questions)} dev questions", file=sys.stderr)
    by_paragraph = Bm25([p["text"] for p in paragraphs])
    own = lambda q: {q["paragraph"]}
    sets = {
        "squad-passage": ranked_lists(chosen, paragraphs, by_paragraph, args.k,
                                      lambda q: q["question"], own),
        "squad-keyword": ranked_lists(chosen, paragraphs, by_paragraph, args.k,
                                      lambda q: keyword_query(q["question"]), own),
    }
    holder = {}
    for i, lp in enumerate(long_passages):
        for m in lp["members"]:
            holder[m] = i
    by_long = Bm25([lp["text"] for lp in long_passages])
    sets["squad-long"] = ranked_lists(chosen[: args.long_questions], long_passages, by_long,
                                      args.long_k, lambda q: q["question"],
                                      lambda q: {holder[q["paragraph"]]})
    for name, (lists, missed) in sets.items():
        write(f"{args.out}/{name}.jsonl", lists)
        summary[name] = {"questions": len(lists), "left_out_not_retrieved": missed,
                         "candidates": sum(len(q["candidates"]) for q in lists)}


def squad_train_lists(args, summary):
    """Training lists for a general student (scripts/train-general-student.sh): questions of the
    split's *train* articles against BM25's top `k` of the train articles' paragraphs, half typed
    as questions and half as keywords. Dev and test articles are never read."""
    with gzip.open(args.squad, "rt") as f:
        data = json.load(f)["data"]
    train_titles = set(json.load(open(args.split))["splits"]["train"]["titles"])
    paragraphs, questions = [], []
    for a, article in enumerate(data):
        if article["title"] not in train_titles:
            continue
        for p, para in enumerate(article["paragraphs"]):
            pid = len(paragraphs)
            paragraphs.append({"id": f"{a}-{p}", "text": para["context"]})
            questions += [{"id": qa["id"], "question": qa["question"], "paragraph": pid}
                          for qa in para["qas"]]
    rng = random.Random(11)
    rng.shuffle(questions)
    n = args.questions
    index = Bm25([p["text"] for p in paragraphs])
    own = lambda q: {q["paragraph"]}
    natural, missed_n = ranked_lists(questions[:n], paragraphs, index, args.k,
                                     lambda q: q["question"], own)
    keyword, missed_k = ranked_lists(questions[n:2 * n], paragraphs, index, args.k,
                                     lambda q: keyword_query(q["question"]), own)
    for q in keyword:
        q["id"] = f"kw-{q['id']}"
    write(f"{args.out}/squad-passage-train.jsonl", natural + keyword)
    summary["squad-passage-train"] = {
        "questions": len(natural) + len(keyword), "articles": len(train_titles),
        "paragraphs": len(paragraphs), "left_out_not_retrieved": missed_n + missed_k,
        "candidates": sum(len(q["candidates"]) for q in natural + keyword)}


def trec_car_fold(lists_path, qrels_path, fold, n):
    """TREC CAR test200 lists (bench/trec_car_rerank.py lists) of one article fold ("dev": the
    articles whose title's CRC32 is even; "test": odd), labelled by the qrels, the queries with a
    relevant paragraph among their candidates in a seeded order, the first `n`."""
    lists = [json.loads(line) for line in open(lists_path)]
    qrels = set()
    for line in open(qrels_path):
        qid, _, pid, rel = line.split()
        if int(rel) > 0:
            qrels.add((qid, pid))
    out = []
    for q in lists:
        article = q["id"].split("/")[0]
        if zlib.crc32(article.encode()) % 2 != (fold == "test"):
            continue
        for c in q["candidates"]:
            c["label"] = (q["id"], c["id"]) in qrels
        if any(c["label"] for c in q["candidates"]):
            out.append(q)
    random.Random(7).shuffle(out)
    return out[:n]


def trec_car_set(args, summary):
    """The dev article fold of TREC CAR test200 lists."""
    dev = trec_car_fold(args.trec_car, args.trec_car_qrels, "dev", args.questions)
    write(f"{args.out}/trec-car.jsonl", dev)
    summary["trec-car"] = {"questions": len(dev), "candidates": sum(len(q["candidates"]) for q in dev)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["build", "train"])
    ap.add_argument("--squad", required=True)
    ap.add_argument("--split", required=True)
    ap.add_argument("--trec-car")
    ap.add_argument("--trec-car-qrels")
    ap.add_argument("--out", required=True)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--long-questions", type=int, default=150)
    ap.add_argument("--long-k", type=int, default=20)
    args = ap.parse_args()
    summary = {"seed": 7, "bm25": {"k1": 0.9, "b": 0.4}, "k": args.k, "long_k": args.long_k}
    if args.command == "train":
        summary["seed"] = 11
        squad_train_lists(args, summary)
        print(json.dumps(summary), file=sys.stderr)
        return
    squad_sets(args, summary)
    if args.trec_car:
        trec_car_set(args, summary)
    with open(f"{args.out}/suite.json", "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
