"""The passages of a kept result that match a query: BM25 over runs of its lines.

A kept result is split into passages of whole lines (up to `PASSAGE_CHARS` characters,
and one line at least, so one JSON item per line is one passage when items are long).
Each passage's tokens are the content store's (`chunk_tokens`: any language, CJK runs
as bigrams), a query's its plain terms as the content store reads them (`phrases`),
and the score FTS5's BM25 (`bm25`), so a query finds here what it would find in the
content store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = ["PASSAGE_CHARS", "Passage", "PassageIndex"]

PASSAGE_CHARS: Final = 600
"""The most characters of lines one passage gathers (a longer line is one passage)."""


class Passage(NamedTuple):
    """Lines ``first``..``last`` (1-based, inclusive) and their BM25 score."""

    first: int
    last: int
    score: float


class PassageIndex:
    """BM25 over the passages of ``lines``; `search` ranks them for a query."""

    def __init__(self, lines: Sequence[str]) -> None:
        # Imported on first search: the content store's package is the worker side's.
        from nativemcp.workers.content_store import chunk_tokens

        self._spans: list[tuple[int, int]] = []
        self._lengths: dict[int, int] = {}
        self._postings: dict[str, dict[int, int]] = {}
        start, size = 0, 0
        for number, line in enumerate(lines):
            if number > start and size + len(line) > PASSAGE_CHARS:
                self._add(chunk_tokens("\n".join(lines[start:number])), start, number)
                start, size = number, 0
            size += len(line) + 1
        if start < len(lines):
            self._add(chunk_tokens("\n".join(lines[start:])), start, len(lines))
        total = sum(self._lengths.values())
        self._average = total / len(self._spans) if self._spans else 0.0

    def _add(self, tokens: list[str], start: int, end: int) -> None:
        passage = len(self._spans)
        self._spans.append((start + 1, end))
        self._lengths[passage] = len(tokens)
        for token, count in Counter(tokens).items():
            self._postings.setdefault(token, {})[passage] = count

    def search(self, query: str, limit: int) -> list[Passage]:
        """The ``limit`` best passages for ``query`` (any of its words), best first;
        ties in the order of the result. None when no passage holds a word of it."""
        from nativemcp.workers.content_store import bm25, bm25_idf, phrases

        weighted = []
        for phrase in phrases(query):
            for token in phrase.tokens:
                found = self._postings.get(token, {})
                if phrase.prefix and token == phrase.tokens[-1]:
                    # A lone CJK character: every token it starts, as FTS5's prefix query.
                    merged: Counter[int] = Counter()
                    for word, where in self._postings.items():
                        if word.startswith(token):
                            merged.update(where)
                    found = dict(merged)
                if found:
                    weighted.append((bm25_idf(len(self._spans), len(found)), found))
        if not weighted:
            return []
        scores = bm25(weighted, self._lengths, self._average)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [Passage(*self._spans[number], score) for number, score in best]
