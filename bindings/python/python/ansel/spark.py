"""Scoring (question, candidate) tables, and encoding sentences for an index, on Apache Spark.

``score_pairs`` adds a score column to a DataFrame of pairs. Rows are grouped by question, so
that models that read a question's whole candidate list (fusions standardise scores per
question; ``wo-rr`` reads positions) score exactly as ``ansel rank`` does. Each Python worker
loads the model once and keeps it for every batch it is given.

``units`` splits a table of documents into the sentences (or passages) ``ansel index`` makes of
them, and ``encode_units`` writes their vectors to ``.ansel-vectors`` files that ``ansel index
--dense MODEL --vectors DIR`` (or ``Index.add_files(..., vectors=[DIR])``) stores instead of
encoding the texts again: the encoding of a corpus too large for one machine spreads over the
cluster, and the index is then built where it will be served.

Executors need the ``ansel`` package installed (``pip install ./bindings/python`` on every
node, or a wheel shipped with ``--py-files``/an environment archive) and the model directory at
the same path on every node (a shared file system, or ``SparkContext.addFile`` and a path under
``SparkFiles.getRootDirectory()``).
"""

import os
import uuid
from typing import Dict, Iterator, Optional, Sequence, Tuple

from ._ansel import DEFAULT_MODEL, Encoder, Ranker, units as _unit_texts

_RANKERS: Dict[Tuple[str, Optional[Tuple[str, ...]]], Ranker] = {}
_ENCODERS: Dict[str, Encoder] = {}

_ROW = "_ansel_row"


def _ranker(model: str, corpus: Optional[Tuple[str, ...]]) -> Ranker:
    """The worker process's ranker for `model` (loaded on first use, then kept)."""
    key = (model, corpus)
    if key not in _RANKERS:
        _RANKERS[key] = Ranker(model, corpus=list(corpus) if corpus is not None else None)
    return _RANKERS[key]


def score_frame(pdf, ranker: Ranker, question_id: str, question: str, text: str,
                in_document_order: bool, score: str):
    """Scores a pandas frame whose rows of each question are contiguous and in order."""
    import numpy as np

    ids = pdf[question_id].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.array([], int)
    ends = np.r_[starts[1:], len(ids)]
    questions = pdf[question].to_numpy()
    texts = pdf[text].to_numpy()
    scores = ranker.score_batch(
        [str(questions[s]) for s in starts],
        [[str(t) for t in texts[s:e]] for s, e in zip(starts, ends)],
        in_document_order=in_document_order,
    )
    out = pdf.copy()
    out[score] = np.concatenate(scores).astype("float64") if scores else np.array([], "float64")
    return out


def score_pairs(df, model: str = DEFAULT_MODEL, *, question_id: str = "qid",
                question: str = "question", text: str = "text", order: Optional[str] = None,
                in_document_order: bool = False, corpus: Optional[Sequence[str]] = None,
                score: str = "score"):
    """``df`` with a ``score`` column (double) added by ``model``.

    ``question_id`` groups the rows of one question; ``order`` (a column) orders each question's
    candidates, else the order they have in ``df``. ``in_document_order``: each question's
    candidates are one document's sentences in that order. ``corpus``: term statistics for
    ``idf-wo`` and ``bm25``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StructField, StructType

    corpus_key = tuple(corpus) if corpus is not None else None
    if order is None:
        df = df.withColumn(_ROW, F.monotonically_increasing_id())
        order = _ROW
    out_schema = StructType(
        [f for f in df.schema.fields if f.name != _ROW] + [StructField(score, DoubleType())]
    )
    rows = df.repartition(question_id).sortWithinPartitions(question_id, order)

    def score_batches(batches: Iterator) -> Iterator:
        import pandas as pd

        ranker = _ranker(model, corpus_key)

        def scored(frame):
            return score_frame(frame, ranker, question_id, question, text, in_document_order,
                               score).drop(columns=[_ROW], errors="ignore")

        carry = None
        for pdf in batches:
            if carry is not None:
                pdf = pd.concat([carry, pdf], ignore_index=True)
            # The last question may go on in the next batch: keep it until it is whole.
            last = pdf[question_id].iloc[-1] if len(pdf) else None
            tail = pdf[question_id] == last
            carry = pdf[tail]
            done = pdf[~tail]
            if len(done):
                yield scored(done)
        if carry is not None and len(carry):
            yield scored(carry)

    return rows.mapInPandas(score_batches, out_schema)


def units(df, *, id: str = "id", title: Optional[str] = "title", text: str = "text",
          unit: str = "sentence"):
    """One row per text ``ansel index`` makes of each document of ``df``: columns ``id``,
    ``position`` (the text's place in its document) and ``text``. ``title``: the documents'
    title column (``None``: untitled); passages (``unit="passage"``) begin with it."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    if unit not in ("sentence", "passage"):
        raise ValueError(f'unit: {unit!r} is not "sentence" or "passage"')
    columns = [id, text] + ([title] if title else [])
    schema = StructType([StructField(id, StringType()), StructField("position", LongType()),
                         StructField("text", StringType())])

    def split(batches: Iterator) -> Iterator:
        import pandas as pd

        for pdf in batches:
            titles = pdf[title] if title else [None] * len(pdf)
            rows = [
                (str(doc_id), position, piece)
                for doc_id, doc_title, doc_text in zip(pdf[id], titles, pdf[text])
                for position, piece in enumerate(
                    _unit_texts(str(doc_text), title=str(doc_title or ""), unit=unit))
            ]
            yield pd.DataFrame(rows, columns=[id, "position", "text"])

    return df.select(*columns).mapInPandas(split, schema)


def _encoder(model: str) -> Encoder:
    """The worker process's encoder for `model` (loaded on first use, then kept)."""
    if model not in _ENCODERS:
        _ENCODERS[model] = Encoder(model)
    return _ENCODERS[model]


def encode_units(df, model: str, out: str, *, text: str = "text", batch: int = 32):
    """Writes the vectors of ``df``'s ``text`` column, made by the sentence encoder ``model``,
    to ``.ansel-vectors`` files in the folder ``out`` (which every executor must be able to write:
    a shared file system), one file per batch of rows. Returns a DataFrame with a row per file
    written (``file``, ``vectors``); like every Spark transformation it runs when an action
    (``collect()``, ``count()``) asks for it.

    A file is renamed into place only when complete, and a text's vector depends only on the
    text, so a retried task at worst writes a second file with the same vectors, which the index
    takes once."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("file", StringType()), StructField("vectors", LongType())])

    def encode(batches: Iterator) -> Iterator:
        import pandas as pd

        encoder = _encoder(model)
        os.makedirs(out, exist_ok=True)
        for pdf in batches:
            texts = [str(t) for t in pdf[text]]
            if not texts:
                continue
            path = os.path.join(out, f"part-{uuid.uuid4().hex}.ansel-vectors")
            written = encoder.write_vectors(path, texts, batch)
            yield pd.DataFrame({"file": [path], "vectors": [written]})

    return df.select(text).mapInPandas(encode, schema)
