"""Relevance re-ranking looks for matches only in the candidates that can still make
the cut: checked against every candidate scored, on generated candidates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nativemcp.workers.content_store._relevance import Candidate, rank_hits, relevance
from nativemcp.workers.content_store._snippet import context, describe_match
from nativemcp.workers.content_store._tokenize import query_terms

_WORDS = ["apple", "pear", "plum", "東京", "Straße", "fig"]


def _every_candidate_scored(
    candidates: list[Candidate], query: str, top_n: int, threshold: float | None
) -> list[tuple[str, float, str, list[str], int]]:
    """The re-rank as it was: each candidate's match found, then sorted."""
    found = [c for c in candidates if c.bm25 > 0]
    if not found:
        return []
    best = max(c.bm25 for c in found)
    terms = query_terms(query)
    scored = []
    for candidate in found:
        match = describe_match(candidate.body, terms)
        exact = match.relevance_type == "exact_phrase"
        matched = len(terms) if exact else len(match.matched_terms)
        score = relevance(matched, len(terms), candidate.bm25, best)
        if threshold is None or score >= threshold:
            scored.append((score, candidate, match))
    scored.sort(key=lambda entry: -entry[0])
    return [
        (c.content_id, round(score, 4), match.relevance_type, match.matched_terms, match.first)
        for score, c, match in scored[:top_n]
    ]


_CANDIDATE = st.tuples(
    st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join),
    # Few distinct scores: ties in BM25 and in relevance are common.
    st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]),
)


@settings(max_examples=300)
@given(
    st.lists(_CANDIDATE, max_size=15),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
    st.integers(1, 6),
    st.one_of(st.none(), st.sampled_from([0.3, 0.5, 0.8, 0.9])),
)
def test_re_ranking_equals_scoring_every_candidate(
    drawn: list[tuple[str, float]], words: list[str], top_n: int, threshold: float | None
) -> None:
    # As a backend hands them over: best BM25 first.
    candidates = [
        Candidate(f"ct_{n}", n, n + 1, n + 2, body, f"{n}.txt", bm25=score)
        for n, (body, score) in enumerate(sorted(drawn, key=lambda pair: -pair[1]))
    ]
    query = " ".join(words)
    hits = rank_hits(candidates, query, top_n, threshold)
    expected = _every_candidate_scored(candidates, query, top_n, threshold)
    assert [(h.content_id, h.score, h.relevance_type, h.matched_terms) for h in hits] == [
        entry[:4] for entry in expected
    ]
    bodies = {c.content_id: c.body for c in candidates}
    assert [h.context for h in hits] == [context(bodies[e[0]], e[4]) for e in expected]
