"""Writes the documents of the ~100k-sentence index the default cascade is chosen and timed on, as
`ansel index` JSON lines ({"id", "title", "text"}): every SQuAD v1.1 train article (paragraphs
separated by blank lines), then every WikiQA document (its sentences in order), all Wikipedia text.
The held-out SQuAD dev/test articles get the same ids and text as `ansel-lab squad-sent`'s
{dev,test}-docs.jsonl (id = title), so their questions are judged the same way; WikiQA documents
get ids `wikiqa:DOCUMENT_ID`, one paragraph a sentence (WikiQA sentences need not end in a stop).

    python3 bench/ask_index_docs.py SQUAD_JSON_GZ WIKIQA_DIR > OUT.jsonl
"""
import csv
import gzip
import json
import os
import sys

squad_path, wikiqa_dir = sys.argv[1], sys.argv[2]
with gzip.open(squad_path, "rt", encoding="utf-8") as f:
    articles = json.load(f)["data"]
for article in articles:
    text = "\n\n".join(p["context"] for p in article["paragraphs"])
    print(json.dumps({"id": article["title"], "title": article["title"], "text": text}, ensure_ascii=False))

documents = {}  # id -> (title, {sentence number: sentence})
for split in ["train", "dev", "test"]:
    with open(os.path.join(wikiqa_dir, f"WikiQA-{split}.tsv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            title, sentences = documents.setdefault(row["DocumentID"], (row["DocumentTitle"], {}))
            sentences[int(row["SentenceID"].rsplit("-", 1)[1])] = row["Sentence"]
for doc_id, (title, sentences) in documents.items():
    text = "\n\n".join(sentences[i] for i in sorted(sentences))
    print(json.dumps({"id": f"wikiqa:{doc_id}", "title": title, "text": text}, ensure_ascii=False))
