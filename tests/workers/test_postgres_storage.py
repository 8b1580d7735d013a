"""State beyond one machine: the content store and planning on one PostgreSQL database.

Real worker processes, a real PostgreSQL server (``$NATIVEMCP_TEST_DATABASE_URL``, a
schema per test: see ``conftest.py``). Two pools with different data folders stand for
two machines.
"""

from __future__ import annotations

import glob
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.abc
import pytest
from _process import free_port

from nativemcp.protocol import ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers import ServerConfig, _database, load_server
from nativemcp.workers._database import Database
from nativemcp.workers.content_store import ReadContentResult, SearchResult, StoreInfo
from nativemcp.workers.content_store._chunking import chunk_lines, split_lines
from nativemcp.workers.content_store._db import ContentDB, NewContent
from nativemcp.workers.content_store._pg import MIGRATIONS, PostgresContentDB
from nativemcp.workers.planning import PlanningState, Todo

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


SAMPLES = Path(__file__).parents[2] / "workers" / "content_store" / "samples"


def pool(data_dir: Path, database_url: str) -> WorkerPool:
    return WorkerPool(
        data_dir=data_dir,
        builtins=["content-store", "planning"],
        in_process=(),
        database_url=database_url,
    )


@pytest.mark.real_process
async def test_two_pools_on_one_database_share_stores_contents_and_plans(
    tmp_path: Path, postgres_url: str
) -> None:
    with anyio.fail_after(60):
        async with (
            pool(tmp_path / "a", postgres_url) as first,
            pool(tmp_path / "b", postgres_url) as second,
        ):
            store_a, store_b = first.server("content-store"), second.server("content-store")
            created = await store_a.create_store(name="shared")
            added = await store_b.add_content(
                store_id=created.store_id, content="한국어 문서\n우리는 학교에서 공부했다"
            )
            listing = await store_a.list_content(store_id=created.store_id)
            assert [c.content_id for c in listing.contents] == [added.content_id]
            found = await store_a.keyword_similarity_search(store_id=created.store_id, query="학교")
            assert [(h.content_id, h.line_range) for h in found.results] == [
                (added.content_id, (1, 2))
            ]

            plan_a, plan_b = first.server("planning"), second.server("planning")
            await plan_a.create_goal(goal="ship it")
            await plan_b.add_todo(name="write the README")
            state = await plan_a.get_current_state()
            expected = PlanningState(goal="ship it", todos=[Todo(id=1, name="write the README")])
            assert state == expected
    # Nothing of the shared state was written to either data folder.
    assert not glob.glob(str(tmp_path / "*" / "*" / "*.sqlite3"))


@pytest.mark.real_process
async def test_the_same_text_added_at_once_from_two_pools_is_stored_once(
    tmp_path: Path, postgres_url: str
) -> None:
    texts = [f"document {n}\nthe same words in both pools, line {n}" for n in range(8)]
    with anyio.fail_after(90):
        async with (
            pool(tmp_path / "a", postgres_url) as first,
            pool(tmp_path / "b", postgres_url) as second,
        ):
            store_id = (await first.server("content-store").create_store(name="race")).store_id
            results: dict[tuple[int, int], tuple[str, bool]] = {}

            async def add(side: int, member: WorkerPool, n: int) -> None:
                added = await member.server("content-store").add_content(
                    store_id=store_id, content=texts[n]
                )
                results[side, n] = (added.content_id, added.duplicate)

            async with anyio.create_task_group() as tg:
                for n in range(len(texts)):
                    tg.start_soon(add, 0, first, n)
                    tg.start_soon(add, 1, second, n)
            listing = await second.server("content-store").list_content(store_id=store_id)
    assert listing.total == len(texts)
    for n in range(len(texts)):
        (id_a, dup_a), (id_b, dup_b) = results[0, n], results[1, n]
        assert id_a == id_b
        assert sorted([dup_a, dup_b]) == [False, True]


@pytest.mark.real_process
async def test_todos_added_at_once_from_two_pools_get_distinct_ids_in_one_plan(
    tmp_path: Path, postgres_url: str
) -> None:
    with anyio.fail_after(90):
        async with (
            pool(tmp_path / "a", postgres_url) as first,
            pool(tmp_path / "b", postgres_url) as second,
        ):

            async def add(member: WorkerPool, name: str) -> None:
                await member.server("planning").add_todo(name=name)

            async with anyio.create_task_group() as tg:
                for n in range(10):
                    tg.start_soon(add, first, f"a{n}")
                    tg.start_soon(add, second, f"b{n}")
            state = await first.server("planning").get_current_state()
    assert sorted(todo.id for todo in state.todos) == list(range(1, 21))
    assert sorted(todo.name for todo in state.todos) == sorted(
        [f"a{n}" for n in range(10)] + [f"b{n}" for n in range(10)]
    )


@asynccontextmanager
async def tcp_forwarder(target: tuple[str, int], port: int) -> AsyncIterator[None]:
    """Forward 127.0.0.1:port to ``target`` until the block ends; then every forwarded
    connection is cut (the database "goes away" for whoever connected through it)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)

    async def pipe(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
        try:
            async for data in source:
                await sink.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            await sink.aclose()

    async def handle(client: anyio.abc.SocketStream) -> None:
        async with (
            client,
            await anyio.connect_tcp(*target) as upstream,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(pipe, client, upstream)
            tg.start_soon(pipe, upstream, client)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


@pytest.mark.real_process
async def test_a_database_that_goes_away_fails_calls_clearly_and_the_worker_recovers(
    tmp_path: Path, postgres_url: str
) -> None:
    real = urlsplit(postgres_url)
    port = free_port()
    via = urlunsplit(real._replace(netloc=f"{real.username}:{real.password}@127.0.0.1:{port}"))
    target = (real.hostname or "127.0.0.1", real.port or 5432)
    with anyio.fail_after(120):
        async with pool(tmp_path, via) as members:
            store = members.server("content-store")
            planning = members.server("planning")
            async with tcp_forwarder(target, port):
                store_id = (await store.create_store(name="kept")).store_id
                await planning.create_goal(goal="survive an outage")

            # The database is gone: calls fail with an error naming it, password hidden.
            # Each worker waits out its pool's checkout timeout before it says so: the
            # two workers are asked at once, so the test waits for it once.
            failed: list[ToolError] = []

            async def fails(call: Callable[[], Awaitable[object]]) -> None:
                with pytest.raises(ToolError) as caught:
                    await call()
                failed.append(caught.value)

            async with anyio.create_task_group() as tg:
                tg.start_soon(fails, store.list_stores)
                tg.start_soon(fails, planning.get_current_state)
            assert len(failed) == 2
            for error in failed:
                assert error.structured_content is not None
                assert error.structured_content["code"] == "DATABASE_UNAVAILABLE"
                shown = f"{error.message} {error.structured_content} {error.text}"
                assert f"127.0.0.1:{port}" in shown and real.path in shown
                assert not real.password or real.password not in shown

            # It comes back: the same workers answer again, with the state kept.
            async with tcp_forwarder(target, port):
                listing = await store.list_stores()
                assert [s.store_id for s in listing.stores] == [store_id]
                assert (await planning.get_current_state()).goal == "survive an outage"


def _corpus() -> list[tuple[str, str]]:
    return [(path.name, path.read_text()) for path in sorted(SAMPLES.iterdir()) if path.is_file()]


def _fill(db: ContentDB | PostgresContentDB) -> str:
    """A store holding the sample corpus in small chunks (many per file); its id."""
    store_id = db.create_store("corpus", None, None).store_id
    for filename, text in _corpus():
        lines = split_lines(text)
        chunks = chunk_lines(lines, max_chars=300, max_lines=6, overlap_lines=1)
        db.add_content(
            store_id, NewContent(filename, "text/plain", text, filename, len(lines), chunks)
        )
    return store_id


def _filled(url: str) -> str:
    """The sample corpus stored through a backend that is closed again; the store's id."""
    db = PostgresContentDB(url)
    try:
        return _fill(db)
    finally:
        db.close()


def _assert_searches_as_sqlite(tmp_path: Path, url: str, store_id: str) -> None:
    """Every query finds on PostgreSQL (reopened) what SQLite finds, in the same order
    and with the same BM25 scores."""
    reference = ContentDB(tmp_path / "content.sqlite3")
    reopened = PostgresContentDB(url)
    try:
        reference_id = _fill(reference)
        for query in QUERIES:
            expected = reference.search(reference_id, query, 10, None)
            got = reopened.search(store_id, query, 10, None)
            assert expected is not None and got is not None
            assert [(h.filename, h.line_range) for h in got] == [
                (h.filename, h.line_range) for h in expected
            ], query
            for mine, theirs in zip(got, expected, strict=True):
                assert mine.raw_score == pytest.approx(theirs.raw_score, rel=1e-6), query
    finally:
        reference.close()
        reopened.close()


def _count(url: str, query: str) -> int:
    """The one number ``query`` selects."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def _pending_chunks(url: str) -> int:
    """Chunks past their store's merged watermark (not in sealed blocks), in every store."""
    return _count(
        url,
        "SELECT count(*) FROM cs_chunks c JOIN cs_stores s ON s.rid = c.store_rid"
        " WHERE c.id > s.merged",
    )


def _miscounted_stores(url: str) -> int:
    """Stores whose row keeps another block count than their sealed blocks, or another
    newest chunk id than their chunks' (nothing was deleted)."""
    return _count(
        url,
        "SELECT count(*) FROM cs_stores s"
        " WHERE s.blocks <> (SELECT count(*) FROM cs_blocks b WHERE b.store_rid = s.rid)"
        " OR s.newest <> (SELECT max(id) FROM cs_chunks c WHERE c.store_rid = s.rid)",
    )


def _schema_version(url: str, component: str) -> int | None:
    """The version the schema table records for ``component``."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT version FROM nativemcp_schema WHERE component = %s", (component,)
        ).fetchone()
    return None if row is None else int(row[0])


QUERIES = [
    "학교",
    "학교에서 공부",
    "東京",
    "東",
    "北京 故宫",
    "muller",
    "Müller café",
    "butter sugar flour",
    "release notes",
    "the",
    'NOT "x" OR (y*)',
    "inventory widget",
    "zzzz-not-there",
    "東京東京",
    "Tokyo tokyo TOKYO",
    "recette, crème; brûlée!",
    "2024",
]


def test_postgres_search_finds_and_ranks_what_sqlite_does(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite_db = ContentDB(tmp_path / "content.sqlite3")
    # Small blocks, merged only when the test says so: first every chunk is pending,
    # then every one is sealed, in many blocks.
    pg_db = PostgresContentDB(postgres_url, merge_idle=3600, block_chunks=16)
    try:
        ids = {"sqlite": _fill(sqlite_db), "pg": _fill(pg_db)}
        for merged in (False, True):
            if merged:
                pg_db.merge(ids["pg"])
            for query in QUERIES:
                expected = sqlite_db.search(ids["sqlite"], query, 10, None)
                got = pg_db.search(ids["pg"], query, 10, None)
                assert expected is not None and got is not None
                assert [(h.filename, h.line_range, h.matched_terms) for h in got] == [
                    (h.filename, h.line_range, h.matched_terms) for h in expected
                ], (query, merged)
                for mine, theirs in zip(got, expected, strict=True):
                    assert mine.raw_score == pytest.approx(theirs.raw_score, rel=1e-6), query
                    assert mine.score > 0
    finally:
        sqlite_db.close()
        pg_db.close()


async def test_text_with_nul_backslashes_and_null_words_round_trips_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    server = load_server(
        "nativemcp.workers.content_store:create_server",
        ServerConfig(data_dir=tmp_path, database_url=postgres_url),
    )
    try:
        created = await server.call_tool("create_store", {"name": "nul\x00name"})
        assert isinstance(created.structured_result, StoreInfo)
        assert created.structured_result.name == "nul\x00name"
        store_id = created.structured_result.store_id
        text = "a\x00b \uffff0\nnull back\\slash\ttab \\N"
        await server.call_tool("add_content", {"store_id": store_id, "content": text})
        found = await server.call_tool(
            "keyword_similarity_search", {"store_id": store_id, "query": "null"}
        )
        assert isinstance(found.structured_result, SearchResult)
        (hit,) = found.structured_result.results
        assert hit.line_range == (1, 2)
        # The chunk's text as stored, escapes undone (a search reads it in binary).
        assert "a\x00b \uffff0" in hit.context
        read = await server.call_tool(
            "read_content", {"store_id": store_id, "content_id": hit.content_id}
        )
        assert isinstance(read.structured_result, ReadContentResult)
        assert read.structured_result.content == text
    finally:
        await server.aclose()


def test_a_newer_schema_in_the_database_is_refused_with_a_clear_error(postgres_url: str) -> None:
    import psycopg

    db = PostgresContentDB(postgres_url)
    try:
        db.list_stores()  # creates the schema, the newest version
    finally:
        db.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT version FROM nativemcp_schema WHERE component = 'content-store'"
        ).fetchone()
        assert row == (len(MIGRATIONS),)
        conn.execute("UPDATE nativemcp_schema SET version = 99")
    newer = PostgresContentDB(postgres_url)
    try:
        with pytest.raises(
            RuntimeError, match=f"version 99; this nativemcp understands up to {len(MIGRATIONS)}"
        ):
            newer.list_stores()
    finally:
        newer.close()


def test_a_version_2_database_is_upgraded_to_sealed_blocks_on_start(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    store_id = _filled(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Back to the schema as version 2 left it: per-token tables, no blocks.
        conn.execute("DROP TABLE cs_blocks, cs_block_postings")
        conn.execute("DROP INDEX cs_chunks_by_store")
        conn.execute(
            "ALTER TABLE cs_stores DROP COLUMN merged, DROP COLUMN blocks, DROP COLUMN newest"
        )
        # Version 2 kept each chunk's distinct tokens, sorted, as an array.
        conn.execute(
            "ALTER TABLE cs_chunks ALTER COLUMN tokens TYPE TEXT[]"
            " USING string_to_array(btrim(tokens), ' ')"
        )
        conn.execute(
            'UPDATE cs_chunks SET tokens = ARRAY(SELECT DISTINCT t COLLATE "C"'
            " FROM unnest(tokens) AS t ORDER BY 1)"
        )
        for statement in MIGRATIONS[0]:
            if "cs_postings" in statement or "cs_terms" in statement:
                conn.execute(statement)
        for statement in MIGRATIONS[1]:
            conn.execute(statement)
        conn.execute("UPDATE nativemcp_schema SET version = 2 WHERE component = 'content-store'")
    # What was stored before the upgrade is found as before: sealed when it started.
    _assert_searches_as_sqlite(tmp_path, postgres_url, store_id)
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname IN ('cs_postings', 'cs_terms')"
        ).fetchone()
    assert _pending_chunks(postgres_url) == 0
    assert tables == (0,)
    assert _schema_version(postgres_url, "content-store") == len(MIGRATIONS)


def test_a_version_3_database_keeps_its_sealed_blocks_and_searches_them_after_the_upgrade(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    db = PostgresContentDB(postgres_url)
    try:
        store_id = _fill(db)
        db.merge(store_id)
    finally:
        db.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Back to the schema as version 3 left it: no block facts on the postings rows.
        conn.execute(
            "ALTER TABLE cs_block_postings DROP CONSTRAINT cs_block_postings_pkey,"
            " ADD PRIMARY KEY (store_rid, token, lo) INCLUDE (bound, df)"
        )
        conn.execute("ALTER TABLE cs_block_postings DROP COLUMN average, DROP COLUMN version")
        conn.execute("ALTER TABLE cs_stores DROP COLUMN blocks, DROP COLUMN newest")
        conn.execute("UPDATE nativemcp_schema SET version = 3 WHERE component = 'content-store'")
    # Searched from the blocks sealed before the upgrade (nothing is pending).
    _assert_searches_as_sqlite(tmp_path, postgres_url, store_id)
    with psycopg.connect(postgres_url) as conn:
        unlike = conn.execute(
            "SELECT count(*) FROM cs_block_postings p JOIN cs_blocks b"
            " ON b.store_rid = p.store_rid AND b.lo = p.lo"
            " WHERE p.version <> b.version OR p.average <> b.average"
        ).fetchone()
        rows = conn.execute("SELECT count(*) FROM cs_block_postings").fetchone()
    assert _pending_chunks(postgres_url) == 0
    assert _miscounted_stores(postgres_url) == 0
    assert unlike == (0,)
    assert rows is not None and rows[0] > 0
    assert _schema_version(postgres_url, "content-store") == len(MIGRATIONS)


def test_an_index_made_by_another_tokenizer_version_is_rebuilt_on_start(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    from nativemcp.workers.content_store._pg import INDEX_VERSION

    store_id = _filled(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # As if another tokenizer had written the index: wrong tokens, counts, lengths
        # and totals.
        conn.execute("UPDATE cs_block_postings SET token = token || 'x', df = df + 7")
        conn.execute("UPDATE cs_chunks SET tokens = tokens || 'x ', length = 1")
        conn.execute("UPDATE cs_stores SET token_total = 1")
        conn.execute(
            "UPDATE nativemcp_schema SET version = %s WHERE component = 'content-store.index'",
            (INDEX_VERSION - 1,),
        )
    _assert_searches_as_sqlite(tmp_path, postgres_url, store_id)
    assert _miscounted_stores(postgres_url) == 0
    assert _schema_version(postgres_url, "content-store.index") == INDEX_VERSION


def test_the_connection_pool_size_is_an_option(postgres_url: str) -> None:
    db = PostgresContentDB(postgres_url, pool_size=2)
    try:
        assert db.db.pool_size == 2
        assert db.db._pool.max_size == 2
        store = db.create_store("sized", None, None)
        assert db.search(store.store_id, "anything", 5, None) == []
    finally:
        db.close()
    with pytest.raises(ValueError, match="pool size must be 1 or more"):
        PostgresContentDB(postgres_url, pool_size=0)


def test_the_content_store_plans_its_statements_once_per_connection(postgres_url: str) -> None:
    db = PostgresContentDB(postgres_url)
    try:
        with db.db.connection() as conn:
            row = conn.execute("SHOW plan_cache_mode").fetchone()
        assert row == ("force_generic_plan",)
        # A CJK prefix still finds its tokens through the key under a generic plan.
        store = db.create_store("cjk", None, None).store_id
        lines = ["東京 大阪", "東北", "北京"]
        db.add_content(
            store,
            NewContent("c.txt", "text/plain", "\n".join(lines), "c", 3, chunk_lines(lines)),
        )
        db.merge(store)
        found = db.search(store, "東", 5, None)
        assert found is not None and found[0].line_range[0] == 1
    finally:
        db.close()


def _backend_query(url: str, pid: int) -> str | None:
    """What the server backend ``pid`` last ran (None: the backend is gone)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return None if row is None else str(row[0])


@contextmanager
def _probe(url: str, pool_size: int) -> Iterator[Database]:
    """A `Database` of no schema, with ``pool_size`` connections, closed after."""
    db = Database(url, "probe", [], pool_size=pool_size)
    try:
        yield db
    finally:
        db.close()


def test_a_pooled_connection_in_use_a_moment_ago_is_lent_again_without_a_round_trip(
    postgres_url: str,
) -> None:
    with _probe(postgres_url, 1) as db:
        with db.connection() as conn:
            conn.execute("SELECT 'marker'")
            pid = conn.info.backend_pid
        with db.connection() as conn:
            assert conn.info.backend_pid == pid
            # The checkout sent nothing (a check's empty statement would show as '').
            assert _backend_query(postgres_url, pid) == "SELECT 'marker'"


def _pids_in_turn(db: Database, checkouts: int) -> list[int]:
    """The server processes of ``checkouts`` checkouts one after another."""
    pids = []
    for _ in range(checkouts):
        with db.connection() as conn:
            pids.append(conn.info.backend_pid)
    return pids


def _open_two(db: Database) -> set[int]:
    """Make the pool hold two connections (two checkouts at once); their processes."""
    with db.connection() as first, db.connection() as second:
        return {first.info.backend_pid, second.info.backend_pid}


def test_the_connection_returned_last_is_lent_next(postgres_url: str) -> None:
    with _probe(postgres_url, 2) as db:
        both = _open_two(db)
        assert len(both) == 2
        # psycopg_pool alone lends them in turn (first in, first out); the one
        # returned last is lent again and again instead.
        pids = _pids_in_turn(db, 6)
        assert len(set(pids)) == 1 and pids[0] in both


def test_a_connection_goes_back_to_the_pool_after_keep_seconds(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_database, "KEEP_SECONDS", 0.0)
    with _probe(postgres_url, 2) as db:
        both = _open_two(db)
        # Never kept: the pool's own order, both in turn.
        assert set(_pids_in_turn(db, 4)) == both


def test_a_checkout_waiting_in_the_pool_gets_the_connection_returned(postgres_url: str) -> None:
    import threading
    import time

    with _probe(postgres_url, 1) as db:
        waited: list[float] = []
        holding = threading.Event()

        def second() -> None:
            holding.wait()
            start = time.monotonic()
            with db.connection() as conn:  # waits in the pool for the only connection
                conn.execute("SELECT 1")
            waited.append(time.monotonic() - start)

        thread = threading.Thread(target=second)
        thread.start()
        with db.connection():
            holding.set()
            time.sleep(0.3)  # the other checkout is waiting in the pool by now
        thread.join(10)
        # Handed on at once, not kept aside while the other waits for its timeout.
        assert waited and waited[0] < 2


def test_a_pooled_connection_the_server_ended_is_replaced_before_a_call_gets_it(
    postgres_url: str,
) -> None:
    import psycopg

    with _probe(postgres_url, 1) as db:
        with db.connection() as conn:
            pid = conn.info.backend_pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        assert _backend_query(postgres_url, pid) is None
        with db.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.info.backend_pid != pid
