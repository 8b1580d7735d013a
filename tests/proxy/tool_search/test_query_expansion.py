"""A fused index's query expansion: each English word of a query also searches for the
catalog's words nearest to it in the embedding model's token vectors (at most
`PER_WORD`, at least `MIN_SIMILARITY` close, never its own stem), as BM25 terms
weighed by that similarity."""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any

import pytest
from test_tool_index import TOOLS, _fts5_scores, _tool

from nativemcp.proxy.tool_search import IndexedTool, ToolIndex, tool_text
from nativemcp.proxy.tool_search._expansion import (
    MIN_SIMILARITY,
    PER_WORD,
    QueryExpansion,
    widened,
)
from nativemcp.proxy.tool_search._stem import stem

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="the search-embed extra (wordllama) is not installed; the test extra installs it",
)

GIT = [
    IndexedTool(f"git__{name}", "git", _tool(name, description))
    for name, description in (
        ("git_create_branch", "Creates a new branch from an optional base branch"),
        ("git_checkout", "Switches branches"),
        ("git_diff", "Shows differences between branches or commits"),
        ("git_log", "Shows the commit logs"),
        ("git_status", "Shows the working tree status"),
    )
]


def _model() -> Any:
    import wordllama

    folder = os.path.dirname(wordllama.__file__)
    return wordllama.WordLlama.load(cache_dir=folder, disable_download=True)


def _similarity(model: Any, one: str, other: str) -> float:
    """The cosine of two words' vectors: each the mean of its tokens' unit vectors."""
    import numpy

    def vector(word: str) -> Any:
        rows = model.embedding[list(model.tokenize([word])[0].ids)]
        mean = (rows / numpy.linalg.norm(rows, axis=1, keepdims=True)).mean(axis=0)
        return mean / numpy.linalg.norm(mean)

    return float(vector(one) @ vector(other))


def test_a_word_searches_for_the_nearest_catalog_words_at_least_min_similarity_close() -> None:
    model = _model()
    words = {
        "url": {"url"},
        "directory": {"directory", "directories"},
        "image": {"image", "images"},
        "delete": {"delete"},
        "photo": {"photo"},
        "photograph": {"photograph"},
        "pic": {"pic"},
        "picture": {"picture"},
        "camera": {"camera"},
        "page": {"page"},
        "subfolder": {"subfolder"},
        "photography": {"photography"},
    }
    expansion = QueryExpansion(words)
    assert len(expansion) == len(words)
    found = expansion.similar(["website", "folder", "picture", "photo", "a", "17", "website"])

    # What each word finds, computed apart: every target (at its nearest written form)
    # at least MIN_SIMILARITY close, not the word's own stem, the PER_WORD nearest.
    expected: dict[str, float] = {}
    for word in ("website", "folder", "picture", "photo"):
        near = {
            target: max(_similarity(model, word, form) for form in forms)
            for target, forms in words.items()
            if target != stem(word)
        }
        kept = sorted((t for t in near if near[t] >= MIN_SIMILARITY), key=lambda t: -near[t])
        for target in kept[:PER_WORD]:
            expected[target] = max(expected.get(target, 0.0), near[target])
    assert found.keys() == expected.keys()
    for target, value in expected.items():
        assert math.isclose(found[target], value, abs_tol=1e-5), target
    # As the catalog reads: a folder is a directory, a website has a URL, a picture is
    # an image; "delete" is near none of them, "picture" does not find itself, and
    # "page" (0.36 from "website") is not close enough.
    assert {"url", "directory", "image", "subfolder"} <= found.keys()
    assert not {"delete", "page"} & found.keys()
    assert 0.3 < _similarity(model, "website", "page") < MIN_SIMILARITY
    # A target near two words keeps the nearer one's similarity (picture, not photo).
    assert math.isclose(found["image"], _similarity(model, "picture", "image"), abs_tol=1e-5)
    assert _similarity(model, "photo", "image") < found["image"]
    # Of the targets near "picture", only the PER_WORD nearest count.
    close = [t for t in words if _similarity(model, "picture", t) >= MIN_SIMILARITY]
    assert len(close) > PER_WORD + 1  # "picture" itself among them
    assert len(expansion.similar(["picture"])) == PER_WORD


def test_only_ascii_words_of_three_letters_or_more_are_widened() -> None:
    assert widened("website") and widened("url")
    for token in ("a", "to", "17", "v2", "메모", "café", "メモ"):
        assert not widened(token), token
    assert QueryExpansion({"image": {"image"}}).similar(["메모", "to", "42"]) == {}
    assert QueryExpansion({}).similar(["picture"]) == {}


def test_a_fused_index_widens_to_words_fewer_than_half_the_tools_hold() -> None:
    plain, fused = ToolIndex(GIT), ToolIndex(GIT, embed=True)
    query = "compare the main branch with my feature branch"
    # "branch" is in three tools of five: no evidence; "difference" is in one.
    assert plain.widened_terms(query) == {}
    widened_terms = fused.widened_terms(query)
    assert list(widened_terms) == ["difference"]
    assert "git__git_diff" not in [m.name for m in plain.search(query, 5)]
    assert fused.search(query, 1)[0].name == "git__git_diff"
    # A word of the query itself is never a widened term of it.
    assert "write" not in ToolIndex(TOOLS, embed=True).widened_terms("write the writing")


def test_a_word_half_the_tools_hold_is_no_target() -> None:
    def catalog(count: int) -> list[IndexedTool]:
        # Two tools say "differences"; the others, "branch".
        return [
            IndexedTool(f"git__t{n}", "git", _tool(f"t{n}", "differences" if n < 2 else "branch"))
            for n in range(count)
        ]

    assert ToolIndex(catalog(5), embed=True).widened_terms("compare") == {
        "difference": pytest.approx(_similarity(_model(), "compare", "differences"))
    }
    assert ToolIndex(catalog(4), embed=True).widened_terms("compare") == {}


def test_a_widened_term_counts_its_idf_times_its_similarity_in_bm25() -> None:
    fused = ToolIndex(TOOLS, embed=True)
    documents = [ToolIndex.index_tokens(tool_text(*item)) for item in TOOLS]
    average = sum(map(len, documents)) / len(documents)
    for query in ("store some writing on disk", "take a picture of the website", "read"):
        # FTS5's own bm25() for the query's terms, then each widened term by hand.
        expected = _fts5_scores(TOOLS, query)
        for token, similarity in fused.widened_terms(query).items():
            holding = [n for n, tokens in enumerate(documents) if token in tokens]
            idf = math.log((len(TOOLS) - len(holding) + 0.5) / (len(holding) + 0.5))
            for number in holding:
                tf = documents[number].count(token)
                norm = 1 - 0.75 + 0.75 * len(documents[number]) / average
                part = similarity * idf * tf * 2.2 / (tf + 1.2 * norm)
                expected[number] = expected.get(number, 0.0) + part
        got = fused.scores(query)
        assert got.keys() == expected.keys(), query
        for number, score in expected.items():
            assert math.isclose(got[number], score, rel_tol=1e-9), (query, number)
    assert fused.widened_terms("take a picture of the website").keys() >= {"image"}
    assert fused.widened_terms("read") == {}


def test_the_hand_computed_bm25_is_sqlites_for_a_term_of_the_query() -> None:
    # The formula the test above adds for a widened term is FTS5's, as SQLite scores.
    documents = [ToolIndex.index_tokens(tool_text(*item)) for item in TOOLS]
    average = sum(map(len, documents)) / len(documents)
    holding = [n for n, tokens in enumerate(documents) if "page" in tokens]
    idf = math.log((len(TOOLS) - len(holding) + 0.5) / (len(holding) + 0.5))
    for number in holding:
        tf = documents[number].count("page")
        norm = 1 - 0.75 + 0.75 * len(documents[number]) / average
        assert math.isclose(_fts5_scores(TOOLS, "page")[number], idf * tf * 2.2 / (tf + 1.2 * norm))
