"""Generated stores for the tests that check a content-store backend ranks exactly as
BM25 from scratch (SQLite's blocks, PostgreSQL's blocks and pending tail).

The text is Zipf-like, so some terms fill every block and others are rare, with CJK
lines mixed in (phrases of bigrams); chunks are three lines, so a few documents make
many blocks.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping

from hypothesis import strategies as st

from nativemcp.workers.content_store._chunking import chunk_lines, split_lines
from nativemcp.workers.content_store._postings import (
    bm25,
    chunk_tokens,
    idf,
    phrase_frequency,
    phrases,
    token_positions,
)
from nativemcp.workers.content_store._records import NewContent

WORDS = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "Müller", "café", "naïve", "x86", "2026",
]  # fmt: skip
CJK = ["東京都", "学校", "図書館", "서울에서", "학교"]
QUERY = st.lists(st.sampled_from(WORDS + CJK + ["東", "学", "nothing"]), min_size=1, max_size=4)
"""A query of one to four terms: words, CJK words, CJK prefixes and a term no chunk has."""


def document(rng: random.Random, lines: int) -> str:
    """``lines`` lines of Zipf-like words (early words far more common), about one in
    seven of CJK words instead."""
    out = []
    for _ in range(lines):
        if rng.random() < 0.15:
            out.append(" ".join(rng.choice(CJK) for _ in range(rng.randint(1, 4))))
        else:
            words = rng.choices(WORDS, weights=[1 / (r + 1) for r in range(len(WORDS))], k=8)
            out.append(" ".join(words[: rng.randint(1, 8)]))
    return "\n".join(out)


def item(number: int, text: str) -> NewContent:
    """``text`` as the content ``doc<number>.txt``, in chunks of three lines."""
    lines = split_lines(text)
    return NewContent(
        f"doc{number}.txt",
        "text/plain",
        text,
        hashlib.sha256(text.encode()).hexdigest(),
        len(lines),
        chunk_lines(lines, max_lines=3, overlap_lines=1),
    )


def bm25_from_scratch(bodies: Mapping[int, str], query: str) -> dict[int, float]:
    """BM25 of every chunk holding a query phrase, from the chunk texts alone
    (``bodies``: every chunk of the store, by id)."""
    chunks = {chunk_id: chunk_tokens(body) for chunk_id, body in bodies.items()}
    lengths = {chunk_id: len(tokens) for chunk_id, tokens in chunks.items()}
    average = sum(lengths.values()) / len(lengths)
    positions = {chunk_id: token_positions(tokens) for chunk_id, tokens in chunks.items()}
    weighted = []
    for phrase in phrases(query):
        found = {
            chunk_id: freq
            for chunk_id, where in positions.items()
            if (freq := phrase_frequency(phrase, where)) > 0
        }
        weighted.append((idf(len(chunks), len(found)), found))
    return dict(bm25(weighted, lengths, average))
