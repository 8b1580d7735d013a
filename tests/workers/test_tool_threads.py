"""The sync-tool thread pool: bounded, abandonable, and anyio-aware."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable

import anyio
import anyio.from_thread
import pytest

from nativemcp.proxy import CallTimeout, WorkerPool
from nativemcp.workers._server import TOOL_THREADS
from nativemcp.workers._threads import ToolThreads

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


_request: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def test_no_more_than_the_limit_run_at_once() -> None:
    threads = ToolThreads(3)
    lock = threading.Lock()
    running = 0
    peak = 0
    release = threading.Event()

    def work() -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(10)
        with lock:
            running -= 1
        return 1

    results: list[int] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(10):

                async def one() -> None:
                    results.append(await threads.run(work))

                tg.start_soon(one)
            await anyio.to_thread.run_sync(lambda: _wait_for(lambda: running == 3))
            release.set()
    assert results == [1] * 10 and peak == 3


def _wait_for(condition: object) -> None:
    for _ in range(1000):
        if condition():  # type: ignore[operator]
            return
        threading.Event().wait(0.01)


async def test_an_abandoned_call_gives_its_slot_to_the_next_at_once() -> None:
    threads = ToolThreads(1)
    stuck = threading.Event()
    with anyio.move_on_after(0.1):
        await threads.run(lambda: stuck.wait(10))
    with anyio.fail_after(5):  # the stuck thread still holds nothing
        assert await threads.run(lambda: "next") == "next"
    stuck.set()


async def test_a_waiter_cancelled_in_line_leaves_the_line_intact() -> None:
    threads = ToolThreads(1)
    release = threading.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(threads.run, lambda: release.wait(10))
            await anyio.sleep(0.05)
            with anyio.move_on_after(0.05):
                await threads.run(lambda: "never")
            release.set()
        assert await threads.run(lambda: "after") == "after"


async def test_exceptions_context_variables_and_from_thread_reach_through() -> None:
    threads = ToolThreads(2)
    with pytest.raises(ZeroDivisionError):
        await threads.run(lambda: 1 / 0)
    _request.set("call-7")
    assert await threads.run(_request.get) == "call-7"

    async def on_loop() -> str:
        return "from the loop"

    assert await threads.run(lambda: anyio.from_thread.run(on_loop)) == "from the loop"


def _tool_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "nativemcp-tool")


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) for other threads to make ``condition`` true: no event says when
    a thread has exited."""
    with anyio.fail_after(10):
        while not condition():  # noqa: ASYNC110 - the state is other threads' lives
            await anyio.sleep(0.01)


async def test_threads_a_storm_of_abandoned_calls_needed_end_with_their_calls() -> None:
    before = _tool_threads()
    threads = ToolThreads(2)
    release = threading.Event()
    for _ in range(12):  # each abandoned at once: its slot frees, its thread runs on
        with anyio.move_on_after(0.01):
            await threads.run(lambda: release.wait(10))
    assert _tool_threads() - before >= 12
    release.set()
    # At most the limit stay idle; the rest end (they were kept forever).
    await _until(lambda: _tool_threads() - before <= 2)
    assert await threads.run(lambda: "still serving") == "still serving"


@pytest.mark.real_process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
async def test_a_worker_keeps_at_most_its_limit_of_idle_threads_after_a_storm() -> None:
    async with WorkerPool(["_servers:server"], timeout=30) as pool:
        testing = pool.server("testing")
        pid = await testing.pid()

        async def abandoned() -> None:
            with pytest.raises(CallTimeout):
                await testing.call_tool("block", {"seconds": 2}, timeout=0.05)

        # Waves: each finds the slots its predecessor abandoned free, and starts its
        # own threads while the earlier ones still run (a call waiting for a slot when
        # it is abandoned never starts, so one big wave would not do).
        for _ in range(4):
            async with anyio.create_task_group() as tg:
                for _ in range(TOOL_THREADS):
                    tg.start_soon(abandoned)
        assert _os_threads(pid) > 2 * TOOL_THREADS
        # Idle: TOOL_THREADS; besides them the event loop, the reading thread, its
        # watcher and the parent watchdog (and a frame writer's drainer while it drains).
        await _until(lambda: _os_threads(pid) <= TOOL_THREADS + 6)
        assert await testing.echo(text="after") == "after"


def _os_threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))
