#!/usr/bin/env python3
"""Would letting the span reader reorder `ask`'s first answers help? A grid over `eval-ask --answers-out`.

    cp -r models/minilm-l6-squad-span-int8 /tmp/reader-open     # then set "abstain_below": 0 in
                                                                # /tmp/reader-open/calibration.json
    ansel eval-ask --index data/squad-index-dev --questions data/squad-sent/dev-ask.jsonl \
      --reader /tmp/reader-open --spans 3 --answers-out /tmp/dev-answers.jsonl
    python3 bench/reader_reorder.py /tmp/dev-answers.jsonl 0.25

With every span shown (threshold 0 on the copy), the first answer is chosen among the first K by
logit(the reranker's probability) + alpha * logit(the span's probability); alpha 0 is `ask` as it is.
Its span counts (SQuAD's EM and token F1 against the expected answer) when its probability reaches
THRESHOLD (the shipped reader's), as `eval-ask` counts it. Dev questions only.
"""
import collections
import json
import math
import re
import string
import sys


def normalize(text):
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def f1(prediction, gold):
    p, g = normalize(prediction).split(), normalize(gold).split()
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def logit(p):
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    threshold = float(sys.argv[2])
    n = len(rows)
    # "expected": the question's references (eval-ask writes a list; a string is one reference).
    for r in rows:
        if isinstance(r["expected"], str):
            r["expected"] = [r["expected"]]
    holds = lambda answer, row: any(gold in answer["text"] for gold in row["expected"])
    at = [sum(len(r["answers"]) > i and holds(r["answers"][i], r) for r in rows) for i in range(3)]
    print(f"{n} questions; the expected answer in the answer at rank 1/2/3: {at[0]}/{at[1]}/{at[2]}")
    print("K | alpha | P@1 | span EM | span F1 | spans shown")
    for k in (2, 3):
        for alpha in (0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3):
            p1 = em = f = shown = 0

            def key(a):
                span = a.get("span") or {}
                return logit(a.get("probability") or 0) + alpha * logit(span.get("score", 0))

            for r in rows:
                first = max(r["answers"][:k], key=key) if alpha else r["answers"][0]
                p1 += holds(first, r)
                span = first.get("span")
                if span and span["score"] >= threshold:
                    shown += 1
                    em += any(normalize(span["text"]) == normalize(g) for g in r["expected"])
                    f += max(f1(span["text"], g) for g in r["expected"])
            print(f"{k} | {alpha} | {p1 / n:.3f} | {em / n:.3f} | {f / n:.3f} | {shown}")


if __name__ == "__main__":
    main()
