"""ansel: answer sentence selection from Python.

``Ranker`` scores a question's candidate texts with any model the ``ansel`` command line takes
(a built-in name such as ``"wo-rr"`` or ``"bm25"``, a model directory, the name of a model in the
repository's ``models/``, or several joined by ``+``). ``Index`` adds documents to a sentence index
and answers questions from it with the retrieve-prune-rerank cascade of ``ansel ask``.
Rust does the work with the GIL released; errors raise ``AnselError`` with the command line's
messages.
"""

from ._ansel import (
    DEFAULT_ASK_MODEL,
    DEFAULT_MODEL,
    AnselError,
    Index,
    Ranker,
    __version__,
)

__all__ = ["AnselError", "DEFAULT_ASK_MODEL", "DEFAULT_MODEL", "Index", "Ranker", "__version__"]
