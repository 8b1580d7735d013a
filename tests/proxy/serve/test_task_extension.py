"""`ExtensionTasks`, the 2026-07-28 Tasks extension (``io.modelcontextprotocol/tasks``), on
the SDK's low-level server over real Streamable HTTP, with raw 2026-07-28 requests (the
official client does not speak the extension yet): a declaring client's ``tools/call``
becomes a task ``tasks/get`` follows to its end; a task that asks waits
``input_required`` until ``tasks/update`` answers; ``tasks/cancel`` stops the call; a
client that did not declare the extension is served as before and refused the
``tasks/*`` methods with -32021; tasks belong to their OAuth subject; one caller holds
at most ``max_tasks``; a task past its ttl is swept on a timer; with PostgreSQL, two
replicas share the tasks and a lost runner is a clear failure. The path through
``nativemcp serve`` is at the end; across real replicas, test_task_replicas.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import serving
from _node import everything_server
from _task_client import Rpc, forever, list_tasks, task_result
from mcp import Client
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import TASKS_EXTENSION
from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.serve.tasks._task_extension import (
    MISSING_CLIENT_CAPABILITY,
    ExtensionTask,
    ExtensionTasks,
)
from nativemcp.proxy.serve.tasks._task_rows import TaskRows

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

RESEARCH = "simulate-research-query"  # one server served: its own names
Work = Callable[[ExtensionTask], Awaitable[types.CallToolResult]]


def _said(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _server(tasks: ExtensionTasks, works: Mapping[str, Work]) -> Server[Any]:
    """A server whose tools in ``works`` run as tasks, and ``plain`` as a plain call."""

    async def start(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        work = works.get(params.name)
        return None if work is None else await tasks.create(ctx, work)

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return _said(f"{params.name}, at once")

    server: Server[Any] = Server("tasks", on_call_tool=call)
    tasks.install(server, start)
    return server


def _as_users(app: Any) -> Any:
    """The app, with the ``x-user`` header's user authenticated as the resource server
    leaves an OAuth subject in the ASGI scope."""

    async def users(scope: dict[str, Any], receive: Any, send: Any) -> None:
        user = dict(scope.get("headers", [])).get(b"x-user")
        if scope["type"] == "http" and user:
            token = AccessToken(token="t", client_id="app", scopes=[], subject=user.decode())
            scope = {**scope, "user": AuthenticatedUser(token)}
        await app(scope, receive, send)

    return users


async def _greets(task: ExtensionTask) -> types.CallToolResult:
    """Ask the client for a name, and greet it."""
    answer = await task.ask("elicitation/create", {"message": "Name?", "requestedSchema": {}})
    return _said(f"hello {answer['content']['name']}")


@asynccontextmanager
async def _served(tasks: ExtensionTasks, works: Mapping[str, Work]) -> AsyncIterator[Rpc]:
    app = _as_users(_server(tasks, works).streamable_http_app())
    async with tasks, serving(app) as base, httpx2.AsyncClient(timeout=10) as http:
        yield Rpc(http, f"{base}/mcp")


async def test_a_declaring_clients_call_is_a_task_that_tasks_get_follows_to_its_end() -> None:
    async def reports(task: ExtensionTask) -> types.CallToolResult:
        task.report("halfway")
        return _said("done")

    async def tool_error(task: ExtensionTask) -> types.CallToolResult:
        return _said("no such file", error=True)

    async def refused(task: ExtensionTask) -> types.CallToolResult:
        raise MCPError(-32602, "bad path", {"path": "/x"})

    tasks = ExtensionTasks(input_timeout=5)
    works = {"reports": reports, "tool_error": tool_error, "refused": refused}
    with anyio.fail_after(20):
        async with _served(tasks, works) as rpc:
            created = await rpc.result("tools/call", {"name": "reports", "arguments": {}})
            assert created["resultType"] == "task" and created["status"] == "working"
            assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 1000
            done = await rpc.until(created["taskId"], "completed")
            # A tool error is a completed task (the extension's rule), its result says so.
            failed = await rpc.result("tools/call", {"name": "tool_error", "arguments": {}})
            tool_error_task = await rpc.until(failed["taskId"], "completed")
            error = await rpc.result("tools/call", {"name": "refused", "arguments": {}})
            refused_task = await rpc.until(error["taskId"], "failed")
            # A tool the server runs at once stays a plain call, declared or not.
            plain = await rpc.result("tools/call", {"name": "plain", "arguments": {}})
    assert done["resultType"] == "complete" and done["statusMessage"] == "halfway"
    assert done["result"]["content"] == [{"type": "text", "text": "done"}]
    assert "error" not in done and "inputRequests" not in done
    assert tool_error_task["result"]["isError"] is True
    assert refused_task["error"] == {"code": -32602, "message": "bad path", "data": {"path": "/x"}}
    assert refused_task["statusMessage"] == "bad path" and "result" not in refused_task
    assert plain["content"][0]["text"] == "plain, at once" and "taskId" not in plain


async def test_a_task_that_asks_waits_input_required_until_tasks_update_answers() -> None:
    async def greets(task: ExtensionTask) -> types.CallToolResult:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        first = await task.ask(
            "elicitation/create", {"message": "Name?", "requestedSchema": schema}
        )
        second = await task.ask("elicitation/create", {"message": "Sure?", "requestedSchema": {}})
        await release.wait()
        return _said(f"hello {first['content']['name']} ({second['action']})")

    release = anyio.Event()

    tasks = ExtensionTasks(input_timeout=10)
    with anyio.fail_after(20):
        async with _served(tasks, {"greets": greets}) as rpc:
            task_id = (await rpc.result("tools/call", {"name": "greets", "arguments": {}}))[
                "taskId"
            ]
            waiting = await rpc.until(task_id, "input_required")
            ((key, request),) = waiting["inputRequests"].items()
            assert request["method"] == "elicitation/create"
            assert request["params"]["message"] == "Name?"
            # An answer under a key not asked is ignored; the task still waits.
            accept = {"action": "accept", "content": {"name": "Ada"}}
            ack = await rpc.result(
                "tasks/update", {"taskId": task_id, "inputResponses": {"x": accept}}
            )
            assert ack == {"resultType": "complete"}
            assert (await rpc.until(task_id, "input_required"))["inputRequests"] == {key: request}
            # An answer that is not an elicitation result is refused, and not delivered.
            bad = await rpc("tasks/update", {"taskId": task_id, "inputResponses": {key: {"x": 1}}})
            assert bad["error"]["code"] == -32602 and key in bad["error"]["message"]
            await rpc.result("tasks/update", {"taskId": task_id, "inputResponses": {key: accept}})
            # The next request has a key of its own, never the answered one.
            again = await rpc.until(task_id, "input_required")
            (next_key,) = again["inputRequests"]
            assert (
                next_key != key and again["inputRequests"][next_key]["params"]["message"] == "Sure?"
            )
            answer = {next_key: {"action": "decline"}}
            await rpc.result("tasks/update", {"taskId": task_id, "inputResponses": answer})
            # Answered, the task works again and lists no request.
            working = await rpc.until(task_id, "working")
            release.set()
            done = await rpc.until(task_id, "completed")
    assert "inputRequests" not in working
    assert done["result"]["content"][0]["text"] == "hello Ada (decline)"


async def test_a_request_nobody_answers_fails_the_tools_request_after_the_input_timeout() -> None:
    async def asks(task: ExtensionTask) -> types.CallToolResult:
        try:
            await task.ask("elicitation/create", {"message": "Name?", "requestedSchema": {}})
        except Exception as exc:
            return _said(str(exc), error=True)
        return _said("answered")

    tasks = ExtensionTasks(input_timeout=0.2)
    with anyio.fail_after(20):
        async with _served(tasks, {"asks": asks}) as rpc:
            task_id = (await rpc.result("tools/call", {"name": "asks", "arguments": {}}))["taskId"]
            done = await rpc.until(task_id, "completed")
    text = done["result"]["content"][0]["text"]
    assert "no answer in a tasks/update within 0.2 s" in text and "elicitation-create-1" in text


async def test_tasks_cancel_stops_the_tool_call_and_the_task_stays_cancelled() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ExtensionTasks(input_timeout=5)
    with anyio.fail_after(20):
        async with _served(tasks, {"forever": forever(cancelled)}) as rpc:
            task_id = (await rpc.result("tools/call", {"name": "forever", "arguments": {}}))[
                "taskId"
            ]
            ack = await rpc.result("tasks/cancel", {"taskId": task_id})
            await cancelled[0].wait()
            task = await rpc.result("tasks/get", {"taskId": task_id})
            # Cancelling a task that ended is acknowledged; it stays as it ended.
            assert await rpc.result("tasks/cancel", {"taskId": task_id}) == ack
    assert ack == {"resultType": "complete"}
    assert task["status"] == "cancelled" and task["statusMessage"] == "cancelled by the client"


async def test_a_client_that_did_not_declare_the_extension_gets_results_and_minus_32021() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ExtensionTasks(input_timeout=5)
    with anyio.fail_after(20):
        async with _served(tasks, {"forever": forever(cancelled)}) as rpc:
            plain = await rpc.result("tools/call", {"name": "forever"}, declare=False)
            task_id = (await rpc.result("tools/call", {"name": "forever", "arguments": {}}))[
                "taskId"
            ]
            refusals = [
                await rpc(method, {"taskId": task_id, "inputResponses": {}}, declare=False)
                for method in ("tasks/get", "tasks/update", "tasks/cancel")
            ]
    assert plain["content"][0]["text"] == "forever, at once" and len(cancelled) == 1
    for refused in refusals:
        assert refused["error"]["code"] == MISSING_CLIENT_CAPABILITY
        assert refused["error"]["data"] == {
            "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
        }


async def test_a_task_is_its_oauth_subjects_alone() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ExtensionTasks(input_timeout=5)
    with anyio.fail_after(20):
        async with _served(tasks, {"forever": forever(cancelled)}) as rpc:
            created = await rpc.result("tools/call", {"name": "forever"}, user="alice")
            task = {"taskId": created["taskId"]}
            seen = [
                await rpc("tasks/get", task, user=user) for user in ("bob", "", "alice-x", "alic")
            ]
            cancel = await rpc("tasks/cancel", task, user="bob")
            update = await rpc("tasks/update", {**task, "inputResponses": {}}, user="bob")
            mine = await rpc.result("tasks/get", task, user="alice")
            # Mcp-Name names the task for routers: one naming another task is refused.
            steered = await rpc("tasks/cancel", task, user="alice", name=created["taskId"] + "x")
            assert not cancelled[0].is_set()  # bob's cancel did not reach it
    for refused in [*seen, cancel, update]:
        assert refused["error"]["code"] == -32602, refused
        assert "unknown, or expired" in refused["error"]["message"]
    assert mine["status"] == "working"
    assert steered["error"]["code"] == types.HEADER_MISMATCH
    assert "Mcp-Name" in steered["error"]["message"] or "mcp-name" in steered["error"]["message"]


async def test_one_caller_holds_at_most_max_tasks_and_a_task_past_its_ttl_is_swept() -> None:
    cancelled: list[anyio.Event] = []
    tasks = ExtensionTasks(input_timeout=5, max_tasks=1, max_ttl=60)
    with anyio.fail_after(20):
        async with _served(tasks, {"forever": forever(cancelled)}) as rpc:
            await rpc.result("tools/call", {"name": "forever"}, user="alice")
            refused = await rpc("tools/call", {"name": "forever"}, user="alice")
            # Another caller's share is their own.
            await rpc.result("tools/call", {"name": "forever"}, user="bob")
    assert refused["error"]["code"] == -32600
    assert refused["error"]["data"] == {"reason": "too_many_tasks", "maxTasks": 1}
    assert "--max-tasks" in refused["error"]["message"]

    short = ExtensionTasks(input_timeout=5, max_ttl=0.05)
    swept: list[anyio.Event] = []
    with anyio.fail_after(20):
        async with _served(short, {"forever": forever(swept)}) as rpc:
            created = await rpc.result("tools/call", {"name": "forever"})
            assert created["ttlMs"] == 50
            # No request follows: only the sweeper can end it.
            await swept[0].wait()
            assert len(short) == 0
            gone = await rpc("tasks/get", {"taskId": created["taskId"]})
    assert gone["error"]["code"] == -32602


async def test_outside_serving_the_extension_is_not_offered() -> None:
    tasks = ExtensionTasks(input_timeout=5, enabled=False)
    server = _server(tasks, {"forever": forever([])})
    assert TASKS_EXTENSION not in server.extensions
    async with tasks:
        assert not tasks.running
    offered = ExtensionTasks(input_timeout=5)
    assert TASKS_EXTENSION in _server(offered, {}).extensions


@pytest.mark.real_process
@pytest.mark.parametrize("stateless", [False, True])
async def test_on_2026_there_is_no_tasks_result_or_tasks_list_and_2025_keeps_them(
    stateless: bool,
) -> None:
    # The conformance suite's tasks-dispatch-and-envelope: -32601, declared or not.
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    app = http_app(pool, stateless=stateless)
    async with serving(app) as base, httpx2.AsyncClient(timeout=30) as http:
        rpc = Rpc(http, f"{base}/mcp")
        with anyio.fail_after(60):
            answers = [
                await rpc(method, params, declare=declare)
                for method, params in (("tasks/result", {"taskId": "t"}), ("tasks/list", {}))
                for declare in (True, False)
            ]
            if not stateless:  # 2025-11-25's tasks live in its sessions
                async with Client(f"{base}/mcp", mode="legacy") as client:
                    listed = await list_tasks(client)
                    with pytest.raises(MCPError) as unknown:
                        await task_result(client, "t")
    assert [answer["error"]["code"] for answer in answers] == [-32601] * 4, answers
    assert "tasks/get" in answers[0]["error"]["message"]
    if not stateless:
        assert listed == []
        assert unknown.value.error.code == -32602  # a method there: the task is unknown


async def test_through_serve_a_sources_task_tool_asks_and_answers_over_the_extension() -> None:
    # npm's server-everything behind serve: its simulate-research-query declares task
    # support, and an ambiguous topic makes it ask the client (an elicitation).
    pool = WorkerPool(
        builtins=[],
        mcp_servers={"everything": everything_server()},
        timeout=60,
        relay_client_requests=True,  # as serve runs it: the source may ask our client
    )
    async with serving(http_app(pool)) as base, httpx2.AsyncClient(timeout=30) as http:
        rpc = Rpc(http, f"{base}/mcp")
        with anyio.fail_after(90):
            call = {"name": RESEARCH, "arguments": {"topic": "tea", "ambiguous": True}}
            created = await rpc.result("tools/call", call)
            assert created["resultType"] == "task", created
            task_id = created["taskId"]
            waiting = await rpc.until(task_id, "input_required")
            ((key, request),) = waiting["inputRequests"].items()
            answer = {"action": "accept", "content": {"interpretation": "historical"}}
            await rpc.result("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
            done = await rpc.until(task_id, "completed")
            # Without the extension, the same tool answers as a plain call.
            plain = await rpc.result(
                "tools/call", {"name": RESEARCH, "arguments": {"topic": "tea"}}, declare=False
            )
            # A slow one cancelled through serve ends cancelled.
            slow = await rpc.result("tools/call", {"name": RESEARCH, "arguments": {"topic": "x"}})
            await rpc.result("tasks/cancel", {"taskId": slow["taskId"]})
            stopped = await rpc.result("tasks/get", {"taskId": slow["taskId"]})
    assert request["method"] == "elicitation/create"
    assert "Research Report: tea (historical)" in done["result"]["content"][0]["text"]
    assert "Research Report: tea" in plain["content"][0]["text"] and "taskId" not in plain
    assert stopped["status"] == "cancelled"


async def test_in_postgresql_a_task_started_on_one_replica_is_answered_on_another(
    postgres_url: str,
) -> None:
    cancelled: list[anyio.Event] = []
    works = {"greets": _greets, "forever": forever(cancelled)}
    # Two replicas, stateless (no in-memory tasks), on one database; the second one
    # calls a task lost when its runner has not written for half a second.
    one = ExtensionTasks(input_timeout=10, enabled=False, rows=TaskRows(postgres_url))
    two = ExtensionTasks(
        input_timeout=10, enabled=False, rows=TaskRows(postgres_url, stale_after=0.5)
    )
    with anyio.fail_after(30):
        async with _served(two, {}) as other:
            async with _served(one, works) as first:
                created = await first.result("tools/call", {"name": "greets"}, user="ada")
                task = {"taskId": created["taskId"]}
                waiting = await other.until(created["taskId"], "input_required", user="ada")
                (key,) = waiting["inputRequests"]
                bad = await other(
                    "tasks/update", {**task, "inputResponses": {key: {"x": 1}}}, user="ada"
                )
                answer = {key: {"action": "accept", "content": {"name": "Ada"}}}
                await other.result("tasks/update", {**task, "inputResponses": answer}, user="ada")
                done = await other.until(created["taskId"], "completed", user="ada")
                theirs = await other("tasks/get", task, user="bob")

                stopped = await first.result("tools/call", {"name": "forever"}, user="ada")
                await other.result("tasks/cancel", {"taskId": stopped["taskId"]}, user="ada")
                await cancelled[0].wait()  # the call on the first replica stopped
                ended = await other.until(stopped["taskId"], "cancelled", user="ada")

                # One caller's limit counts their tasks on every replica.
                capped = ExtensionTasks(input_timeout=10, max_tasks=2, rows=TaskRows(postgres_url))
                async with _served(capped, works) as third:
                    await third.result("tools/call", {"name": "forever"}, user="cy")
                    await first.result("tools/call", {"name": "forever"}, user="cy")
                    refused = await third("tools/call", {"name": "forever"}, user="cy")
                    await third.result("tools/call", {"name": "forever"}, user="dee")

                orphan = await first.result("tools/call", {"name": "forever"}, user="ada")
                await other.until(orphan["taskId"], "working", user="ada")
            # The first replica is gone: its running task is a clear failure elsewhere.
            lost = await other.until(orphan["taskId"], "failed", user="ada")
    assert bad["error"]["code"] == -32602
    assert done["result"]["content"][0]["text"] == "hello Ada"
    assert theirs["error"]["code"] == -32602
    assert ended["status"] == "cancelled"
    assert refused["error"]["data"] == {"reason": "too_many_tasks", "maxTasks": 2}
    assert "the replica running this task stopped" in lost["error"]["message"]
    assert lost["statusMessage"] == lost["error"]["message"] and "inputRequests" not in lost


@asynccontextmanager
async def _rows_holding(url: str, **ttls: float) -> AsyncIterator[TaskRows]:
    """`TaskRows` on ``url``, entered, holding a working task of ada's per ``ttls`` entry
    (its id, and its ttl in seconds)."""
    async with TaskRows(url) as rows:
        for task_id, ttl in ttls.items():
            await rows.insert(task_id, "ada", {"taskId": task_id, "status": "working"}, ttl)
        yield rows


async def test_in_postgresql_rows_past_their_ttl_are_deleted_when_a_replica_starts(
    postgres_url: str,
) -> None:
    import psycopg

    with anyio.fail_after(20):
        async with _rows_holding(postgres_url, old=0, new=60):
            pass
        # A replica starting sweeps at once (and every minute after).
        replica = ExtensionTasks(input_timeout=5, enabled=False, rows=TaskRows(postgres_url))
        async with replica, await psycopg.AsyncConnection.connect(postgres_url) as conn:
            cursor = await conn.execute("SELECT task_id FROM nativemcp_tasks")
            left = [row[0] for row in await cursor.fetchall()]
    assert left == ["new"]


async def test_in_postgresql_a_lost_connection_is_a_clear_error_and_then_opened_again(
    postgres_url: str,
) -> None:
    import psycopg

    with anyio.fail_after(20):
        async with _rows_holding(postgres_url, t=60) as rows:
            admin = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
            async with admin:
                # The rows' session ends (its last statement named their table).
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND query LIKE '%%nativemcp_tasks%%'"
                )
            with pytest.raises(MCPError) as lost:
                await rows.load("t", "ada")
            again = await rows.load("t", "ada")
    assert lost.value.error.data == {"reason": "task_database"}
    assert "cannot be used now" in lost.value.error.message
    assert again is not None and again["status"] == "working"


class _BeatsSeen(TaskRows):
    """`TaskRows` noting each heartbeat statement: the tasks it covered, and whose state
    it wrote."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.beats: list[tuple[set[str], set[str]]] = []
        self._beaten = anyio.Event()

    async def beat(self, wires: Mapping[str, dict[str, Any] | None]) -> Any:
        self.beats.append((set(wires), {i for i, wire in wires.items() if wire is not None}))
        self._beaten.set()
        return await super().beat(wires)

    async def count(self, beats: int) -> None:
        """Wait until there were ``beats`` beats."""
        while len(self.beats) < beats:
            self._beaten = anyio.Event()
            await self._beaten.wait()


async def test_in_postgresql_one_statement_beats_for_every_running_task_writing_only_changes(
    postgres_url: str,
) -> None:
    cancelled: list[anyio.Event] = []
    rows = _BeatsSeen(postgres_url)
    tasks = ExtensionTasks(input_timeout=10, enabled=False, rows=rows)
    with anyio.fail_after(30):
        async with _served(tasks, {"greets": _greets, "forever": forever(cancelled)}) as rpc:
            quiet = [(await rpc.result("tools/call", {"name": "forever"}))["taskId"] for _ in "ab"]
            asking = (await rpc.result("tools/call", {"name": "greets"}))["taskId"]
            waiting = await rpc.until(asking, "input_required")
            (key,) = waiting["inputRequests"]
            answer = {key: {"action": "accept", "content": {"name": "Ada"}}}
            await rpc.result("tasks/update", {"taskId": asking, "inputResponses": answer})
            done = await rpc.until(asking, "completed")
            await rows.count(len(rows.beats) + 2)  # two more beats, the quiet tasks alone
    assert done["result"]["content"][0]["text"] == "hello Ada"
    # Each beat covered every task running then: one statement, not one per task.
    together = [covered for covered, _ in rows.beats if covered == {*quiet, asking}]
    assert together, rows.beats
    assert all(covered == set(quiet) for covered, _ in rows.beats[-2:])
    # The quiet tasks' state never changed after it was stored: never written again.
    assert not any(written & set(quiet) for _, written in rows.beats)
    assert any(asking in written for _, written in rows.beats)  # input_required, then on


async def test_in_postgresql_a_task_that_ends_while_its_connection_is_lost_is_still_completed(
    postgres_url: str,
) -> None:
    import psycopg

    release = anyio.Event()

    async def waits(task: ExtensionTask) -> types.CallToolResult:
        await release.wait()
        return _said("done")

    runner = ExtensionTasks(input_timeout=10, enabled=False, rows=TaskRows(postgres_url))
    reader = ExtensionTasks(input_timeout=10, enabled=False, rows=TaskRows(postgres_url))
    with anyio.fail_after(30):
        async with _served(reader, {}) as other, _served(runner, {"waits": waits}) as first:
            created = await first.result("tools/call", {"name": "waits"})
            await other.until(created["taskId"], "working")
            async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as a:
                # Every replica's session ends: the runner's next write fails.
                await a.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            release.set()
            await other("tasks/get", {"taskId": created["taskId"]})  # its own session ended
            done = await other.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "done"}]
