"""The PostgreSQL store's search index: writes leave a pending tail, a merge seals it
into blocks, and every search ranks exactly as BM25 computed from scratch over the
stored chunk texts (FTS5's formula): on a tail, on sealed blocks, on both, after
deletes and after later writes. A real PostgreSQL server (``$NATIVEMCP_TEST_DATABASE_URL``,
a schema per test: see ``conftest.py``)."""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from _bm25_corpus import QUERY, bm25_from_scratch, document, item
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativemcp.workers.content_store import ContentSummary
from nativemcp.workers.content_store._pg import URGENT_BLOCKS, PostgresContentDB
from nativemcp.workers.content_store._pg_index import BlockCache
from nativemcp.workers.content_store._pg_locks import merge_lock
from nativemcp.workers.content_store._pg_tail import TailCache

# Never merged by the idle thread during a test: the tests merge when they mean to.
_NEVER: float = 3600.0


@contextmanager
def _database(url: str, block_chunks: int) -> Iterator[PostgresContentDB]:
    db = PostgresContentDB(url, merge_idle=_NEVER, block_chunks=block_chunks)
    try:
        yield db
    finally:
        db.close()


def _scratch(db: PostgresContentDB, store_id: str, query: str) -> dict[int, float]:
    """BM25 of every chunk holding a query phrase, from the chunk texts alone."""
    with db.db.connection() as conn:
        bodies = dict(
            conn.execute(
                "SELECT c.id, c.body FROM cs_chunks c JOIN cs_stores s ON s.rid = c.store_rid"
                " WHERE s.id = %s",
                (store_id,),
            )
        )
    return bm25_from_scratch(bodies, query)


def _assert_exact(db: PostgresContentDB, store_id: str, query: str, k: int) -> None:
    blocks, newest, sealed, last = _kept_and_counted(db, store_id)
    assert blocks == sealed
    # The newest id it held: past the last chunk left once the newest were deleted.
    assert newest >= last
    got = db.ranked(store_id, query, k)
    assert got is not None
    scores = sorted(
        ((s, c) for c, s in _scratch(db, store_id, query).items() if s > 0), reverse=True
    )
    want = scores[:k]
    got = [(c, s) for c, s in got if s > 0]
    # Relative: scores are about 1e-6, where rounding to 9 places flipped a last digit
    # on a 1e-16 difference of summation order (a failing example hypothesis found).
    assert [s for _, s in got] == pytest.approx([s for s, _ in want], rel=1e-9, abs=0), query
    if len(want) == k:
        # Chunks scoring above the k-th are the same; at the k-th, any of the ties.
        cut = want[-1][0]
        assert {c for c, s in got if s > cut + 1e-9} == {c for s, c in want if s > cut + 1e-9}
    else:
        assert {c for c, _ in got} == {c for _, c in want}


def _store_row(db: PostgresContentDB, query: str, store_id: str) -> tuple[int, ...]:
    """The numbers ``query`` selects for the store ``store_id`` (``%s``), one snapshot."""
    with db.db.connection() as conn:
        row = conn.execute(query, (store_id,)).fetchone()
    assert row is not None
    return tuple(int(value) for value in row)


def _kept_and_counted(db: PostgresContentDB, store_id: str) -> tuple[int, ...]:
    """The block count and newest chunk id the store's row keeps, its sealed blocks
    counted and its newest chunk, in one snapshot (a merge may commit meanwhile on the
    merging thread)."""
    return _store_row(
        db,
        "SELECT s.blocks, s.newest, (SELECT count(*) FROM cs_blocks b WHERE b.store_rid = s.rid),"
        " (SELECT coalesce(max(id), 0) FROM cs_chunks c WHERE c.store_rid = s.rid)"
        " FROM cs_stores s WHERE s.id = %s",
        store_id,
    )


def _pending(db: PostgresContentDB, store_id: str) -> int:
    (pending,) = _store_row(
        db,
        "SELECT count(*) FROM cs_chunks c JOIN cs_stores s ON s.rid = c.store_rid"
        " WHERE s.id = %s AND c.id > s.merged",
        store_id,
    )
    return pending


def _merged_store(
    db: PostgresContentDB, rng: random.Random, items: int
) -> tuple[str, list[ContentSummary]]:
    """A store of ``items`` generated items, every chunk sealed; its id and items."""
    store = db.create_store("s", None, None).store_id
    added = [db.add_content(store, item(n, document(rng, 15)))[0] for n in range(items)]
    db.merge(store)
    return store, added


def _index_rows(db: PostgresContentDB) -> int:
    with db.db.connection() as conn:
        row = conn.execute("SELECT count(*) FROM cs_block_postings").fetchone()
    assert row is not None
    return int(row[0])


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), queries=st.lists(QUERY, min_size=1, max_size=4))
def test_ranking_equals_bm25_from_scratch_on_tails_blocks_and_both(
    postgres_url: str, seed: int, queries: list[list[str]]
) -> None:
    rng = random.Random(seed)
    with _database(postgres_url, block_chunks=rng.choice([2, 5, 16])) as db:
        store = db.create_store(f"s{seed}", None, None).store_id
        for number in range(rng.randint(1, 6)):
            db.add_content(store, item(number, document(rng, rng.randint(1, 30))))
            if rng.random() < 0.5:
                db.merge(store)  # else a longer tail of chunks waits pending
        for words in queries:
            for k in (1, 5, 15):
                _assert_exact(db, store, " ".join(words), k)


def test_adding_writes_no_index_rows_and_the_merge_seals_every_pending_chunk(
    postgres_url: str,
) -> None:
    rng = random.Random(7)
    # Blocks larger than what is added: no merge runs before the test's.
    with _database(postgres_url, block_chunks=64) as db:
        store = db.create_store("s", None, None).store_id
        for number in range(3):
            db.add_content(store, item(number, document(rng, 20)))
        assert _index_rows(db) == 0
        assert _pending(db, store) > 8
        queries = ["alpha", "gamma theta", "東京都", "東", "学校 delta", "Müller café"]
        for query in queries:
            _assert_exact(db, store, query, 5)
        db.merge(store)
        assert _pending(db, store) == 0
        assert _index_rows(db) > 0
        for query in queries:
            _assert_exact(db, store, query, 5)


def test_deletes_reseal_their_blocks_and_ranking_stays_exact(postgres_url: str) -> None:
    rng = random.Random(11)
    with _database(postgres_url, block_chunks=3) as db:
        store, added = _merged_store(db, rng, 5)
        db.add_content(store, item(5, document(rng, 15)))  # a pending tail beside the blocks
        for query in ("alpha", "beta gamma"):
            _assert_exact(db, store, query, 5)  # the blocks' chunks now kept by the process
        for summary in (added[1], added[3]):
            assert db.delete_content(store, summary.content_id) > 0
        with db.db.connection() as conn:
            stale = conn.execute(
                "SELECT count(*) FROM cs_block_postings p JOIN cs_blocks b"
                " ON b.store_rid = p.store_rid AND b.lo = p.lo WHERE p.token = ''"
                " AND b.size <> length(p.postings) / 12"
            ).fetchone()
        assert stale == (0,)
        for query in ("alpha", "beta gamma", "学校", "x86 2026 naïve"):
            _assert_exact(db, store, query, 5)
        db.merge(store)
        db.add_content(store, item(6, document(rng, 15)))
        for query in ("alpha", "beta gamma", "学校", "x86 2026 naïve"):
            _assert_exact(db, store, query, 5)


def test_a_merge_runs_on_its_own_once_writes_stop(postgres_url: str) -> None:
    db = PostgresContentDB(postgres_url, merge_idle=0.05, block_chunks=4)
    try:
        store = db.create_store("s", None, None).store_id
        db.add_content(store, item(0, document(random.Random(3), 30)))
        # The merging thread seals the tail once writes stop (polled, with a bound).
        deadline = time.monotonic() + 10
        while _pending(db, store):
            assert time.monotonic() < deadline, "the tail was never merged"
            time.sleep(0.01)
        _assert_exact(db, store, "alpha beta", 5)
    finally:
        db.close()


def test_a_second_process_does_not_merge_a_store_another_is_merging(
    postgres_url: str,
) -> None:
    import psycopg

    with _database(postgres_url, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        db.add_content(store, item(0, document(random.Random(5), 30)))
        with psycopg.connect(postgres_url) as other:
            rid = other.execute("SELECT rid FROM cs_stores WHERE id = %s", (store,)).fetchone()
            assert rid is not None
            # Another process's merge of this store in progress: its advisory lock held.
            assert merge_lock(other, rid[0])
            # The merging thread's step leaves the store to the other process.
            assert not db._merge_step(store)
            assert _pending(db, store) > 0
        db.merge(store)
        assert _pending(db, store) == 0


def test_the_same_store_row_of_another_schema_merges_under_a_lock_of_its_own(
    postgres_url: str,
) -> None:
    import psycopg

    other = f"test_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {other}")
        try:
            with psycopg.connect(postgres_url) as here, psycopg.connect(postgres_url) as there:
                there.execute(f"SET search_path = {other}")
                there.commit()
                # Store row 1 of this schema being merged: its lock held here.
                assert merge_lock(here, 1)
                # Row 1 of the other schema (the first store of another deployment
                # sharing the database) is another store: its merge is not held up.
                assert merge_lock(there, 1)
                with psycopg.connect(postgres_url) as third:
                    assert not merge_lock(third, 1)  # this schema's row 1 still is
        finally:
            admin.execute(f"DROP SCHEMA {other} CASCADE")


@pytest.mark.parametrize("query", ["alpha", "東京都 学校", "東"])
def test_an_empty_store_and_absent_terms_rank_nothing(postgres_url: str, query: str) -> None:
    with _database(postgres_url, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        assert db.ranked(store, query, 5) == []
        assert db.ranked("st_missing", query, 5) is None
        db.add_content(store, item(0, "omega only here"))
        db.merge(store)
        assert db.ranked(store, query, 5) == []


def test_deleting_the_pending_newest_item_leaves_no_tail_and_later_adds_rank_exactly(
    postgres_url: str,
) -> None:
    rng = random.Random(5)
    with _database(postgres_url, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        db.add_content(store, item(0, document(rng, 20)))
        db.merge(store)
        newest, _ = db.add_content(store, item(1, document(rng, 20)))
        _assert_exact(db, store, "alpha beta", 5)  # the tail, kept by the process
        assert db.delete_content(store, newest.content_id) > 0
        # The store's newest id is now past its last chunk, every chunk left sealed.
        assert _pending(db, store) == 0
        _assert_exact(db, store, "alpha beta", 5)
        db.add_content(store, item(2, document(rng, 20)))
        _assert_exact(db, store, "alpha beta", 5)
        db.merge(store)
        _assert_exact(db, store, "alpha beta", 5)


@pytest.mark.parametrize("query", ["null", "NULL pointer", "null 東京都"])
def test_words_that_spell_array_syntax_are_searched_as_words_in_sealed_blocks(
    postgres_url: str, query: str
) -> None:
    # A search sends its tokens as one array literal: an unquoted null element is SQL's
    # NULL, which matches no token.
    with _database(postgres_url, block_chunks=2) as db:
        store = db.create_store("s", None, None).store_id
        for number, text in enumerate(["null pointer", "a NULL value", "東京都 null", "none"]):
            db.add_content(store, item(number, text))
        db.merge(store)
        assert _pending(db, store) == 0
        assert len(db.ranked(store, query, 5) or []) == 3
        _assert_exact(db, store, query, 5)


# A plain term, and a CJK word (a phrase of bigrams, matched on positions).
@pytest.mark.parametrize("query", ["alpha", "東京都"])
def test_a_search_that_finds_a_block_sealed_again_under_it_ranks_one_snapshot(
    postgres_url: str, query: str
) -> None:
    rng = random.Random(13)
    with _database(postgres_url, block_chunks=3) as db:
        store, added = _merged_store(db, rng, 4)

        class Racing(BlockCache):
            """Deletes an item (on another pooled connection, committed at once) after
            the search read its blocks' versions, before it reads their chunks."""

            raced = False

            def chunks(self, conn: Any, store_rid: int, versions: Mapping[int, int]) -> Any:
                if not self.raced:
                    self.raced = True
                    db.delete_content(store, added[0].content_id)
                return super().chunks(conn, store_rid, versions)

        racing = Racing()
        db._kept = db._kept._replace(blocks=racing)
        # "alpha" is in every block: the delete changed blocks this search reads.
        _assert_exact(db, store, query, 5)
        assert racing.raced


def test_while_writes_go_on_a_long_tail_is_sealed_in_full_blocks_only(postgres_url: str) -> None:
    # Never idle within the test: only the merges a long tail asks for run.
    with _database(postgres_url, block_chunks=4) as db:
        store = db.create_store("s", None, None).store_id
        rng = random.Random(17)
        db.add_content(store, item(0, document(rng, 12)))  # a short tail: left pending
        # About two lines a chunk: a tail past URGENT_BLOCKS blocks of 4 chunks.
        db.add_content(store, item(1, document(rng, 3 * URGENT_BLOCKS * 4)))
        deadline = time.monotonic() + 10
        while _pending(db, store) >= 4:
            assert time.monotonic() < deadline, "the long tail was never merged"
            time.sleep(0.01)
        with db.db.connection() as conn:
            sizes = [size for (size,) in conn.execute("SELECT size FROM cs_blocks")]
        # Full blocks only; the rest waits for writes to stop (or an explicit merge).
        assert sizes and set(sizes) == {4}
        assert _pending(db, store) > 0
        _assert_exact(db, store, "alpha beta", 5)
        db.merge(store)
        assert _pending(db, store) == 0


def test_a_tail_kept_in_memory_follows_writes_deletes_and_merges_made_elsewhere(
    postgres_url: str,
) -> None:
    # Two backends, each with its own pool and kept tails, as two processes (or two
    # replicas) have: one searches while the other writes, deletes and merges.
    rng = random.Random(23)
    queries = ["alpha", "gamma theta", "東京都", "東", "学校 delta", "Müller café", "beta"]
    with (
        _database(postgres_url, block_chunks=16) as searcher,
        _database(postgres_url, block_chunks=16) as writer,
    ):
        store = writer.create_store("s", None, None).store_id
        # The searcher's start (which seals what is pending) before any write.
        assert searcher.ranked(store, "alpha", 5) == []
        added = [writer.add_content(store, item(n, document(rng, 12)))[0] for n in range(3)]

        def add(number: int) -> None:
            writer.add_content(store, item(number, document(rng, 12)))

        steps: list[Callable[[], object]] = [
            partial(add, 10),
            partial(writer.delete_content, store, added[1].content_id),  # a tail item
            *(partial(add, number) for number in (11, 20, 21, 22)),
            # While writes go on, one full block is sealed: the watermark moves past a
            # part of the kept tail, which leaves it out.
            partial(writer._merge_step, store, wait=True),
            partial(writer.merge, store),  # the watermark moves past all of it
            partial(add, 12),
            partial(writer.delete_content, store, added[0].content_id),  # a sealed item
            partial(add, 13),
        ]
        assert _pending(searcher, store) > 0
        for step in [lambda: None, *steps]:
            step()
            for query in queries:
                _assert_exact(searcher, store, query, 5)
        assert _pending(searcher, store) > 0


def test_hits_name_their_items_rightly_after_the_names_were_kept_and_an_item_deleted(
    postgres_url: str,
) -> None:
    with _database(postgres_url, block_chunks=16) as db:
        store = db.create_store("s", None, None).store_id
        first = db.add_content(store, item(1, "alpha beta\ngamma"))[0]
        second = db.add_content(store, item(2, "alpha delta"))[0]
        hits = db.search(store, "alpha", 5, None)
        assert hits is not None
        assert {(hit.content_id, hit.filename) for hit in hits} == {
            (first.content_id, "doc1.txt"),
            (second.content_id, "doc2.txt"),
        }
        db.delete_content(store, first.content_id)
        third = db.add_content(store, item(3, "alpha epsilon"))[0]
        hits = db.search(store, "alpha", 5, None)
        assert hits is not None
        assert {(hit.content_id, hit.filename) for hit in hits} == {
            (second.content_id, "doc2.txt"),
            (third.content_id, "doc3.txt"),
        }


def test_tails_of_several_stores_past_the_memory_budget_are_dropped_and_read_again(
    postgres_url: str,
) -> None:
    rng = random.Random(29)
    with _database(postgres_url, block_chunks=64) as db:
        db._kept = db._kept._replace(tails=TailCache(size=8))
        stores = [db.create_store(f"s{n}", None, None).store_id for n in range(2)]
        for round_ in range(3):
            for number, store in enumerate(stores):
                db.add_content(store, item(10 * round_ + number, document(rng, 12)))
                for query in ("alpha", "東京都", "学校 delta"):
                    _assert_exact(db, store, query, 5)
        # Only the store searched last is kept: its tail alone is past the budget.
        assert list(db._kept.tails._tails) == [_rid(db, stores[-1])]


def _rid(db: PostgresContentDB, store_id: str) -> int:
    with db.db.connection() as conn:
        row = conn.execute("SELECT rid FROM cs_stores WHERE id = %s", (store_id,)).fetchone()
    assert row is not None
    return int(row[0])
