"""One slow, abandoned or blocked call never holds up the other calls of a worker.

Sync tools run in worker threads (unless declared ``inline``); the content store reaches
SQLite from threads only. Each test here would stall for the length of the blocking
work (seconds) if that work ran on the worker's event loop or its reading thread, and
fails at its bound.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from nativemcp.protocol import ToolError
from nativemcp.proxy import CallOptions, CallTimeout, WorkerPool
from nativemcp.proxy._local import LocalServer
from nativemcp.workers import Context, Server
from nativemcp.workers.content_store import MAX_OFFSET

pytestmark = [pytest.mark.anyio]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=30) as pool:
        yield pool


@pytest.mark.real_process
async def test_a_ping_answers_while_a_sync_tool_sleeps_and_the_tool_sees_its_cancel(
    pool: WorkerPool,
) -> None:
    testing = pool.server("testing")
    started = anyio.Event()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:

            async def sleep_long() -> None:
                await testing.sleepy(
                    key="ping-while-sleeping", seconds=60, on_progress=lambda *_: started.set()
                )

            tg.start_soon(sleep_long)
            await started.wait()
            # The tool sleeps for a minute; these answer long before.
            with anyio.fail_after(10):
                await testing.ping()
                assert await testing.echo(text="not held up") == "not held up"
            tg.cancel_scope.cancel()
        assert await testing.saw_cancel(key="ping-while-sleeping")


@pytest.mark.real_process
async def test_a_timed_out_sync_call_frees_its_caller_and_the_tool_sees_it(
    pool: WorkerPool,
) -> None:
    testing = pool.server("testing")
    with anyio.fail_after(10), pytest.raises(CallTimeout):
        await testing.sleepy(key="timed-out", seconds=60, call_timeout=0.2)
    assert await testing.saw_cancel(key="timed-out")


@pytest.mark.real_process
async def test_each_call_times_out_at_its_own_deadline(pool: WorkerPool) -> None:
    # The deadlines share one timer: a short one after a long one moves it earlier,
    # and the long one still fires after the short one is gone.
    testing = pool.server("testing")
    timed_out: dict[str, float] = {}
    start = anyio.current_time()

    async def call(label: str, timeout: float) -> None:
        with pytest.raises(CallTimeout):
            await testing.block(seconds=5, call_timeout=timeout)
        timed_out[label] = anyio.current_time() - start

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "long", 1.5)
            await anyio.sleep(0.05)
            tg.start_soon(call, "short", 0.3)
    assert list(timed_out) == ["short", "long"]
    assert 0.3 <= timed_out["short"] < 1.2
    assert 1.5 <= timed_out["long"] < 3.0


@pytest.mark.real_process
async def test_abandoned_sync_calls_do_not_delay_the_next_call(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(20):

                async def abandon() -> None:
                    with pytest.raises(CallTimeout):
                        await testing.block(seconds=5, call_timeout=0.01)

                tg.start_soon(abandon)
    # Twenty blocked threads (five seconds each): the worker still answers at once.
    with anyio.fail_after(4):
        assert await testing.echo(text="next") == "next"


async def test_sync_tools_run_in_threads_and_inline_ones_on_the_loop() -> None:
    server = Server("threads")

    @server.tool
    def where() -> bool:
        return threading.current_thread() is threading.main_thread()

    @server.tool(inline=True)
    def where_inline() -> bool:
        return threading.current_thread() is threading.main_thread()

    assert (await server.call_tool("where")).structured_result is False
    assert (await server.call_tool("where_inline")).structured_result is True
    assert server.call_tool_now("where") is None  # not on the worker's fast path
    now = server.call_tool_now("where_inline")
    assert now is not None and now.structured_result is True


async def test_a_cancelled_in_process_call_frees_the_caller_and_tells_the_tool() -> None:
    server = Server("cancel")
    finished = threading.Event()
    seen: list[bool] = []

    @server.tool
    def wait(ctx: Context) -> str:
        while not ctx.cancelled and not finished.wait(0.01):
            pass
        seen.append(ctx.cancelled)
        finished.set()
        return "done"

    local = LocalServer(server)
    with anyio.fail_after(10), pytest.raises(CallTimeout):
        await local.call("wait", {}, CallOptions(timeout=0.1))
    assert await anyio.to_thread.run_sync(finished.wait, 10)
    assert seen == [True]


def _content_pool(data_dir: Path, **options: object) -> WorkerPool:
    return WorkerPool(
        data_dir=data_dir,
        builtins=["content-store"],
        in_process=(),
        options={"content-store": options},
        timeout=60,
    )


@pytest.mark.real_process
async def test_a_write_waiting_for_another_process_lock_holds_up_no_other_call(
    tmp_path: Path,
) -> None:
    async with _content_pool(tmp_path) as pool:
        store = pool.server("content-store")
        first = await store.create_store(name="first")
        # Another connection (another process, as far as SQLite knows) takes the
        # write lock: the worker's next write waits for it, up to SQLite's timeout.
        other = sqlite3.connect(tmp_path / "content-store" / "content.sqlite3")
        other.isolation_level = None
        other.execute("BEGIN IMMEDIATE")
        try:
            async with anyio.create_task_group() as tg:
                created: list[object] = []

                async def write() -> None:
                    created.append(await store.create_store(name="second"))

                tg.start_soon(write)
                with anyio.fail_after(5):
                    await store.ping()
                    listing = await store.list_stores()
                    assert [s.store_id for s in listing.stores] == [first.store_id]
                assert not created  # still waiting for the lock
                other.execute("ROLLBACK")
        finally:
            other.close()
        assert len((await store.list_stores()).stores) == 2


@pytest.mark.real_process
async def test_a_huge_query_is_refused_naming_the_limit_and_the_option_and_repeats_count_once(
    tmp_path: Path,
) -> None:
    async with _content_pool(tmp_path) as pool:
        store = pool.server("content-store")
        created = await store.create_store(name="q")
        await store.add_content(store_id=created.store_id, content="alpha beta\ngamma")
        with anyio.fail_after(10), pytest.raises(ToolError) as caught:
            await store.keyword_similarity_search(store_id=created.store_id, query="word " * 60_000)
        assert "at most 2000 are searched (content-store option max_query_chars)" in str(
            caught.value
        )
        many = " ".join(f"term{i}" for i in range(65))
        with pytest.raises(ToolError, match="65 distinct terms; at most 64"):
            await store.keyword_similarity_search(store_id=created.store_id, query=many)
        found = await store.keyword_similarity_search(
            store_id=created.store_id, query=" ".join(["alpha"] + [f"t{i}" for i in range(63)])
        )
        assert found.results
        # The limit counts distinct terms: a term repeated 70 times is one term.
        repeated = await store.keyword_similarity_search(
            store_id=created.store_id, query=" ".join(["alpha"] * 70)
        )
        assert repeated.results


@pytest.mark.real_process
async def test_query_limits_can_be_raised_and_a_long_search_holds_up_no_ping(
    tmp_path: Path,
) -> None:
    async with _content_pool(tmp_path, max_query_chars=10**7, max_query_terms=10**6) as pool:
        store = pool.server("content-store")
        created = await store.create_store(name="q")
        await store.add_content(store_id=created.store_id, content="alpha beta\ngamma")
        query = " ".join(f"w{i}" for i in range(40_000)) + " alpha"
        async with anyio.create_task_group() as tg:
            found: list[object] = []

            async def search() -> None:
                found.append(
                    await store.keyword_similarity_search(store_id=created.store_id, query=query)
                )

            tg.start_soon(search)
            with anyio.fail_after(5):
                await store.ping()
        assert found


@pytest.mark.real_process
async def test_an_offset_past_the_limit_is_an_argument_error_not_sqlites(tmp_path: Path) -> None:
    async with _content_pool(tmp_path) as pool:
        store = pool.server("content-store")
        created = await store.create_store(name="o")
        response = await store.call_tool(
            "list_content", {"store_id": created.store_id, "offset": 2**63}
        )
        assert response.error is not None
        assert f"<= {MAX_OFFSET}" in response.error.message
        assert "SQLite" not in response.error.message and "too large" not in response.error.message
