#!/usr/bin/env python3
"""A training mixture of ansel JSON-lines lists: from each source, a seeded sample of its questions
that have a relevant candidate, each list cut to at most M candidates (every relevant one kept,
the rest in their order), question ids prefixed with the source's tag so sources cannot collide.

    python3 bench/mix_lists.py --out MIX.jsonl TAG=FILE:N:M ...   # N 0: every answered question
"""
import argparse
import json
import os
import random
import sys


def sample(tag, path, n, m, rng):
    with open(path) as f:
        lists = [json.loads(line) for line in f if line.strip()]
    answered = [q for q in lists if any(c.get("label") for c in q["candidates"])]
    rng.shuffle(answered)
    chosen = answered[:n] if n else answered
    for q in chosen:
        cands = q["candidates"]
        keep = {i for i, c in enumerate(cands) if c.get("label")}
        for i in range(len(cands)):
            if len(keep) >= m:
                break
            keep.add(i)
        q["candidates"] = [c for i, c in enumerate(cands) if i in keep]
        q["id"] = f"{tag}:{q['id']}"
    return chosen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("sources", nargs="+", help="TAG=FILE:N:M")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    mixture, summary = [], {}
    for spec in args.sources:
        tag, rest = spec.split("=", 1)
        path, n, m = rest.rsplit(":", 2)
        part = sample(tag, path, int(n), int(m), rng)
        summary[tag] = {"file": path, "questions": len(part),
                        "pairs": sum(len(q["candidates"]) for q in part)}
        mixture += part
    rng.shuffle(mixture)
    with open(args.out + ".tmp", "w") as f:
        for q in mixture:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    os.replace(args.out + ".tmp", args.out)
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
