"""Relevance of search hits: a score in 0..1 that means something on its own.

BM25 alone does not: it is unbounded, and relative to the best hit it makes the best
hit ``1.00`` however weak the match is; in a store of one document FTS5 gives every
term the floor idf (``1e-06``). So a hit's relevance is mostly the share of the
query's terms it contains (all of them, or the whole phrase: 1), and BM25 decides
between hits with the same share:

    relevance = share of terms matched * (0.75 + 0.25 * BM25 / best BM25 of the search)

One term that matches scores 0.75..1; one term of two scores at most 0.5.

This runs after a storage backend returns its BM25-ranked candidates (SQLite FTS5,
or any other backend): it knows nothing of where they came from. A backend asks for
`candidate_count` candidates, so a hit holding every term that BM25 ranked a little
lower still makes the cut.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final, NamedTuple

from ._models import SearchHit
from ._snippet import Match, context, describe_match
from ._tokenize import query_terms

__all__ = ["BM25_WEIGHT", "Candidate", "candidate_count", "rank_hits", "relevance"]

BM25_WEIGHT: Final = 0.25
"""The part of the relevance that BM25 (against the search's best hit) decides."""
CANDIDATES_PER_HIT: Final = 3
"""Candidates fetched per requested hit, re-ranked by relevance."""
MAX_CANDIDATES: Final = 300
"""At most this many candidates per search."""


class Candidate(NamedTuple):
    """One chunk a backend found, with its BM25 score (higher is better)."""

    content_id: str
    seq: int
    start_line: int
    end_line: int
    body: str
    filename: str
    bm25: float


def candidate_count(top_n: int, query: str) -> int:
    """How many BM25-ranked candidates a backend returns for ``top_n`` hits of ``query``.

    A one-term query needs no more than ``top_n``: every hit holds its one term, so
    relevance orders them as BM25 does.
    """
    if len(query_terms(query)) <= 1:
        return top_n
    return min(max(top_n, top_n * CANDIDATES_PER_HIT), max(top_n, MAX_CANDIDATES))


def relevance(matched: int, terms: int, bm25: float, best: float) -> float:
    """The relevance in 0..1 of a hit with ``matched`` of ``terms`` query terms and
    BM25 ``bm25``, in a search whose best BM25 is ``best``."""
    share = min(1.0, max(matched, 1) / terms) if terms > 0 else 1.0
    relative = bm25 / best if best > 0 else 1.0
    return share * (1 - BM25_WEIGHT + BM25_WEIGHT * relative)


def rank_hits(
    candidates: Sequence[Candidate], query: str, top_n: int, threshold: float | None
) -> list[SearchHit]:
    """The best ``top_n`` hits of ``candidates`` by relevance (then BM25), each with its
    match type, matched terms and context; hits below ``threshold`` and candidates
    without a positive BM25 are left out."""
    # Best BM25 first (stable: the backend's order among equals), so that a hit's
    # relevance can only be at most the one before it could reach.
    found = sorted((c for c in candidates if c.bm25 > 0), key=lambda c: -c.bm25)
    if not found:
        return []
    best = found[0].bm25
    terms = query_terms(query)
    scored: list[tuple[float, Candidate, Match]] = []
    kept: list[float] = []  # the relevances kept so far, ascending
    for candidate in found:
        # Holding every term, a candidate scores this much; any after it no more. Once
        # `top_n` are kept at or above it (or it is below the threshold), the rest
        # cannot make the cut: their matches are never looked for.
        reachable = relevance(len(terms), len(terms), candidate.bm25, best)
        if (len(kept) >= top_n and kept[-top_n] >= reachable) or (
            threshold is not None and reachable < threshold
        ):
            break
        match = describe_match(candidate.body, terms)
        exact = match.relevance_type == "exact_phrase"
        matched = len(terms) if exact else len(match.matched_terms)
        score = relevance(matched, len(terms), candidate.bm25, best)
        if threshold is None or score >= threshold:
            scored.append((score, candidate, match))
            bisect.insort(kept, score)
    # Stable: equal relevance keeps the BM25 order.
    scored.sort(key=lambda entry: -entry[0])
    return [
        SearchHit(
            content_id=candidate.content_id,
            chunk_id=f"{candidate.content_id}:{candidate.seq}",
            filename=candidate.filename,
            line_range=(candidate.start_line, candidate.end_line),
            score=round(score, 4),
            raw_score=candidate.bm25,
            relevance_type=match.relevance_type,
            matched_terms=match.matched_terms,
            context=context(candidate.body, match.first),
        )
        for score, candidate, match in scored[:top_n]
    ]
