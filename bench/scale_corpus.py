"""The scale benchmark's corpus (issue 43): the natural documents of the 118k-sentence index, then
distractor documents up to a number of sentences, written as JSON-lines shards.

A distractor document is a natural one (any article but the held-out dev articles the questions
come from) whose sentences keep their words but not their facts: every number and every
capitalised word after the first is replaced by one drawn at random from all such tokens of the
source text. A distractor sentence that contains the answer of any benchmark question
(case-insensitively: how `ansel eval-ask` judges a sentence) is dropped, so no answer is in the
distractors and a question is answered only by natural text.

    python3 bench/scale_corpus.py --natural data/squad-sent/large-index-docs.jsonl \
        --held-out data/squad-sent/dev-docs.jsonl --questions data/squad-sent/dev-ask.jsonl \
        --sentences 1000000 --shard-sentences 100000 --out target/scale/corpus-1m
Deterministic for a given seed.
"""

import argparse
import json
import os
import random
import re

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
TOKEN = re.compile(r"\S+")
NUMBER = re.compile(r"^\d[\d,.]*$")


def sentences(text):
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def kind(token, first):
    core = token.strip(".,;:!?\"'()[]")
    if not core:
        return None, core
    if NUMBER.match(core):
        return "number", core
    if not first and core[0].isupper():
        return "name", core
    return None, core


class AnswerFinder:
    """Whether a text contains any of the answers (as substrings): the answers are looked up by
    their first four characters at every position of the text, then compared whole."""

    GRAM = 4

    def __init__(self, answers):
        self.short = [a for a in answers if len(a) < self.GRAM]
        self.by_gram = {}
        for a in answers:
            if len(a) >= self.GRAM:
                self.by_gram.setdefault(a[: self.GRAM], []).append(a)

    def __call__(self, text):
        if any(a in text for a in self.short):
            return True
        for i in range(len(text) - self.GRAM + 1):
            for a in self.by_gram.get(text[i : i + self.GRAM], ()):
                if text.startswith(a, i):
                    return True
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--natural", required=True, help="JSON lines {id, title, text}: indexed as they are")
    p.add_argument("--held-out", required=True, help="documents never used as a distractor source")
    p.add_argument("--questions", required=True, help="JSON lines {question, answer}")
    p.add_argument("--sentences", type=int, required=True, help="sentences in all (natural ones first)")
    p.add_argument("--shard-sentences", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", required=True)
    args = p.parse_args()

    rng = random.Random(args.seed)
    held_out = {json.loads(l)["id"] for l in open(args.held_out) if l.strip()}
    answers = sorted({json.loads(l)["answer"].lower() for l in open(args.questions) if l.strip()})
    holds_answer = AnswerFinder([a for a in answers if a])
    natural = [json.loads(l) for l in open(args.natural) if l.strip()]
    sources = [d for d in natural if d["id"] not in held_out]
    pools = {"number": [], "name": []}
    split = []
    for d in sources:
        doc_sentences = sentences(d["text"])
        split.append((d["title"], doc_sentences))
        for s in doc_sentences:
            for i, token in enumerate(TOKEN.findall(s)):
                k, core = kind(token, i == 0)
                if k:
                    pools[k].append(core)

    os.makedirs(args.out, exist_ok=True)
    stats = {"natural_documents": len(natural), "natural_sentences": 0, "distractor_documents": 0,
             "distractor_sentences": 0, "dropped_for_an_answer": 0, "shards": []}
    shard, in_shard, out = 0, 0, None

    def write(doc, n):
        nonlocal shard, in_shard, out
        if out is None or in_shard >= args.shard_sentences:
            if out:
                out.close()
            name = f"shard-{len(stats['shards']):04d}.jsonl"
            stats["shards"].append(name)
            out = open(os.path.join(args.out, name + ".tmp"), "w")
            in_shard = 0
        out.write(json.dumps(doc, ensure_ascii=False) + "\n")
        in_shard += n

    total = 0
    for d in natural:
        n = len(sentences(d["text"]))
        write(d, n)
        total += n
    stats["natural_sentences"] = total
    serial = 0
    while total < args.sentences:
        title, source = split[rng.randrange(len(split))]
        made = []
        for s in source:
            words = []
            for i, token in enumerate(TOKEN.findall(s)):
                k, core = kind(token, i == 0)
                words.append(token.replace(core, rng.choice(pools[k])) if k else token)
            sentence = " ".join(words)
            if holds_answer(sentence.lower()):
                stats["dropped_for_an_answer"] += 1
                continue
            made.append(sentence)
        made = made[: args.sentences - total]
        if not made:
            continue
        serial += 1
        write({"id": f"distractor-{serial:08d}", "title": title, "text": " ".join(made)}, len(made))
        total += len(made)
        stats["distractor_documents"] += 1
        stats["distractor_sentences"] += len(made)
    out.close()
    for name in stats["shards"]:
        os.replace(os.path.join(args.out, name + ".tmp"), os.path.join(args.out, name))
    stats.update(seed=args.seed, sentences=total)
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump(stats, f, indent=1)
    print(json.dumps({k: v for k, v in stats.items() if k != "shards"}))


if __name__ == "__main__":
    main()
