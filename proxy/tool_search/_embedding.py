"""Tool search fused with a small word-embedding model, for paraphrases BM25 misses.

BM25 finds a tool by the words its definition uses; "open this website" shares none
with ``navigate`` ("Navigate the active tab to a URL"). The ``search-embed`` extra
installs ``wordllama`` (MIT), whose 16 MB model (a 256-dimension embedding per token
of Llama 2's vocabulary) ships inside its wheel: it is loaded from there with downloads
disabled, once per process, on the first index that asks for it. Each tool is embedded
by its name, title and description (`embedding_text`), a query by its words: the
average of their tokens' vectors, each weighed by its inverse document frequency over
the catalog's texts (wordllama's own average weighs them alike; weighed, a token every
tool shares, "the" or "a", counts for little, and on the tuning half the embedding
alone found the right tool first 5 queries in 55 more often). The two rankings
are fused by reciprocal rank: a tool's score is ``1 / (RRF_K + rank)`` summed over the
BM25 ranking (the tools BM25 matches) and the embedding's (every tool), so the right
tool is found when either ranks it high. `RRF_K` and the texts were chosen on
``bench.tools``' tuning half of the queries alone.

Without the extra nothing here is imported, and the search is BM25 alone.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from ._documents import split_name

__all__ = [
    "EMBED_EXTRA",
    "RRF_K",
    "ToolEmbeddings",
    "check_embedding",
    "embedding_available",
    "embedding_loaded",
    "embedding_text",
    "fuse",
    "load_embedding",
]

EMBED_EXTRA: Final = "search-embed"
"""The extra that installs the embedding model (``pip install 'nativemcp[search-embed]'``)."""
RRF_K: Final = 10
"""The reciprocal-rank constant: rank 1 scores ``1/11``, rank 10 ``1/20``. On the tuning
half, 10 and 30 tied at recall@5 and 1 to 60 within one query at recall@1; weighing
BM25 up to twice the embedding did no better."""

_lock = threading.Lock()
_model: Any = None


def embedding_available() -> bool:
    """Whether the ``search-embed`` extra (``wordllama``) is installed."""
    return importlib.util.find_spec("wordllama") is not None


def check_embedding() -> None:
    """Refuse fused search where its model is not installed.

    Raises:
        ImportError: ``wordllama`` is not installed (the message says how to install it).
    """
    if not embedding_available():
        raise ImportError(
            "search_embed needs the embedding model of the search-embed extra: "
            f"pip install 'nativemcp[{EMBED_EXTRA}]' (wordllama, 16 MB, nothing downloaded)"
        )


def load_embedding() -> None:
    """Load the model now if it is not yet (once per process: about 0.7 s here), so that
    an async caller can do it in a worker thread rather than on its event loop.

    Raises:
        ImportError: the ``search-embed`` extra is not installed.
    """
    check_embedding()
    _loaded()


def embedding_loaded() -> bool:
    """Whether this process has loaded the model (`load_embedding`)."""
    return _model is not None


def _loaded() -> Any:
    """The wordllama model, loaded once per process from its wheel (never downloaded)."""
    global _model
    with _lock:
        if _model is None:
            import wordllama

            # The weights and the tokenizer ship in the package folder; given as the
            # cache, load finds both there (the tokenizer only so: it looks for it in a
            # "tokenizer" folder of the package, and the wheel has "tokenizers").
            # disable_download makes a missing file an error, never a fetch.
            folder = os.path.dirname(wordllama.__file__)
            _model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
        return _model


def embedding_text(name: str, title: str | None, description: str | None) -> str:
    """What a tool is embedded by: its own name in words, title and description
    (parameters left out: on the tuning half they made the ranking no better)."""
    words = split_name(name).replace("_", " ")
    return f"{words}: {title or ''} {description or ''}"


class ToolEmbeddings:
    """The embedding of each of some tools; `ranking` orders them for a query.

    Args:
        texts: each tool's `embedding_text`, in catalog order.

    Raises:
        ImportError: the ``search-embed`` extra is not installed.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        check_embedding()
        import numpy

        self._numpy: Any = numpy
        self._model = _loaded()
        self._count = len(texts)
        tokens = [self._tokens(text) for text in texts]
        holding: Counter[int] = Counter()
        for ids in tokens:
            holding.update(set(ids))
        # log(1 + N / (1 + df)): a token no tool holds weighs most, one all hold least.
        count = len(texts)
        self._weights = {token: math.log(1 + count / (1 + df)) for token, df in holding.items()}
        self._unseen = math.log(1 + count)
        self._vectors: Any = numpy.array([self._vector(ids) for ids in tokens])

    def _tokens(self, text: str) -> list[int]:
        encoded = self._model.tokenize([text])[0]
        rows = self._model.embedding.shape[0]
        # As wordllama's own embed: padding left out, an id past the table clamped.
        pairs = zip(encoded.ids, encoded.attention_mask, strict=True)
        return [min(token, rows - 1) for token, kept in pairs if kept]

    def _vector(self, ids: list[int]) -> Any:
        numpy = self._numpy
        if not ids:
            return numpy.zeros(self._model.embedding.shape[1], dtype=numpy.float32)
        weights = numpy.array([self._weights.get(i, self._unseen) for i in ids], numpy.float32)
        pooled = weights @ self._model.embedding[ids] / weights.sum()
        norm = numpy.linalg.norm(pooled)
        return pooled / norm if norm > 0 else pooled

    def similarities(self, query: str) -> list[float]:
        """The cosine similarity of ``query`` to each tool, in catalog order."""
        if not self._count:
            return []
        vector = self._vector(self._tokens(query))
        return [float(value) for value in self._vectors @ vector]

    def ranking(self, query: str) -> list[int]:
        """Every tool by position, most similar to ``query`` first (ties in catalog
        order)."""
        similar = self.similarities(query)
        return sorted(range(self._count), key=lambda number: (-similar[number], number))


def fuse(*rankings: Sequence[int]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: each tool (by position) with its summed
    ``1 / (RRF_K + rank)`` over ``rankings`` (best first, rank 1 first), best first;
    ties in catalog order."""
    total: dict[int, float] = {}
    for ranking in rankings:
        for rank, number in enumerate(ranking, start=1):
            total[number] = total.get(number, 0.0) + 1 / (RRF_K + rank)
    return sorted(total.items(), key=lambda item: (-item[1], item[0]))
