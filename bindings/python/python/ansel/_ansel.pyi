from os import PathLike
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, TypedDict, Union

__version__: str
DEFAULT_MODEL: str
"""The model `Ranker()` uses when none is named (the CLI's `rank` default)."""
DEFAULT_ASK_MODEL: str
"""The answer model `Index()` uses when none is named (the CLI's `ask` default)."""

class AnselError(Exception):
    """An error from ansel: the same message the command line prints (file, line, field)."""

class Span(TypedDict):
    """The words of an answer's text that answer the question: `text[start:end]` (character
    offsets), and the span reader's probability that they are the answer."""

    text: str
    start: int
    end: int
    score: float

class Answer(TypedDict):
    text: str
    score: float
    stage: str
    title: str
    doc_id: str
    position: int
    prev: Optional[str]
    next: Optional[str]
    span: Optional[Span]

class Ranker:
    """Scores candidate texts for a question with one model spec.

    `corpus` supplies term statistics to `idf-wo` and `bm25` (required when the spec names them).
    """

    def __init__(self, model: str = ..., corpus: Optional[Sequence[str]] = None) -> None: ...
    @property
    def model(self) -> str:
        """The model spec this ranker was made from."""
    def score(
        self, query: str, texts: Sequence[str], in_document_order: bool = False
    ) -> List[float]:
        """One score per text, higher is better.

        `in_document_order=True`: the texts are one document's sentences in order (each gets a
        position and neighbours, which `wo-rr` and context models read).
        """
    def rank(
        self,
        query: str,
        texts: Sequence[str],
        top_k: Optional[int] = None,
        in_document_order: bool = False,
    ) -> List[Tuple[int, float]]:
        """(index, score) pairs, best first; `top_k` keeps the first k."""
    def score_batch(
        self,
        queries: Sequence[str],
        texts: Sequence[Sequence[str]],
        in_document_order: bool = False,
    ) -> List[List[float]]:
        """Scores of many questions at once (`queries[i]` over `texts[i]`)."""

class Index:
    """A sentence index on disk (opened, or created when missing) and the cascade over it."""

    def __init__(
        self,
        path: Union[str, PathLike],
        model: str = ...,
        prune_model: str = ...,
        keep: int = 3,
        retrieve: int = 16,
        unit: Optional[str] = None,
        dense: Optional[str] = None,
        retriever: str = "auto",
        fusion_depth: int = 100,
        reader: Optional[str] = None,
    ) -> None:
        """`reader`: the span reader (a model directory or name; "none": no spans; default: the
        installed default reader, if any)."""
    @property
    def path(self) -> str: ...
    def add(self, documents: List[Mapping[str, str]]) -> int:
        """Adds {"id", "title", "text"} documents and commits; returns the sentences added."""
    def add_files(
        self,
        paths: Sequence[Union[str, PathLike]],
        commit_every: int = 1000,
        max_document_bytes: int = ...,
        vectors: Optional[Sequence[Union[str, PathLike]]] = None,
    ) -> Dict[str, int]:
        """Adds .txt/.md/.jsonl files or folders as `ansel index` does. `vectors`: files or
        folders of precomputed vectors of the index's encoder (`Encoder.write_vectors`,
        `ansel.spark.encode_units`); the result then counts "vectors_found" and
        "vectors_encoded"."""
    def ask(
        self,
        question: str,
        top_k: int = 5,
        budget_ms: Optional[int] = None,
        retriever: Optional[str] = None,
        spans: int = 1,
    ) -> List[Answer]:
        """The best answer sentences with their context, best first; the first `spans` answers
        get their answer span read (0: none)."""
    def stats(self) -> Dict[str, int]:
        """{"documents", "sentences", "unit"} of the index."""

class Encoder:
    """A sentence encoder, as `ansel index --dense MODEL` takes it."""

    def __init__(self, model: str) -> None: ...
    @property
    def model(self) -> str: ...
    @property
    def dim(self) -> int: ...
    def encode(self, texts: Sequence[str]) -> List[List[float]]:
        """One vector per text (not normalised)."""
    def write_vectors(self, path: Union[str, PathLike], texts: Sequence[str], batch: int = 32) -> int:
        """Writes the texts' vectors to a `.ansel-vectors` file that `ansel index --vectors`
        takes; returns the vectors written."""

def units(text: str, title: str = "", unit: str = "sentence") -> List[str]:
    """The sentences (or passages) `ansel index` makes of a document: the texts it stores
    vectors of."""
