"""Descriptions a search cannot work with: too short to be found, too alike to be told
apart (``nativemcp tools --lint``).

A tool is found by the words of its definition. One whose title and description hold
fewer than `MIN_TERMS` words of their own (not counting its name's words, nor words
that half the catalog's tools hold: "the", "a", a server's name) matches almost no
task. Two tools whose index texts (`tool_text`, stemmed as the index stems them) are
near one another, by the cosine of their terms weighed by BM25's inverse document
frequency over the catalog, are ranked together for every query that finds either,
and the model cannot tell them apart from the one line it reads.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Final, Literal, NamedTuple

from ._documents import split_name, tool_text
from ._index import IndexedTool
from ._stem import stem

__all__ = ["MAX_SIMILARITY", "MIN_TERMS", "LintFinding", "lint_tools"]

MIN_TERMS: Final = 4
"""The fewest words of its own a tool's title and description should hold."""
MAX_SIMILARITY: Final = 0.75
"""Two tools at least this close (IDF-weighed cosine of their index terms) are too alike."""


class LintFinding(NamedTuple):
    """One problem: ``kind`` ``short`` (one tool) or ``alike`` (two), the full names,
    and a sentence saying why."""

    kind: Literal["short", "alike"]
    tools: tuple[str, ...]
    detail: str


def _terms(text: str) -> list[str]:
    from nativemcp.workers.content_store import chunk_tokens

    return [stem(word) for word in chunk_tokens(text)]


def _vector(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    weights = {term: count * idf[term] for term, count in counts.items()}
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {term: w / norm for term, w in weights.items()}


def lint_tools(
    tools: Sequence[IndexedTool],
    *,
    min_terms: int = MIN_TERMS,
    max_similarity: float = MAX_SIMILARITY,
) -> list[LintFinding]:
    """The catalog's tools whose descriptions are too short to be found, then the
    pairs too alike to be told apart (most alike first)."""
    texts = [_terms(tool_text(t.full_name, t.server, t.tool)) for t in tools]
    held = Counter(term for terms in texts for term in set(terms))
    total = len(tools)
    # Words half the tools hold tell no tool apart (with fewer than 4 tools, none is).
    common = {term for term, n in held.items() if total >= 4 and n >= total / 2}
    findings: list[LintFinding] = []
    for item in tools:
        own = " ".join(text for text in (item.tool.title, item.tool.description) if text)
        named = set(_terms(split_name(item.tool.name)))
        words = set(_terms(own)) - named - common
        if len(words) < min_terms:
            findings.append(
                LintFinding(
                    "short",
                    (item.full_name,),
                    f"its title and description hold {len(words)} words of their own "
                    f"(besides its name's and the catalog's common words); "
                    f"{min_terms} or more let a task find it",
                )
            )
    idf = {term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in held.items()}
    vectors = [_vector(Counter(terms), idf) for terms in texts]
    alike: list[tuple[float, int, int]] = []
    for i in range(total):
        for j in range(i + 1, total):
            small, large = sorted((vectors[i], vectors[j]), key=len)
            cosine = sum(w * large.get(term, 0.0) for term, w in small.items())
            if cosine >= max_similarity:
                alike.append((cosine, i, j))
    for cosine, i, j in sorted(alike, key=lambda found: -found[0]):
        findings.append(
            LintFinding(
                "alike",
                (tools[i].full_name, tools[j].full_name),
                f"their definitions are {cosine:.2f} alike (cosine of their index "
                f"terms, at most {max_similarity} tells them apart): say what each is "
                f"for that the other is not",
            )
        )
    return findings
