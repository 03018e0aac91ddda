"""ansel: answer sentence selection from Python.

``Ranker`` scores a question's candidate texts with any model the ``ansel`` command line takes
(a built-in name such as ``"wo-rr"`` or ``"bm25"``, a model directory, the name of a model in the
repository's ``models/``, or several joined by ``+``). ``Index`` adds documents to a sentence index
and answers questions from it with the retrieve-prune-rerank cascade of ``ansel ask``.
Rust does the work with the GIL released; errors raise ``AnselError`` with the command line's
messages.
"""

import glob as _glob
import importlib.util as _importlib_util
import os as _os


def _find_onnxruntime():
    """Points ONNX Runtime's loader at the `onnxruntime` package's library when one is installed
    and ORT_DYLIB_PATH is unset (the checkout's vendor/onnxruntime is the fallback)."""
    if "ORT_DYLIB_PATH" in _os.environ:
        return
    spec = _importlib_util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return
    for location in spec.submodule_search_locations:
        found = sorted(_glob.glob(_os.path.join(location, "capi", "libonnxruntime.so*")))
        if found:
            _os.environ["ORT_DYLIB_PATH"] = found[0]
            return


_find_onnxruntime()

from ._ansel import (  # noqa: E402
    DEFAULT_ASK_MODEL,
    DEFAULT_MODEL,
    AnselError,
    Encoder,
    Index,
    Ranker,
    __version__,
    units,
)

__all__ = [
    "AnselError", "DEFAULT_ASK_MODEL", "DEFAULT_MODEL", "Encoder", "Index", "Ranker", "__version__",
    "units",
]
