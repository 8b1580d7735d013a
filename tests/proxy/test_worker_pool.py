"""The worker pool with real worker processes: typed calls, concurrency, lifecycle."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any, ClassVar, Protocol

import anyio
import pytest
from _process import alive
from _servers import Item, Listing, Money

from nativemcp.protocol import INVALID_PARAMS, NativeMCPResponse, ToolError, unwrap
from nativemcp.proxy import (
    ArgumentsError,
    CallTimeout,
    FrameTooLarge,
    RestartPolicy,
    ServerCrashed,
    ServerStartError,
    UnknownServer,
    WorkerPool,
)
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


async def test_typed_method_returns_the_tools_own_types(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    listing = await testing.listing(count=3)
    assert isinstance(listing, Listing)
    assert listing.total == 3
    first = listing.contents[0]
    assert isinstance(first, Item)
    assert first.added == dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    assert first.item_id == uuid.UUID(int=0)


async def test_list_and_dataclass_results_convert_exactly(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    items = await testing.items(count=2)
    assert [item.file_name for item in items] == ["file0.md", "file1.md"]
    money = await testing.money(amount="12.50")
    assert money == Money(amount=Decimal("12.50"), currency="EUR")


async def test_raw_call_returns_the_response_with_both_structured_forms(pool: WorkerPool) -> None:
    response = await pool.server("testing").call_tool("listing", {"count": 2})
    assert isinstance(response, NativeMCPResponse)
    assert response.result is not None
    assert response.result.content[0].type == "text"
    assert "file0.md" in response.result.content[0].text  # type: ignore[union-attr]
    assert response.result.structured_content is not None
    assert response.result.structured_content["hasMore"] is False
    assert unwrap(response, Listing).contents[1].file_name == "file1.md"


async def test_text_then_resource_response_arrives_whole(pool: WorkerPool) -> None:
    response = await pool.server("testing").call_tool("card", {"title": "Q3"})
    assert response.result is not None
    kinds = [block.type for block in response.result.content]
    assert kinds == ["text", "resource"]
    assert unwrap(response, dict[str, str]) == {"title": "Q3"}


async def test_arguments_as_dict_json_string_or_keywords(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    assert await testing.echo({"text": "a"}) == "a"
    assert await testing.echo('{"text": "b"}') == "b"
    assert await testing.echo(text="c") == "c"
    with pytest.raises(ArgumentsError, match="not JSON"):
        await testing.echo("hello there")
    with pytest.raises(ArgumentsError, match="given twice"):
        await testing.echo({"text": "a"}, text="b")


async def test_untyped_results_allow_attribute_access(pool: WorkerPool) -> None:
    scope = await pool.server("testing").scope()
    assert scope.session is None
    assert scope["thread"] is None


async def test_invalid_arguments_are_a_32602_error_naming_the_field(pool: WorkerPool) -> None:
    with pytest.raises(ToolError) as caught:
        await pool.server("testing").listing(count="many")
    assert caught.value.code == INVALID_PARAMS
    assert "$.count" in caught.value.message


async def test_unknown_tool_lists_the_available_tools(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    response = await testing.call_tool("nope", {})
    assert response.error is not None
    assert "listing" in response.error.message
    with pytest.raises(AttributeError, match="has no tool 'nope'"):
        testing.nope  # noqa: B018


async def test_a_raising_tool_is_an_error_result_without_traceback(pool: WorkerPool) -> None:
    response = await pool.server("testing").call_tool("fail", {"message": "disk full"})
    assert response.result is not None and response.result.is_error
    text = response.result.content[0].text  # type: ignore[union-attr]
    assert "disk full" in text
    assert "Traceback" not in text
    with pytest.raises(ToolError, match="disk full"):
        await pool.server("testing").fail(message="disk full")


async def test_a_deliberate_tool_error_keeps_its_structured_content(pool: WorkerPool) -> None:
    with pytest.raises(ToolError) as caught:
        await pool.server("testing").refuse(store_id="s-1")
    assert "s-1" in caught.value.message
    assert caught.value.structured_content == {"storeId": "s-1"}


async def test_progress_and_logs_arrive_in_order_before_the_result(pool: WorkerPool) -> None:
    events: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(("progress", progress, total, message))

    def on_log(level: str, data: Any, logger: str | None) -> None:
        events.append(("log", level, data))

    result = await pool.server("testing").progress(steps=2, on_progress=on_progress, on_log=on_log)
    events.append(("result", result))
    assert events == [
        ("progress", 1, 2, "step 1"),
        ("log", "info", "did step 1"),
        ("progress", 2, 2, "step 2"),
        ("log", "info", "did step 2"),
        ("result", "finished"),
    ]


async def test_print_and_logging_in_a_tool_reach_the_parents_logging(
    pool: WorkerPool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert await pool.server("testing").chatty(lines=2) == 2
    # The log frames travel ahead of the reply on the same channel.
    messages = [record.getMessage() for record in caplog.records]
    assert "printed line 0" in messages
    assert "printed line 1" in messages
    assert "logged from the worker" in messages


async def test_service_context_and_switch_context_reach_the_worker(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    await testing.switch_context("session-1", "thread-9")
    scope = await testing.scope()
    assert (scope.session, scope.thread) == ("session-1", "thread-9")
    assert await testing.get_service_context() == "testing server, session session-1"
    await testing.switch_context(None, None)


async def test_many_concurrent_callers_each_get_their_own_reply(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    failures: list[str] = []

    async def caller(number: int) -> None:
        for call in range(1000):
            text = f"{number}:{call}"
            if await testing.echo(text=text) != text:
                failures.append(text)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for number in range(64):
                tg.start_soon(caller, number)
    assert failures == []


async def test_large_replies_to_concurrent_callers_never_deadlock(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    sizes: list[int] = []

    async def caller() -> None:
        for _ in range(5):
            sizes.append(len(await testing.blob(size=1_000_000)))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(caller)
    assert sizes == [1_000_000] * 80


async def test_a_timed_out_call_names_server_and_tool_and_the_worker_goes_on(
    pool: WorkerPool,
) -> None:
    testing = pool.server("testing")
    with pytest.raises(CallTimeout) as caught:
        await testing.hang(key="timeout-1", call_timeout=0.2)
    assert caught.value.server == "testing"
    assert caught.value.tool == "hang"
    assert "testing.hang" in str(caught.value)
    # The worker cancelled the call, and it still serves.
    assert await testing.was_cancelled(key="timeout-1") is True
    assert await testing.echo(text="after") == "after"


async def test_cancelling_the_caller_cancels_the_tool_in_the_worker(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    started = anyio.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await testing.hang(key="cancel-1", on_progress=on_progress)

        tg.start_soon(call)
        with anyio.fail_after(5):
            await started.wait()
        tg.cancel_scope.cancel()
    assert await testing.was_cancelled(key="cancel-1") is True


async def test_typed_interface_gives_a_proxy_type_checkers_understand(pool: WorkerPool) -> None:
    class Testing(Protocol):
        server_name: ClassVar[str] = "testing"

        async def listing(self, *, count: int = 20) -> Listing: ...

    testing = pool.server(Testing)
    listing = await testing.listing(count=1)
    assert isinstance(listing, Listing)


async def test_unknown_server_lists_the_servers(pool: WorkerPool) -> None:
    with pytest.raises(UnknownServer, match="testing"):
        pool.server("nope")


async def test_frames_over_the_limit_are_refused_and_the_worker_stays_usable() -> None:
    async with WorkerPool(["_servers:server"], max_frame=100_000) as pool:
        testing = pool.server("testing")
        with pytest.raises(FrameTooLarge, match="frame limit"):
            await testing.echo(text="y" * 200_000)
        # A reply over the limit becomes an error response; the worker keeps serving.
        with pytest.raises(ToolError, match="frame limit"):
            await testing.blob(size=200_000)
        assert await testing.echo(text="still here") == "still here"


async def test_killed_worker_fails_pending_calls_and_restarts() -> None:
    policy = RestartPolicy(backoff=0.01)
    async with WorkerPool(["_servers:server"], restart=policy, timeout=20) as pool:
        testing = pool.server("testing")
        first_pid = await testing.pid()
        started = anyio.Event()
        errors: list[BaseException] = []

        async def call(key: str) -> None:
            try:
                await testing.hang(key=key, on_progress=lambda *_: started.set())
            except ServerCrashed as exc:
                errors.append(exc)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "crash-1")
                tg.start_soon(call, "crash-2")
                await started.wait()
                os.kill(first_pid, signal.SIGKILL)
        assert len(errors) == 2
        assert all("testing" in str(exc) and "SIGKILL" in str(exc) for exc in errors)
        assert {exc.exitcode for exc in errors if isinstance(exc, ServerCrashed)} == {-9}
        with anyio.fail_after(20):
            second_pid = await testing.pid()
        assert second_pid != first_pid
        assert await testing.echo(text="back") == "back"


async def test_no_worker_outlives_the_pool() -> None:
    async with WorkerPool(["_servers:server"]) as pool:
        pid = await pool.server("testing").pid()
        assert alive(pid)
    assert not alive(pid)


async def test_no_worker_outlives_a_pool_whose_body_raised() -> None:
    pid = 0
    with pytest.raises(LookupError):
        async with WorkerPool(["_servers:server"]) as pool:
            pid = await pool.server("testing").pid()
            raise LookupError("the app failed")
    assert pid and not alive(pid)


async def test_no_worker_outlives_a_pool_whose_task_was_cancelled() -> None:
    pids: list[int] = []
    with anyio.move_on_after(30) as scope:
        async with WorkerPool(["_servers:server"]) as pool:
            pids.append(await pool.server("testing").pid())
            scope.cancel()
            await anyio.sleep_forever()
    assert pids and not alive(pids[0])


async def test_a_server_that_fails_to_load_is_a_start_error_with_the_reason() -> None:
    with pytest.raises(ServerStartError, match="the database is missing"):
        async with WorkerPool(["_servers:broken_factory"]):
            pass


async def test_a_worker_that_never_becomes_ready_times_out_at_start() -> None:
    with pytest.raises(ServerStartError, match="did not become ready"):
        async with WorkerPool(["_servers:slow_factory"], start_timeout=1):
            pass


async def test_a_server_that_cannot_reach_a_worker_is_refused_when_the_pool_is_made() -> None:
    local = Server("local")  # not importable by name: defined inside a function

    @local.tool
    def hello() -> str:
        return "hi"

    with pytest.raises(TypeError, match=r"inside the function .*define it at module level"):
        WorkerPool([local])


async def test_a_timed_out_request_other_than_a_call_is_cancelled_in_the_worker() -> None:
    async with WorkerPool(["_servers:server"], timeout=0.3) as pool:
        testing = pool.server("testing")
        with pytest.raises(CallTimeout, match="resources/read"):
            await testing.read_resource("test://hang/resource-read")
        # The Cancel reached the worker: the read stopped there, and the worker serves.
        assert await testing.was_cancelled(key="resource-read", call_timeout=10) is True
        assert await testing.echo(text="after") == "after"
