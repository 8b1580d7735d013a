"""The sync-tool thread pool: bounded, abandonable, and anyio-aware."""

from __future__ import annotations

import contextvars
import threading

import anyio
import anyio.from_thread
import pytest

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
