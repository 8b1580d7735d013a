"""A query's words widened to the catalog's words of like meaning, for fused search.

BM25 scores only the words a tool's definition uses: "open this website" shares none
with ``navigate`` ("Open an http(s) URL ..."), "compare two branches" none with
``git_diff`` ("Shows differences between branches"). The embedding model's token
vectors know that ``website`` is near ``url``, ``compare`` near ``difference`` and
``folder`` near ``directory``. So, in a fused index (the ``search-embed`` extra), each
English word of a query also searches for the catalog's words nearest to it: at most
`PER_WORD` of them, each at least `MIN_SIMILARITY` close (the cosine of the two words'
vectors), as extra BM25 terms weighed by that similarity (a word 0.5 close counts half
as much as the word itself). Only words that fewer than half the tools hold are
targets, as only those make a tool a match (`ToolIndex.search`).

On the tuning half of ``bench.tools`` this moved the fused search from 0.73 / 0.95
(recall@1 / @5) to 0.75 / 0.96 ("open this website" found `navigate` first, "compare
the main branch with my feature branch" `git_diff` second), and BM25 with it alone from
0.69 / 0.84 to 0.75 / 0.87; Korean and Japanese were unchanged (only ASCII words are
widened). The constants were chosen there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ._embedding import _loaded, check_embedding
from ._stem import stem

__all__ = ["MIN_SIMILARITY", "PER_WORD", "QueryExpansion", "widened"]

MIN_SIMILARITY: Final = 0.4
"""The least cosine similarity of a catalog word to a query word that searches for it
(``website`` → ``url`` is 0.41, ``folder`` → ``directory`` 0.64; on the tuning half 0.4
did better than 0.45 or 0.5, and no worse than lower)."""
PER_WORD: Final = 4
"""The most catalog words one query word searches for, nearest first."""
_MIN_LETTERS: Final = 3


def widened(token: str) -> bool:
    """Whether ``token`` (a folded token) is a word the expansion reads: ASCII letters
    only, at least three (CJK bigrams, numbers and ``a`` / ``to`` are left alone)."""
    return token.isascii() and token.isalpha() and len(token) >= _MIN_LETTERS


class QueryExpansion:
    """The catalog's words with their vectors; `similar` finds those near a query's.

    Args:
        words: each target stem (one the index holds) with the words it stands for
            as written in the catalog (``list`` → ``list``, ``lists``).

    Raises:
        ImportError: the ``search-embed`` extra is not installed.
    """

    def __init__(self, words: Mapping[str, Iterable[str]]) -> None:
        check_embedding()
        import numpy

        self._numpy: Any = numpy
        # The model of the embedding (loaded once per process, from its wheel).
        self._model = _loaded()
        self._table: Any = self._model.embedding
        self._targets = [target for target, forms in words.items() if forms]
        pairs = [(number, word) for number, target in enumerate(self._targets)
                 for word in sorted(words[target])]  # fmt: skip
        # Where each target's written forms start among the rows of `_vectors` (a
        # target's forms are adjacent: its similarity is the best of them).
        starts = [i for i, (number, _) in enumerate(pairs) if i == 0 or pairs[i - 1][0] != number]
        self._starts: Any = numpy.array(starts, dtype=numpy.intp)
        self._vectors: Any = self._embed([word for _, word in pairs])

    def _embed(self, words: list[str]) -> Any:
        numpy = self._numpy
        rows = self._table.shape[0]
        vectors = numpy.zeros((len(words), self._table.shape[1]), dtype=numpy.float32)
        for number, encoded in enumerate(self._model.tokenize(words) if words else []):
            pairs = zip(encoded.ids, encoded.attention_mask, strict=True)
            ids = [min(token, rows - 1) for token, kept in pairs if kept]
            if ids:
                # Each token's direction: a word of several tokens is the mean of
                # their directions, so a long rare token does not outweigh a short one.
                found = self._table[ids]
                found = found / numpy.maximum(numpy.linalg.norm(found, axis=1, keepdims=True), 1e-9)
                pooled = found.mean(axis=0)
                norm = numpy.linalg.norm(pooled)
                vectors[number] = pooled / norm if norm > 0 else pooled
        return vectors

    def __len__(self) -> int:
        return len(self._targets)

    def similar(self, tokens: Iterable[str]) -> dict[str, float]:
        """For the `widened` words among ``tokens`` (a query's folded tokens), the
        catalog's stems nearest to each (at most `PER_WORD` per word, each at least
        `MIN_SIMILARITY` close, never the word's own stem), with the best similarity
        any of the words has to it."""
        numpy = self._numpy
        words = list(dict.fromkeys(token for token in tokens if widened(token)))
        found: dict[str, float] = {}
        if not words or not self._targets:
            return found
        # einsum, not @: BLAS would hand this small product to its threads, which spin
        # while waiting and, on busy cores, cost a search tens of milliseconds at p95.
        similar = numpy.einsum("wd,td->wt", self._embed(words), self._vectors)
        best = numpy.maximum.reduceat(similar, self._starts, axis=1)
        for word, row in zip(words, best, strict=True):
            own = stem(word)
            near = [
                (float(row[number]), self._targets[number])
                for number in numpy.flatnonzero(row >= MIN_SIMILARITY).tolist()
                if self._targets[number] != own
            ]
            for value, target in sorted(near, key=lambda item: (-item[0], item[1]))[:PER_WORD]:
                found[target] = max(found.get(target, 0.0), value)
        return found
