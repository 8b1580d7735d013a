"""The tokens SQLite's FTS5 index holds, computed in Python, and BM25 over them.

The PostgreSQL backend has no FTS5: it stores each chunk's tokens itself (a postings
table) and scores with FTS5's own BM25 formula, so both backends find and rank the
same chunks. The tokens come from the same rewrite as the SQLite index
(`index_text`: CJK runs as bigrams plus the last character), split where
``unicode61`` splits (anything but letters and digits), lower-cased, with the
diacritics of Latin, Greek and Cyrillic letters removed (``remove_diacritics 2``; kana
keep their voicing marks, as in FTS5).

A query becomes the same phrases as the FTS5 match expression (`match_expression`):
one per plain term, each a run of tokens that must stand next to each other; a lone
CJK character is a prefix. Nothing in the query is syntax: it only selects tokens.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple

from ._tokenize import _CJK_RUN, _WORD, _rewrite_cjk, index_text, query_terms

__all__ = ["BM25_B", "BM25_K1", "Phrase", "bm25", "chunk_tokens", "phrase_frequency", "phrases"]

BM25_K1: Final = 1.2
"""FTS5's ``bm25()`` k1 (term-frequency saturation)."""
BM25_B: Final = 0.75
"""FTS5's ``bm25()`` b (document-length normalisation)."""
_MIN_IDF: Final = 1e-6
"""FTS5 clamps a term found in more than half the rows to this idf (never zero)."""
_DIACRITIC_LIMIT: Final = 0x2000
"""Diacritics are removed below this code point (Latin, Greek, Cyrillic...), not above."""


@functools.lru_cache(maxsize=65536)
def _fold_token(token: str) -> str:
    lowered = token.lower()
    if lowered.isascii():
        return lowered
    out = []
    for char in lowered:
        if ord(char) < _DIACRITIC_LIMIT:
            base = "".join(
                c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)
            )
            out.append(base or char)
        else:
            out.append(char)
    return "".join(out)


def chunk_tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for a chunk's text, in order."""
    return [_fold_token(match.group()) for match in _WORD.finditer(index_text(text))]


class Phrase(NamedTuple):
    """One query term as index tokens that must be adjacent; ``prefix``: the last token
    matches any token it starts (a lone CJK character)."""

    tokens: tuple[str, ...]
    prefix: bool


def phrases(query: str) -> list[Phrase]:
    """The phrases of a plain-terms query, as `match_expression` builds them (duplicates
    as written are dropped; a term holding no word is skipped)."""
    seen: dict[tuple[tuple[str, ...], bool], None] = {}
    found: list[Phrase] = []
    for term in query_terms(query):
        raw = [
            match.group() for match in _WORD.finditer(_rewrite_cjk(term, trailing_unigram=False))
        ]
        if not raw:
            continue
        last = raw[-1]
        prefix = len(last) == 1 and _CJK_RUN.fullmatch(last) is not None
        # FTS5 drops repeats of the same expression text, not of the same folded tokens.
        key = (tuple(raw), prefix)
        if key in seen:
            continue
        seen[key] = None
        found.append(Phrase(tuple(_fold_token(t) for t in raw), prefix))
    return found


def phrase_frequency(phrase: Phrase, positions: Mapping[str, Sequence[int]]) -> int:
    """How often ``phrase`` occurs in a chunk whose tokens stand at ``positions``."""
    *head, last = phrase.tokens
    if phrase.prefix:
        tail: set[int] = set()
        for token, where in positions.items():
            if token.startswith(last):
                tail.update(where)
    else:
        tail = set(positions.get(last, ()))
    if not head:
        return len(tail)
    sets = [set(positions.get(token, ())) for token in head]
    return sum(
        1
        for start in sets[0]
        if all(start + i in sets[i] for i in range(1, len(head))) and start + len(head) in tail
    )


def idf(rows: int, hits: int) -> float:
    """FTS5's idf for a phrase found in ``hits`` of ``rows`` chunks."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else _MIN_IDF


def bm25(
    frequencies: Iterable[tuple[float, Mapping[int, int]]],
    lengths: Mapping[int, int],
    average_length: float,
) -> dict[int, float]:
    """BM25 per chunk id: for each phrase ``(idf, {chunk: frequency})``, FTS5's formula."""
    scores: dict[int, float] = defaultdict(float)
    for weight, per_chunk in frequencies:
        for chunk, tf in per_chunk.items():
            norm = 1 - BM25_B + BM25_B * lengths[chunk] / average_length
            scores[chunk] += weight * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
    return scores


def token_positions(tokens: Sequence[str]) -> dict[str, list[int]]:
    """Each distinct token's positions in ``tokens``."""
    where: dict[str, list[int]] = defaultdict(list)
    for position, token in enumerate(tokens):
        where[token].append(position)
    return where


def distinct_counts(chunks: Iterable[Sequence[str]]) -> Counter[str]:
    """In how many of ``chunks`` each token occurs (document frequency deltas)."""
    counts: Counter[str] = Counter()
    for tokens in chunks:
        counts.update(set(tokens))
    return counts
