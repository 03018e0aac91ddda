"""Shallow parse of every distinct question and candidate text in ansel JSON lines, with spaCy's
en_core_web_md (vendor/models/spacy-en-md), for the tree-kernel model's shallow chunk trees.

    scripts/spacy-venv.sh   # once: target/spacy-venv with pinned spaCy
    target/spacy-venv/bin/python scripts/parse-shallow.py IN.jsonl [IN2.jsonl ...] --out OUT.jsonl \
        [--model vendor/models/spacy-en-md] [--batch 256]

Input lines: {"question" (or "text"): str, "candidates": [{"text": str, ...}, ...], ...}; .gz is read too.
Output: one line per distinct text, sorted by text, written atomically:
    {"text": str, "tokens": [[lemma (lowercased), PTB tag, UD pos, chunk, entity type or ""], ...]}
chunk: B-NP/I-NP inside a noun chunk, else VP (VERB, AUX), PP (ADP), ADJP (ADJ), ADVP (ADV), O.
Punctuation (UD PUNCT) and whitespace tokens are left out; at most the first 100 kept tokens.
TrecQA's number placeholder "<num>" is kept as one token tagged CD/NUM (spaCy splits it in three),
and its PTB escapes (-LRB- ... -RCB-, ``) are single PUNCT tokens, so they are left out too.
"""
import argparse, gzip, json, os, sys, time

MAX_TOKENS = 100
PHRASE = {"VERB": "VP", "AUX": "VP", "ADP": "PP", "ADJ": "ADJP", "ADV": "ADVP"}
# TrecQA is PTB-tokenized text: keep its escapes and its number placeholder whole, with fixed tags.
FIXED = {"<num>": ("CD", "NUM"), "``": ("``", "PUNCT"), "''": ("''", "PUNCT")}
FIXED.update({f"-{b}B-": ("-LRB-" if b[0] == "L" else "-RRB-", "PUNCT") for b in ("LR", "RR", "LS", "RS", "LC", "RC")})


def read_texts(paths):
    texts, records = set(), 0
    for path in paths:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                records += 1
                q = rec.get("question", rec.get("text"))
                if isinstance(q, str):
                    texts.add(q)
                for c in rec.get("candidates") or []:
                    t = c.get("text", c.get("sentence"))
                    if isinstance(t, str):
                        texts.add(t)
    return texts, records


def kept(t):
    return not (t.is_space or t.pos_ in ("PUNCT", "SPACE") or not t.text.strip())


def shallow(doc):
    """The token rows of doc, and whether it had more than MAX_TOKENS kept tokens."""
    chunk = {}
    for span in doc.noun_chunks:
        for t in span:
            chunk[t.i] = span.start
    out, seen = [], set()
    for t in doc:
        if not kept(t):
            continue
        if len(out) == MAX_TOKENS:
            return out, True
        if t.i in chunk:
            tag = "I-NP" if chunk[t.i] in seen else "B-NP"
            seen.add(chunk[t.i])
        else:
            tag = PHRASE.get(t.pos_, "O")
        out.append([(t.lemma_ or t.text).lower(), t.tag_, t.pos_, tag, t.ent_type_])
    return out, False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="vendor/models/spacy-en-md")
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()

    t0 = time.time()
    texts, records = read_texts(args.inputs)
    texts = sorted(texts)
    import spacy

    nlp = spacy.load(args.model)  # tok2vec, tagger, parser, attribute_ruler, lemmatizer, ner
    for orth, (tag, pos) in FIXED.items():
        nlp.tokenizer.add_special_case(orth, [{"ORTH": orth}])
        nlp.get_pipe("attribute_ruler").add([[{"ORTH": orth}]], {"TAG": tag, "POS": pos})
    t1 = time.time()
    print(f"{records} records, {len(texts)} distinct texts from {len(args.inputs)} files; "
          f"spaCy {spacy.__version__}, pipes {nlp.pipe_names} ({t1 - t0:.1f}s)", file=sys.stderr)

    tmp = f"{args.out}.tmp.{os.getpid()}"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    n_tok = n_cut = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for i, (text, doc) in enumerate(zip(texts, nlp.pipe(texts, batch_size=args.batch))):
            toks, cut = shallow(doc)
            n_tok, n_cut = n_tok + len(toks), n_cut + cut
            f.write(json.dumps({"text": text, "tokens": toks}, ensure_ascii=False) + "\n")
            if (i + 1) % 10000 == 0:
                print(f"  {i + 1}/{len(texts)} ({time.time() - t1:.0f}s)", file=sys.stderr)
    os.replace(tmp, args.out)
    t2 = time.time()
    print(f"wrote {len(texts)} texts, {n_tok} tokens ({n_cut} texts cut to {MAX_TOKENS}) to {args.out}; "
          f"parse {t2 - t1:.1f}s, total {t2 - t0:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
