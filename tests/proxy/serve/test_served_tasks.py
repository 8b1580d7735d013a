"""`ServedTasks` on the SDK's low-level server, with the SDK's client in memory: what a
task's end looks like to ``tasks/get`` and ``tasks/result`` (a tool error, a JSON-RPC
error, a status message), expiry after its ``ttl`` (on a timer), the limits on what one
session holds, a session's tasks ending with it, and the requests it refuses, from
another session too (over real Streamable HTTP). The
whole path through `nativemcp serve` is tests/proxy/serve/test_serve_tasks.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import HEADERS, INIT, serving
from _task_client import (
    cancel_task,
    create_task,
    forever,
    get_task,
    list_tasks,
    poll_task,
    task_result,
)
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from nativemcp.proxy.cli import main
from nativemcp.proxy.serve.tasks._tasks import ServedTask, ServedTasks

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

Work = Callable[[ServedTask], Awaitable[types.CallToolResult]]


async def _never_sent(ctx: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"{method} was sent")


def _server(tasks: ServedTasks, works: dict[str, Work]) -> Server[Any]:
    async def start(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        assert params.task is not None
        return await tasks.create(ctx, params.task, works[params.name])

    server: Server[Any] = Server("tasks")
    tasks.install(server, start)
    return server


def _said(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def test_how_a_task_ends_is_what_tasks_get_and_tasks_result_say() -> None:
    async def reports(task: ServedTask) -> types.CallToolResult:
        task.report("halfway")
        return _said("done")

    async def tool_error(task: ServedTask) -> types.CallToolResult:
        return _said("no such file", error=True)

    async def refused(task: ServedTask) -> types.CallToolResult:
        raise MCPError(-32602, "bad path", {"path": "/x"})

    tasks = ServedTasks(_never_sent, input_timeout=5)
    server = _server(tasks, {"reports": reports, "tool_error": tool_error, "refused": refused})
    with anyio.fail_after(10):
        async with tasks, Client(server, mode="legacy") as client:
            ok, failed, error = [
                (await create_task(client, name, {}, ttl=None))["task"]["taskId"]
                for name in ("reports", "tool_error", "refused")
            ]
            done = await task_result(client, ok)
            status = await get_task(client, ok)
            # A tool error ends the task failed; tasks/result still gives the result.
            assert (await task_result(client, failed)).is_error
            assert (await get_task(client, failed)).status == "failed"
            # A JSON-RPC error is what tasks/result answers, as the call would have.
            with pytest.raises(MCPError) as raised:
                await task_result(client, error)
            assert (await get_task(client, error)).status == "failed"
    assert done.content[0].text == "done"  # type: ignore[union-attr]
    assert status.status == "completed" and status.status_message == "halfway"
    assert status.ttl == 3_600_000 and status.poll_interval == 1000  # the defaults
    assert raised.value.code == -32602 and raised.value.message == "bad path"
    assert raised.value.error.data == {"path": "/x"}


async def test_a_task_past_its_ttl_is_gone_and_its_work_cancelled() -> None:
    cancelled = anyio.Event()

    async def forever(task: ServedTask) -> types.CallToolResult:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    tasks = ServedTasks(_never_sent, input_timeout=5)
    with anyio.fail_after(10):
        async with tasks, Client(_server(tasks, {"forever": forever}), mode="legacy") as client:
            task_id = (await create_task(client, "forever", {}, ttl=50))["task"]["taskId"]
            assert (await get_task(client, task_id)).ttl == 50
            await anyio.sleep(0.1)  # the ttl passes: wall-clock time is the point here
            with pytest.raises(MCPError) as gone:
                await get_task(client, task_id)
            await cancelled.wait()
    assert gone.value.code == -32602 and "expired" in gone.value.message


async def test_a_task_that_asks_with_nobody_on_tasks_result_gives_up_after_the_timeout() -> None:
    async def asks(task: ServedTask) -> types.CallToolResult:
        await task.ask("elicitation/create", {"message": "name?", "requestedSchema": {}})
        raise AssertionError("unreachable")

    async def wrapped(task: ServedTask) -> types.CallToolResult:
        try:
            return await asks(task)
        except Exception as exc:  # what the bridge does with a ClientRequestError
            return _said(str(exc), error=True)

    tasks = ServedTasks(_never_sent, input_timeout=1)
    with anyio.fail_after(10):
        async with tasks, Client(_server(tasks, {"asks": wrapped}), mode="legacy") as client:
            task_id = (await create_task(client, "asks", {}))["task"]["taskId"]
            seen = await poll_task(client, task_id, until={"failed", "completed"})
            gave_up = await task_result(client, task_id)
    assert "input_required" in seen
    text = gave_up.content[0].text  # type: ignore[union-attr]
    assert "found no tasks/result to reach the client within 1 s" in text


async def test_tasks_list_has_one_page_and_outside_serving_no_task_is_offered() -> None:
    async def quick(task: ServedTask) -> types.CallToolResult:
        return _said("hi")

    tasks = ServedTasks(_never_sent, input_timeout=5)
    with anyio.fail_after(10):
        async with tasks, Client(_server(tasks, {"quick": quick}), mode="legacy") as client:
            task_id = (await create_task(client, "quick", {}))["task"]["taskId"]
            await task_result(client, task_id)
            listed = await list_tasks(client)
            with pytest.raises(MCPError) as cursor:
                await list_tasks(client, cursor="2")
        # Not running (or stateless): no capability, and a task request is an ordinary
        # tools/call, which this server has no handler for.
        idle = ServedTasks(_never_sent, input_timeout=5)
        async with Client(_server(idle, {"quick": quick}), mode="legacy") as client:
            capabilities = client.session.server_capabilities
            with pytest.raises(MCPError) as plain:
                await create_task(client, "quick", {})
    assert [task.task_id for task in listed] == [task_id]
    assert cursor.value.code == -32602 and "'2'" in cursor.value.message
    assert capabilities is not None and capabilities.tasks is None
    assert plain.value.code == -32601  # tools/call itself: no handler


async def test_a_session_holds_at_most_max_tasks_and_no_ttl_past_the_longest() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ServedTasks(_never_sent, input_timeout=5, max_tasks=2, max_ttl=600)
    server = _server(tasks, {"forever": forever(cancelled)})
    with anyio.fail_after(10):
        async with tasks, Client(server, mode="legacy") as client:
            day = (await create_task(client, "forever", {}, ttl=86_400_000))["task"]
            unasked = (await create_task(client, "forever", {}, ttl=None))["task"]
            with pytest.raises(MCPError) as refused:
                await create_task(client, "forever", {})
            # Cancelled, a task still counts until its ttl passes (its result is kept).
            await cancel_task(client, day["taskId"])
            with pytest.raises(MCPError):
                await create_task(client, "forever", {})
    assert day["ttl"] == 600_000 and unasked["ttl"] == 600_000
    assert refused.value.code == -32600
    assert "holds 2 tasks, the most it may" in refused.value.message
    assert "max_tasks 2" in refused.value.message and "--max-tasks" in refused.value.message
    assert refused.value.error.data == {"reason": "too_many_tasks", "maxTasks": 2}


def test_task_limits_that_would_serve_no_task_are_refused() -> None:
    for tasks, ttl in ((0, 60.0), (1, 0.0), (1, float("inf")), (1, -1.0)):
        with pytest.raises(ValueError, match="max_task"):
            ServedTasks(_never_sent, input_timeout=5, max_tasks=tasks, max_ttl=ttl)


async def test_a_task_past_its_ttl_ends_on_a_timer_with_nobody_asking() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ServedTasks(_never_sent, input_timeout=5)
    server = _server(tasks, {"forever": forever(cancelled)})
    with anyio.fail_after(10):
        async with tasks, Client(server, mode="legacy") as client:
            await create_task(client, "forever", {}, ttl=60_000)
            await create_task(client, "forever", {}, ttl=50)
            # No request follows: only the sweeper can end it.
            await cancelled[1].wait()
            assert len(tasks) == 1 and not cancelled[0].is_set()


async def test_a_closed_sessions_tasks_end_with_it() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ServedTasks(_never_sent, input_timeout=5)
    server = _server(tasks, {"forever": forever(cancelled)})
    with anyio.fail_after(10):
        async with tasks:
            async with Client(server, mode="legacy") as client:
                await create_task(client, "forever", {})
                await create_task(client, "forever", {})
                assert len(tasks) == 2
            for ended in cancelled:
                await ended.wait()
            assert len(tasks) == 0


async def test_a_task_is_its_sessions_alone_over_http() -> None:
    """Two Streamable HTTP sessions of one server: B cannot read, wait on, list or
    cancel A's task; A's tasks end when A's session is deleted."""
    cancelled: list[anyio.Event] = []
    tasks = ServedTasks(_never_sent, input_timeout=5)
    app = _server(tasks, {"forever": forever(cancelled)}).streamable_http_app()
    with anyio.fail_after(30):
        async with tasks, serving(app) as base:
            async with (
                Client(f"{base}/mcp", mode="legacy") as a,
                Client(f"{base}/mcp", mode="legacy") as b,
            ):
                task_id = (await create_task(a, "forever", {}))["task"]["taskId"]
                for request in (get_task, task_result, cancel_task):
                    with pytest.raises(MCPError) as refused:
                        await request(b, task_id)
                    assert refused.value.code == -32602, request
                    assert f"no task {task_id!r}" in refused.value.message
                assert await list_tasks(b) == []
                assert (await get_task(a, task_id)).status == "working"
                assert [task.task_id for task in await list_tasks(a)] == [task_id]
            # Both clients closed their sessions (DELETE): the task went with A's.
            await cancelled[0].wait()
            assert len(tasks) == 0


def test_serve_refuses_limits_that_would_serve_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    for flags, said in [
        (["--max-tasks", "0"], "--max-tasks must be at least 1, not 0"),
        (["--max-task-ttl", "0"], "--max-task-ttl must be a positive number of seconds"),
        (["--max-task-ttl", "nan"], "--max-task-ttl must be a positive number of seconds"),
        (["--input-rounds", "0"], "--input-rounds must be at least 1, not 0"),
    ]:
        assert main(["serve", "planning", *flags]) == 2, flags
        assert said in capsys.readouterr().err, flags


async def test_an_abandoned_sessions_tasks_end_when_it_idles_out() -> None:
    """The client neither deletes its session nor asks again: the session's idle
    timeout ends it, and its tasks with it (they lived on until their ttl before)."""
    cancelled: list[anyio.Event] = []
    tasks = ServedTasks(_never_sent, input_timeout=5)
    server = _server(tasks, {"forever": forever(cancelled)})
    app = server.streamable_http_app(session_idle_timeout=0.5)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "forever", "arguments": {}, "task": {"ttl": 600_000}},
    }
    with anyio.fail_after(30):
        async with tasks, serving(app) as base, httpx2.AsyncClient() as http:
            for _ in range(3):
                opened = await http.post(f"{base}/mcp", json=INIT, headers=HEADERS)
                session = {
                    **HEADERS,
                    "mcp-session-id": opened.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25",
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await http.post(f"{base}/mcp", json=initialized, headers=session)
                created = await http.post(f"{base}/mcp", json=call, headers=session)
                assert created.status_code == 200 and "taskId" in created.text
            while len(cancelled) < 3:  # each task's tool has started  # noqa: ASYNC110
                await anyio.sleep(0.01)
            for ended in cancelled:
                await ended.wait()
            assert len(tasks) == 0
