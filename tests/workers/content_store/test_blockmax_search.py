"""Block-max search returns exact BM25 rankings: checked against BM25 computed from
scratch over the stored chunks, on generated corpora, with blocks small enough that
every search has many to skip, and after deletes and later writes."""

from __future__ import annotations

import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _bm25_corpus import QUERY, bm25_from_scratch, document, item
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nativemcp.workers.content_store import _blockmax, _blocks, _index_cache
from nativemcp.workers.content_store._blockmax import (
    fast_tokens,
    non_ascii_tokens,
    read_averages,
    score_block,
    seal,
)
from nativemcp.workers.content_store._blocks import PAIRWISE_BLOCKS, READ_AHEAD
from nativemcp.workers.content_store._db import ContentDB
from nativemcp.workers.content_store._index_cache import unsealed
from nativemcp.workers.content_store._postings import (
    Phrase,
    chunk_tokens,
    phrase_frequency,
    phrases,
    token_positions,
)


def _seal(db: ContentDB, store_id: str) -> None:
    """Seal now what the idle thread would once writes stop."""
    while db._seal_step(store_id):
        pass


def _exact(db: ContentDB, store_id: str, query: str) -> dict[int, float]:
    """BM25 of every chunk holding a query phrase, from the chunk texts alone."""
    bodies = dict(db._read.execute("SELECT id, body FROM chunks WHERE store_id = ?", (store_id,)))
    return bm25_from_scratch(bodies, query)


def _assert_exact(db: ContentDB, store_id: str, query: str, k: int) -> None:
    got = db.ranked(store_id, query, k)
    assert got is not None
    scores = sorted(((s, c) for c, s in _exact(db, store_id, query).items() if s > 0), reverse=True)
    want = scores[:k]
    assert [round(s, 9) for _, s in got] == [round(s, 9) for s, _ in want], query
    if len(want) == k:
        # Chunks scoring above the k-th are the same; at the k-th, any of the ties.
        cut = want[-1][0]
        assert {c for c, s in got if s > cut + 1e-9} == {c for s, c in want if s > cut + 1e-9}
    else:
        assert {c for c, _ in got} == {c for _, c in want}


def _sealed_store(db: ContentDB, rng: random.Random) -> str:
    """A store of six generated contents, sealed."""
    store = db.create_store("s", None, None).store_id
    for n in range(6):
        db.add_content(store, item(n, document(rng, 30)))
    _seal(db, store)
    return store


@contextmanager
def _database(
    tmp_path: Path, block_chunks: int, union_blocks: int = 1, several_row_cost: float = 0.0
) -> Iterator[ContentDB]:
    """A database whose stores are searched by their blocks from the first one, for a
    query of CJK words beside other terms from ``union_blocks`` (for three terms or
    more, however many chunks hold several, unless ``several_row_cost`` says)."""
    db = ContentDB(
        tmp_path / "content.sqlite3",
        block_chunks=block_chunks,
        min_blocks=1,
        union_blocks=union_blocks,
        several_row_cost=several_row_cost,
    )
    try:
        yield db
    finally:
        db.close()


@contextmanager
def _generated(
    tmp_path_factory: pytest.TempPathFactory, seed: int, fewest: int, sealed: float
) -> Iterator[tuple[ContentDB, str]]:
    """A database of small blocks holding a store of ``fewest`` to 8 generated contents
    of 1-40 lines, sealed after each with probability ``sealed`` (else a longer tail
    of chunks waits unsealed)."""
    rng = random.Random(seed)
    with _database(tmp_path_factory.mktemp("bm"), block_chunks=rng.choice([2, 5, 16])) as db:
        store = db.create_store("s", None, None).store_id
        for number in range(rng.randint(fewest, 8)):
            db.add_content(store, item(number, document(rng, rng.randint(1, 40))))
            if rng.random() < sealed:
                _seal(db, store)
        yield db, store


_GENERATED_CORPORA = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
"""Hypothesis settings of a test that makes a store per example (tmp_path_factory)."""
_SEED = st.integers(0, 2**32 - 1)


@_GENERATED_CORPORA
@given(seed=_SEED, queries=st.lists(QUERY, min_size=1, max_size=5))
def test_block_max_ranking_equals_exact_bm25_on_generated_corpora(
    tmp_path_factory: pytest.TempPathFactory, seed: int, queries: list[list[str]]
) -> None:
    with _generated(tmp_path_factory, seed, fewest=1, sealed=0.5) as (db, store):
        for words in queries:
            for k in (1, 5, 15):
                _assert_exact(db, store, " ".join(words), k)


def test_ranking_stays_exact_after_deletes_and_later_writes(tmp_path: Path) -> None:
    rng = random.Random(7)
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        added = [db.add_content(store, item(n, document(rng, 30)))[0] for n in range(6)]
        _seal(db, store)
        # The newest content goes: its chunk ids must not be handed out again inside a
        # block sealed while it was there.
        db.delete_content(store, added[-1].content_id)
        db.delete_content(store, added[1].content_id)
        for n in range(6, 9):
            db.add_content(store, item(n, document(rng, 30)))
        _seal(db, store)
        for query in ("alpha", "Müller beta", "학교 zeta", "東", "kappa lambda mu"):
            _assert_exact(db, store, query, 5)
            _assert_exact(db, store, query, 15)
        hi = db._read.execute("SELECT max(hi) FROM blocks").fetchone()[0]
        newest = db._read.execute("SELECT min(id) FROM chunks WHERE id > ?", (hi,)).fetchone()
        assert newest[0] is None or newest[0] > hi


def test_search_skips_blocks_whose_bound_cannot_reach_the_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _database(tmp_path, block_chunks=8) as db:
        store = db.create_store("s", None, None).store_id
        # "rare" stands thrice in one chunk of the first content; every other chunk
        # holds it once: every block but one is bounded below that chunk's score.
        db.add_content(store, item(0, "rare rare rare\n" + "filler words here\n" * 40))
        for n in range(1, 12):
            db.add_content(store, item(n, f"rare filler {n}\n" + "more filler text\n" * 40))
        _seal(db, store)
        scored: list[int] = []  # the first chunk id of each block scored

        def score_block(ids: Any, *args: Any) -> list[tuple[int, float]]:
            scored.append(ids[0])
            return _blockmax.score_block(ids, *args)

        monkeypatch.setattr(_blocks, "score_block", score_block)
        reads: list[str] = []
        db._read.set_trace_callback(
            lambda sql: (
                reads.append(sql) if "block_postings WHERE" in sql and "token IN" in sql else None
            )
        )
        try:
            top = db.ranked(store, "rare", 1)
        finally:
            db._read.set_trace_callback(None)
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        assert blocks > 10
        assert top is not None and len(top) == 1
        # The one block holding the best chunk is scored: every other is bounded below
        # it; one statement fetched its postings and those of the next few by bound.
        assert len(scored) == 1 and len(reads) == 1
        holding = db._read.execute(
            "SELECT count(*) FROM block_bounds WHERE token = 'rare'"
        ).fetchone()[0]
        (listed,) = re.findall(r"lo IN \(([^)]*)\)", reads[0])
        assert len(listed.split(",")) == min(READ_AHEAD, holding)
        _assert_exact(db, store, "rare", 1)


def test_a_search_reading_every_block_fetches_their_postings_in_few_statements(
    tmp_path: Path,
) -> None:
    with _database(tmp_path, block_chunks=2) as db:
        store = db.create_store("s", None, None).store_id
        for n in range(6):
            db.add_content(store, item(n, f"alpha beta {n}\n" + "alpha filler text\n" * 30))
        _seal(db, store)
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        assert 2 * READ_AHEAD < blocks <= 3 * READ_AHEAD
        reads: list[str] = []
        db._read.set_trace_callback(
            lambda sql: (
                reads.append(sql) if "block_postings WHERE" in sql and "token IN" in sql else None
            )
        )
        try:
            db.ranked(store, "alpha beta", 10_000)  # no k-th score to stop at: all read
        finally:
            db._read.set_trace_callback(None)
        # READ_AHEAD blocks, then twice as many as fetched so far: all in two statements.
        assert [len(re.findall(r"lo IN \(([^)]*)\)", sql)[0].split(",")) for sql in reads] == [
            READ_AHEAD,
            blocks - READ_AHEAD,
        ]
        _assert_exact(db, store, "alpha beta", 10_000)


def test_averages_record_gives_fts5_row_count_and_token_total(tmp_path: Path) -> None:
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        rng = random.Random(3)
        for n in range(3):
            db.add_content(store, item(n, document(rng, 20)))
        bodies = [b for (b,) in db._read.execute("SELECT body FROM chunks")]
        rid = db._read.execute("SELECT rid FROM stores").fetchone()[0]
        blob = db._read.execute(f"SELECT block FROM fts_{rid}_data WHERE id = 1").fetchone()[0]
        assert read_averages(blob) == (len(bodies), sum(len(chunk_tokens(b)) for b in bodies))
        assert read_averages(None) == (0, 0)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_fast_path_tokenizes_as_the_index_does(text: str) -> None:
    assert fast_tokens(text) == chunk_tokens(text)


_MIXED = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"), st.sampled_from("東京都学校서울에서 \nÉéßﬁ\u0301ｶﾞ")
    ),
    max_size=120,
)


@given(_MIXED)
@example("\U0002ebe1 東京")  # in a CJK block, yet no letter to Python's Unicode tables
def test_the_fast_tokenizer_tokenizes_any_text_as_the_index_does(text: str) -> None:
    assert fast_tokens(text) == chunk_tokens(text)


_LINES = st.lists(
    st.one_of(
        _MIXED,
        st.sampled_from(["", "...", "alpha beta", "x", "東京都東京", "café 東京都", "학교 학교"]),
    ),
    max_size=8,
).map("\n".join)


@given(_LINES, st.data())
@example("東京\n...\n都京", None)  # a tokenless ASCII line keeps 京 and 都京 adjacent
@example("東京\nx\n都京", None)  # a line holding a token parts them
def test_phrases_of_non_ascii_tokens_occur_as_often_when_ascii_lines_are_skipped(
    text: str, data: st.DataObject | None
) -> None:
    every = fast_tokens(text)
    skipped = non_ascii_tokens(text)
    kept = token_positions(skipped)
    # Each run of two or three tokens of either list, and for a drawn text a few more
    # drawn from its non-ASCII tokens in any order, as a phrase.
    runs = {
        tuple(tokens[i : i + n])
        for tokens in (every, skipped)
        for n in (2, 3)
        for i in range(len(tokens) - n + 1)
    }
    candidates = [run for run in runs if not any(token.isascii() for token in run)]
    pool = sorted({token for token in every if not token.isascii()})
    if data is not None and pool:
        drawn = st.lists(st.sampled_from(pool), min_size=1, max_size=3).map(tuple)
        candidates += data.draw(st.lists(drawn))
    whole = token_positions(every)
    for tokens in candidates:
        phrase = Phrase(tokens, prefix=False)
        assert phrase_frequency(phrase, kept) == phrase_frequency(phrase, whole), (text, tokens)


def test_ascii_fast_path_agrees_with_fts5_itself() -> None:
    text = "Hello, World! x86_64 it's e-mail\tTAB 2026-11-26 a.b.c"
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t (rowid, body) VALUES (1, ?)", (text,))
    indexed = [term for (term,) in conn.execute("SELECT term FROM v ORDER BY offset")]
    assert fast_tokens(text) == indexed


def test_blocks_are_sealed_once_writes_stop_and_ranking_is_exact_before_and_after(
    tmp_path: Path,
) -> None:
    db = ContentDB(tmp_path / "content.sqlite3", merge_idle=0.05, block_chunks=4, min_blocks=1)
    try:
        store = db.create_store("s", None, None).store_id
        rng = random.Random(11)
        for n in range(5):
            db.add_content(store, item(n, document(rng, 30)))
        _assert_exact(db, store, "alpha beta", 15)
        rid = db._read.execute("SELECT rid FROM stores").fetchone()[0]
        deadline = time.monotonic() + 10
        # The idle thread seals on its own (polled, as the merging tests do).
        while unsealed(db._read, rid, store) and time.monotonic() < deadline:
            time.sleep(0.01)
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        assert blocks >= 5
        _assert_exact(db, store, "alpha beta", 15)
        _assert_exact(db, store, "gamma", 1)
    finally:
        db.close()


_OTHER_WRITER = """
import random, sys
from pathlib import Path
sys.path[:0] = sys.argv[2:]  # this folder and tests/, where the shared helpers are
from _bm25_corpus import document, item
from test_blockmax_search import _seal
from nativemcp.workers.content_store._db import ContentDB

db = ContentDB(Path(sys.argv[1]), block_chunks=4, min_blocks=1)
store = db.list_stores()[0].store_id
rng = random.Random(5)
for n in range(10, 14):
    db.add_content(store, item(n, document(rng, 30)))
_seal(db, store)
first = db.list_contents(store, 0, 1)[0]
db.delete_content(store, first.content_id)
db.close()
"""


def test_search_stays_exact_after_another_process_writes_and_seals_the_same_file(
    tmp_path: Path,
) -> None:
    with _database(tmp_path, block_chunks=4) as db:
        store = _sealed_store(db, random.Random(13))
        queries = ("alpha", "gamma delta", "Müller kappa", "zeta eta theta")
        for query in queries:
            _assert_exact(db, store, query, 5)  # the index facts are kept from here on
        before = db.ranked(store, "alpha", 15)
        # A real second process: this connection learns of its commits only from the file.
        subprocess.run(
            [
                sys.executable,
                "-c",
                _OTHER_WRITER,
                str(db.path),
                str(Path(__file__).parent),
                str(Path(__file__).parents[2]),
            ],
            check=True,
            timeout=60,
        )
        assert db.ranked(store, "alpha", 15) != before
        for query in queries:
            _assert_exact(db, store, query, 5)
            _assert_exact(db, store, query, 15)


def test_a_cjk_word_is_ranked_from_the_blocks_counting_only_adjacent_bigrams(
    tmp_path: Path,
) -> None:
    rng = random.Random(17)
    # "東京 京都" holds both bigrams of 東京都 apart: the phrase is not there, though
    # each token is; "東京都東京都" holds it twice.
    lines = ["東京都 alpha", "東京 京都 beta", "東京都東京都", "京都東京 alpha beta", "gamma"]
    with _database(tmp_path, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        for n in range(8):
            text = "\n".join(rng.choice(lines) for _ in range(rng.randint(4, 30)))
            db.add_content(store, item(n, text))
        _seal(db, store)
        ranked: list[str] = []
        db._read.set_trace_callback(
            lambda sql: ranked.append(sql) if "ORDER BY rank" in sql else None
        )
        try:
            for query in ("東京都", "東京都東京"):
                for k in (1, 5, 15):
                    _assert_exact(db, store, query, k)
        finally:
            db._read.set_trace_callback(None)
        assert ranked == []  # one CJK word: every block was scored here, none by FTS5
        for query in ("東京都 alpha", "beta 東京都 京都"):  # beside other terms: see
            _assert_exact(db, store, query, 5)  # test_phrase_union.py


def test_search_stays_exact_when_the_kept_bounds_overflow_and_are_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Room for the bounds of about one token: every new token drops the others.
    with _database(tmp_path, block_chunks=4) as db:
        store = _sealed_store(db, random.Random(19))
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        monkeypatch.setattr(_index_cache, "MAX_BOUNDS", blocks + 1)
        for query in ("alpha", "alpha beta", "gamma alpha delta", "beta", "alpha beta"):
            _assert_exact(db, store, query, 5)


@pytest.mark.parametrize("skippable", [(), ("beta",)])
def test_a_block_scored_against_a_threshold_keeps_every_chunk_at_or_above_it(
    skippable: tuple[str, ...],
) -> None:
    # top_k admits a chunk tying its k-th score (a lower rowid wins the tie): leaving
    # out only what scores below the threshold keeps its ranking exact.
    texts = ["alpha beta", "alpha", "beta beta", "alpha gamma", "alpha", "gamma beta alpha"]
    block = seal(list(enumerate(texts, start=100)))
    terms = [(token, 1.5, block.postings[token][1]) for token in ("alpha", "beta")]
    every = score_block(block.ids, block.lengths, terms, block.average, skippable)
    tie = sorted(score for _, score in every)[len(every) // 2]
    kept = score_block(block.ids, block.lengths, terms, block.average, skippable, tie)
    assert sorted(kept) == sorted(entry for entry in every if entry[1] >= tie)
    assert any(score == tie for _, score in kept) and len(kept) < len(every)


@pytest.mark.parametrize("block_chunks", [64, 4])
def test_chunks_holding_two_terms_are_looked_up_only_in_a_store_of_many_blocks(
    tmp_path: Path, block_chunks: int
) -> None:
    rng = random.Random(11)
    with _database(tmp_path, block_chunks=block_chunks) as db:
        store = _sealed_store(db, rng)
        blocks = db._read.execute("SELECT count(*) FROM blocks").fetchone()[0]
        pairs: list[str] = []
        db._read.set_trace_callback(lambda sql: pairs.append(sql) if "rowid <=" in sql else None)
        try:
            db.ranked(store, "alpha beta", 5)
        finally:
            db._read.set_trace_callback(None)
        assert bool(pairs) == (blocks >= PAIRWISE_BLOCKS)
        _assert_exact(db, store, "alpha beta", 5)


def test_a_block_s_sets_of_terms_found_together_are_those_its_chunks_hold(
    tmp_path: Path,
) -> None:
    # Each pair is placed in its blocks and only chunks holding three terms or more
    # are looked at alone: the largest sets of each block must be its chunks' own.
    with _database(tmp_path, block_chunks=2) as db:
        store = _sealed_store(db, random.Random(37))
        with db._snapshot():
            index = db._indexes.current(store)
            assert index is not None and len(index.blocks) >= PAIRWISE_BLOCKS
            bodies = dict(db._read.execute("SELECT id, body FROM chunks"))
            for query in ("alpha beta gamma", "alpha beta gamma delta", "Müller café x86 2026"):
                wanted = phrases(query)
                expected: dict[int, set[frozenset[str]]] = {}
                for chunk_id, body in bodies.items():
                    tokens = set(chunk_tokens(body))
                    held = frozenset(p.tokens[0] for p in wanted if p.tokens[0] in tokens)
                    if len(held) > 1:
                        lo = max(start for start in index.starts if start <= chunk_id)
                        expected.setdefault(lo, set()).add(held)
                together = _blocks._together(db._read, index, wanted)
                assert together is not None
                assert {lo: _largest(sets) for lo, sets in together.items()} == {
                    lo: _largest(sets) for lo, sets in expected.items()
                }, query


def _largest(sets: set[frozenset[str]]) -> set[frozenset[str]]:
    """The sets of ``sets`` in none of the others."""
    return {one for one in sets if not any(one < other for other in sets)}


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=12),
        min_size=1,
        max_size=40,
    ),
    query=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=5),
    skippable=st.sets(st.sampled_from(["a", "b", "c", "d"])),
)
def test_skipping_tokens_leaves_every_other_chunk_s_score_bit_for_bit(
    texts: list[list[str]], query: list[str], skippable: set[str]
) -> None:
    # MaxScore inside a block leaves out the chunks holding only skippable tokens; the
    # others' scores must be the very floats of scoring every chunk (same additions,
    # in query order: with three terms or more, another order rounds differently).
    block = seal([(100 + n, " ".join(words)) for n, words in enumerate(texts)])
    terms = [
        (token, 0.5 + index / 3, block.postings[token][1])
        for index, token in enumerate(query)
        if token in block.postings
    ]
    every = dict(score_block(block.ids, block.lengths, terms, block.average))
    holding = {
        chunk
        for chunk, words in zip(block.ids, texts, strict=True)
        if any(token in words for token, _, _ in terms if token not in skippable)
    }
    skipped = score_block(block.ids, block.lengths, terms, block.average, skippable)
    assert dict(skipped) == {chunk: every[chunk] for chunk in holding}
