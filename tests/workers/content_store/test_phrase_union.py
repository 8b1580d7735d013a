"""A query of CJK words beside other terms (two or three phrases) is ranked from the
chunks holding two or more phrases and each phrase's own top k in the blocks: the very
ranking FTS5 gives over the whole store (same chunks, same scores, same order among
ties), checked on generated corpora, at ties across the cut, with phrases in the
unsealed tail and with a phrase written twice; and the phrase counts it relies on,
against the tokens."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _bm25_corpus import CJK, WORDS, document, item
from hypothesis import example, given
from hypothesis import strategies as st
from test_blockmax_search import (
    _GENERATED_CORPORA,
    _MIXED,
    _SEED,
    _assert_exact,
    _database,
    _generated,
    _seal,
    _sealed_store,
)

from nativemcp.workers.content_store._blockmax import cjk_surface, fast_tokens, surface_counts
from nativemcp.workers.content_store._blocks import match
from nativemcp.workers.content_store._db import ContentDB
from nativemcp.workers.content_store._phrase_union import SEVERAL_ROW_COST, search_phrase_union
from nativemcp.workers.content_store._postings import (
    Phrase,
    phrase_frequency,
    phrases,
    token_positions,
)


def _fts5_ranking(db: ContentDB, store: str, query: str, k: int) -> list[tuple[int, float]]:
    """FTS5's own top k over the whole store, as the search ranked these queries before."""
    index = db._indexes.current(store)
    assert index is not None
    rows: list[tuple[int, float]] = db._read.execute(
        f"SELECT rowid, -rank FROM {index.fts} WHERE {index.fts} MATCH ? ORDER BY rank LIMIT ?",
        (" OR ".join(match(phrase) for phrase in phrases(query)), k),
    ).fetchall()
    return [(rowid, score) for rowid, score in rows if score > 0]


@contextmanager
def _whole_store_ranked(db: ContentDB) -> Iterator[list[int]]:
    """The ``lo`` of every range FTS5 ranked while inside (0: the whole store)."""
    seen: list[int] = []
    rank_range = db._rank_range

    def spy(fts: str, expression: str, lo: int, hi: int, k: int) -> list[tuple[int, float]]:
        seen.append(lo)
        return rank_range(fts, expression, lo, hi, k)

    db._rank_range = spy  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del db._rank_range


def _assert_as_fts5(db: ContentDB, store: str, query: str, k: int) -> None:
    """The search's ranking is FTS5's over the whole store: ids in the same order (ties
    too), scores equal to float rounding; and exact BM25 from the chunk texts."""
    got = db.ranked(store, query, k)
    want = _fts5_ranking(db, store, query, k)
    assert got is not None
    assert [rowid for rowid, _ in got] == [rowid for rowid, _ in want], query
    assert [score for _, score in got] == pytest.approx([score for _, score in want], rel=1e-12)
    _assert_exact(db, store, query, k)


_MIXED_QUERY = st.tuples(
    st.sampled_from([*WORDS, *CJK, "nothing"]),
    st.sampled_from([word for word in CJK if len(word) > 2]),
).flatmap(st.permutations)
"""A CJK word of two bigrams or more and another term, in either order."""


_THREE_QUERY = st.tuples(
    st.sampled_from([*WORDS, *CJK, "nothing"]),
    st.sampled_from([*WORDS, *CJK]),
    st.sampled_from([word for word in CJK if len(word) > 2]),
).flatmap(st.permutations)
"""A CJK word of two bigrams or more and two other terms (CJK words, bigrams or Latin
words), in any order."""


@_GENERATED_CORPORA
@given(
    seed=_SEED,
    queries=st.lists(st.one_of(_MIXED_QUERY, _THREE_QUERY), min_size=1, max_size=4),
)
def test_cjk_words_beside_other_terms_rank_as_fts5_over_the_whole_store(
    tmp_path_factory: pytest.TempPathFactory, seed: int, queries: list[list[str]]
) -> None:
    with _generated(tmp_path_factory, seed, fewest=2, sealed=0.6) as (db, store):
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        for words in queries:
            query = " ".join(words)
            with _whole_store_ranked(db) as ranged:
                for k in (1, 5, 15):
                    _assert_as_fts5(db, store, query, k)
            # FTS5 ranks the whole store only for a store without blocks; else only the
            # tail, past the blocks.
            assert (0 in ranged) == (blocks == 0), query


def test_ties_across_the_cut_are_kept_in_fts5_s_order(tmp_path: Path) -> None:
    # Many chunks of the same text score the same: the cut at k falls inside groups
    # of ties, for chunks holding one phrase and for chunks holding both.
    lines = [
        "東京都 alpha",
        "東京都 filler",
        "alpha filler",
        "東京都 alpha beta",
        "gamma",
        "学校 beta",
    ]
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        for n in range(12):
            # Three-line chunks with one line of overlap: few distinct chunk texts.
            text = "\n".join(lines[(n + i) % len(lines)] for i in range(9))
            db.add_content(store, item(n, f"{text}\nunique{n}"))
        _seal(db, store)
        assert db._read.execute("SELECT count(*) FROM blocks").fetchone()[0] >= 10
        queries = ["東京都 alpha", "alpha 東京都", "東京都 beta", "filler 東京都"]
        # Three phrases: chunks holding two or three of them tie too.
        queries += [
            "東京都 alpha beta",
            "filler 東京都 alpha",
            "学校 東京都 beta",
            "beta 学校 filler",
        ]
        for query in queries:
            for k in (1, 2, 3, 5, 8, 13, 40):
                _assert_as_fts5(db, store, query, k)


def test_a_chunk_tying_the_k_th_score_of_another_phrase_is_kept(tmp_path: Path) -> None:
    # alpha and beta are in one chunk each, of the same length: the same score. beta's
    # own top k is searched after alpha's, above the k-th score so far (alpha's): its
    # chunk, tying it with the lower rowid, is still the first.
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        texts = ["beta pad", "alpha pad", "東京都 " + "long " * 30]
        texts += [f"filler{n} pad" for n in range(12)]
        for n, text in enumerate(texts):
            db.add_content(store, item(n, text))
        _seal(db, store)
        for k in (1, 2, 3):
            _assert_as_fts5(db, store, "東京都 alpha beta", k)
            _assert_as_fts5(db, store, "東京都 beta alpha", k)


def test_a_cjk_word_among_three_phrases_is_counted_not_bounded(tmp_path: Path) -> None:
    # 東京 and 京都 occur twice where 東京都 occurs once: a bound from either token's
    # postings is not the chunk's score.
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        texts = ["東京 京都 東京都 alpha beta", "東京都 alpha pad", "beta pad pad"]
        texts += [f"filler{n} 東京 pad" for n in range(12)]
        for n, text in enumerate(texts):
            db.add_content(store, item(n, text))
        _seal(db, store)
        for k in (1, 3):
            _assert_as_fts5(db, store, "東京都 alpha beta", k)


def test_phrases_in_the_unsealed_tail_are_ranked_with_the_blocks(tmp_path: Path) -> None:
    rng = random.Random(23)
    with _database(tmp_path, block_chunks=4) as db:
        store = _sealed_store(db, rng)
        # Newer chunks, not sealed: the best for the query, and ties with the blocks'.
        db.add_content(store, item(6, "学校 学校 図書館\n図書館 alpha\n学校\n" + document(rng, 12)))
        index = db._indexes.current(store)
        assert index is not None and index.unsealed
        queries = ["学校 図書館", "図書館 alpha", "学校 図書館 学校", "zeta 図書館"]
        queries += ["学校 図書館 alpha", "zeta 図書館 学校", "図書館 alpha zeta"]
        for query in queries:
            for k in (1, 5, 15):
                _assert_as_fts5(db, store, query, k)


@pytest.mark.parametrize(
    "query",
    [
        "東京都 alpha 東京都",  # the same term twice: one phrase, as in FTS5
        "Müller 東京都 muller",  # two terms, one phrase's tokens: counted twice
        "東京都 東京都 図書館",
        "図書館 MÜLLER 図書館 muller",
        "Müller 東京都 muller beta",  # three phrases, one of them twice
        "学校 MÜLLER 図書館 muller 学校",
    ],
)
def test_a_phrase_written_twice_ranks_as_fts5(tmp_path: Path, query: str) -> None:
    with _database(tmp_path, block_chunks=4) as db:
        store = _sealed_store(db, random.Random(29))
        for k in (1, 5, 15):
            _assert_as_fts5(db, store, query, k)


@pytest.mark.parametrize(
    ("union_blocks", "query", "whole"),
    [
        (1, "東京都 alpha", False),
        (1, "東京都 alpha beta", False),
        (1, "東京都 alpha beta gamma delta epsilon zeta eta theta", True),  # nine: FTS5
        (10_000, "東京都 alpha beta", True),  # a store of fewer blocks
    ],
)
def test_fts5_ranks_the_whole_store_for_nine_phrases_or_few_blocks(
    tmp_path: Path, union_blocks: int, query: str, whole: bool
) -> None:
    with _database(tmp_path, block_chunks=4, union_blocks=union_blocks) as db:
        store = _sealed_store(db, random.Random(31))
        with _whole_store_ranked(db) as ranged:
            _assert_as_fts5(db, store, query, 5)
        assert (0 in ranged) == whole


@pytest.mark.parametrize(
    ("query", "whole"),
    [
        ("東京都 common often", True),  # both words in every chunk: FTS5
        ("東京都 rare seldom", False),
        ("東京都 common", False),  # two phrases: the union whatever they hold
    ],
)
def test_three_phrases_that_many_chunks_hold_together_are_ranked_by_fts5(
    tmp_path: Path, query: str, whole: bool
) -> None:
    with _database(tmp_path, block_chunks=4, several_row_cost=SEVERAL_ROW_COST) as db:
        store = db.create_store("s", None, None).store_id
        for n in range(40):
            extra = " rare" if n % 10 == 0 else " seldom" if n % 10 == 5 else ""
            place = " 東京都" if n % 4 == 0 else ""
            db.add_content(store, item(n, f"common often pad{n}{extra}{place}"))
        _seal(db, store)
        with _whole_store_ranked(db) as ranged:
            for k in (1, 5, 15):
                _assert_as_fts5(db, store, query, k)
        assert (0 in ranged) == whole


@pytest.mark.parametrize(
    ("query", "count"), [("東京都 alpha beta gamma delta epsilon zeta eta theta", 9), ("東京都", 1)]
)
def test_the_union_takes_two_to_eight_distinct_phrases_only(
    tmp_path: Path, query: str, count: int
) -> None:
    with _database(tmp_path, block_chunks=4) as db:
        store = _sealed_store(db, random.Random(41))
        with db._snapshot():
            index = db._indexes.current(store)
            assert index is not None
            with pytest.raises(ValueError, match=f"two to 8 distinct phrases wanted, got {count}"):
                search_phrase_union(db._read, index, phrases(query), 5, None)


_CJK_TEXT = st.lists(
    st.one_of(
        _MIXED,
        # Half-width kana and compatibility ideographs change under NFKC; jamo sit below
        # U+2000 (where accents are folded); U+2EBE1 is in the CJK class, no letter.
        st.text(alphabet="東京都京東学校서울에서ｶﾞｷﾞガギ豈更\u1100\u1161 .\U0002ebe1", max_size=30),
    ),
    max_size=6,
).map("\n".join)


@given(_CJK_TEXT, st.data())
@example("東京都東京都", None)  # 京都東 once, across the two words
@example("東京東京東", None)  # 東京東 twice, the two overlapping
@example("東京\n都", None)  # a line apart: no phrase
@example("ｶﾞｷﾞ", None)  # half-width: ガギ after NFKC
@example("東京東京", None)  # the bigram 東京 twice
def test_a_cjk_word_or_bigram_is_counted_from_the_text_as_often_as_among_the_tokens(
    text: str, data: st.DataObject | None
) -> None:
    tokens = fast_tokens(text)
    positions = token_positions(tokens)
    runs = {tuple(tokens[i : i + n]) for n in (1, 2, 3) for i in range(len(tokens) - n + 1)}
    words = ["東京都", "京都東", "東京東", "ガギ", "ｶﾞｷﾞ", "学校", "東京都東"]
    if data is not None:
        words += data.draw(st.lists(st.text(alphabet="東京都学校ガギ豈", min_size=2, max_size=4)))
    for word in words:
        runs.add(tuple(word[i : i + 2] for i in range(len(word) - 1)))
    for run in runs:
        surface = cjk_surface(run)
        if surface is None:
            continue
        phrase = Phrase(run, prefix=False)
        assert surface_counts(text, [surface]) == [phrase_frequency(phrase, positions)], (text, run)


def test_only_chains_of_cjk_bigrams_have_a_surface() -> None:
    assert cjk_surface(("東京", "京都")) == "東京都"
    assert cjk_surface(("東京", "京都", "都庁")) == "東京都庁"
    assert cjk_surface(("東京",)) == "東京"  # a bigram alone
    assert cjk_surface(("東",)) is None
    assert cjk_surface(("東京", "都庁")) is None  # not a chain: never adjacent
    assert cjk_surface(("e", "mail")) is None
    assert cjk_surface(("東", "京都")) is None
