"""Scoring (question, candidate) tables on Apache Spark.

``score_pairs`` adds a score column to a DataFrame of pairs. Rows are grouped by question, so
that models that read a question's whole candidate list (fusions standardise scores per
question; ``wo-rr`` reads positions) score exactly as ``ansel rank`` does. Each Python worker
loads the model once and keeps it for every batch it is given.

Executors need the ``ansel`` package installed (``pip install ./bindings/python`` on every
node, or a wheel shipped with ``--py-files``/an environment archive) and the model directory at
the same path on every node (a shared file system, or ``SparkContext.addFile`` and a path under
``SparkFiles.getRootDirectory()``).
"""

from typing import Dict, Iterator, Optional, Sequence, Tuple

from ._ansel import DEFAULT_MODEL, Ranker

_RANKERS: Dict[Tuple[str, Optional[Tuple[str, ...]]], Ranker] = {}

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
