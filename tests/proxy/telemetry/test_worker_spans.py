"""Spans per the MCP conventions through real worker processes: a client span in this
process, the worker's server span as its child (recorded in the worker, re-emitted
through this process's provider), a tool's own spans under that; errors, time limits,
cancellation and crashes set the status and ``error.type``."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from _telemetry import Recorded
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from nativemcp.protocol import ToolError
from nativemcp.proxy import CallTimeout, RestartPolicy, ServerCrashed, SyncWorkerPool, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

SERVER = "_traced_server:server"


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _pair(recorded: Recorded, name: str) -> tuple[ReadableSpan, ReadableSpan]:
    """The client span and the server span named ``name``, checked as one call's."""
    client = recorded.named(name, SpanKind.CLIENT)
    server = recorded.named(name, SpanKind.SERVER)
    assert client.context is not None and server.context is not None
    assert server.parent is not None
    assert server.context.trace_id == client.context.trace_id
    assert server.parent.span_id == client.context.span_id
    assert server.context.span_id != client.context.span_id
    return client, server


@pytest.mark.parametrize("tool", ["add", "add_threaded"])
async def test_a_typed_call_gives_a_client_span_and_the_workers_server_span_as_its_child(
    recorded: Recorded, tool: str
) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        assert await pool.server("traced").tool(tool)(a=2, b=3) == 5
    client, server = _pair(recorded, f"tools/call {tool}")
    for span in (client, server):
        attributes = _attributes(span)
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == tool
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["nativemcp.server.name"] == "traced"
        assert "error.type" not in attributes
        assert span.status.status_code == StatusCode.UNSET
    # One request id, the one the worker's wire used.
    assert _attributes(client)["jsonrpc.request.id"] == _attributes(server)["jsonrpc.request.id"]
    assert _attributes(client)["jsonrpc.request.id"].isdigit()
    # The worker's span reaches the app's exporter with the app's resource.
    assert server.resource == client.resource
    assert server.instrumentation_scope is not None
    assert server.instrumentation_scope.name == "nativemcp"


async def test_a_tools_own_span_nests_under_the_server_span_inside_the_app_span(
    recorded: Recorded,
) -> None:
    from opentelemetry import trace

    async with WorkerPool([SERVER], timeout=20) as pool:
        with trace.get_tracer("tests.app").start_as_current_span("agent step") as app:
            assert await pool.server("traced").nested(label="x") == "x"
    client, server = _pair(recorded, "tools/call nested")
    inner = recorded.named("inner x", SpanKind.INTERNAL)
    assert client.parent is not None and client.parent.span_id == app.get_span_context().span_id
    assert inner.parent is not None and server.context is not None
    assert inner.parent.span_id == server.context.span_id
    assert inner.instrumentation_scope is not None
    assert inner.instrumentation_scope.name == "tests.tool"


async def test_a_tool_error_sets_error_type_tool_error_on_both_spans(recorded: Recorded) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        traced = pool.server("traced")
        with pytest.raises(ToolError):
            await traced.refuse(store_id="s1")
        response = await traced.call_tool("refuse", {"store_id": "s2"})
    assert response.is_error
    spans = [s for s in recorded.spans if s.name == "tools/call refuse"]
    assert sorted(s.kind.name for s in spans) == ["CLIENT", "CLIENT", "SERVER", "SERVER"]
    for span in spans:
        assert _attributes(span)["error.type"] == "tool_error"
        assert span.status.status_code == StatusCode.ERROR


async def test_a_time_limit_ends_the_client_span_as_timeout_and_the_server_span_cancelled(
    recorded: Recorded,
) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        with pytest.raises(CallTimeout):
            await pool.server("traced").hang(call_timeout=0.2)
        # The worker's span comes once the tool has stopped (after the call returned).
        await recorded.wait_for(
            lambda spans: any(s.kind == SpanKind.SERVER for s in spans if "hang" in s.name)
        )
    client, server = _pair(recorded, "tools/call hang")
    assert _attributes(client)["error.type"] == "timeout"
    assert client.status.status_code == StatusCode.ERROR
    assert "hang" in (client.status.description or "")
    assert _attributes(server)["error.type"] == "cancelled"
    assert server.status.status_code == StatusCode.ERROR


async def test_a_cancelled_call_ends_its_client_span_as_cancelled(recorded: Recorded) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        hang = pool.server("traced").hang
        with anyio.move_on_after(0.2):
            await hang()
    client = recorded.named("tools/call hang", SpanKind.CLIENT)
    assert _attributes(client)["error.type"] == "cancelled"
    assert client.status.status_code == StatusCode.ERROR


async def test_a_worker_crash_ends_the_client_span_with_the_crash(recorded: Recorded) -> None:
    policy = RestartPolicy(max_restarts=0)
    async with WorkerPool([SERVER], timeout=20, restart=policy) as pool:
        with pytest.raises(ServerCrashed):
            await pool.server("traced").crash()
    client = recorded.named("tools/call crash", SpanKind.CLIENT)
    assert _attributes(client)["error.type"] == "ServerCrashed"
    assert client.status.status_code == StatusCode.ERROR
    assert not [s for s in recorded.spans if s.kind == SpanKind.SERVER]


async def test_the_pools_call_tool_and_replicas_are_traced_alike(recorded: Recorded) -> None:
    async with WorkerPool([SERVER], timeout=20, replicas={SERVER: 2}) as pool:
        response = await pool.call_tool("traced__add", {"a": 1, "b": 1})
    assert not response.is_error
    client, _ = _pair(recorded, "tools/call add")
    assert _attributes(client)["nativemcp.server.name"] == "traced"


async def test_resources_and_prompts_get_client_and_server_spans_with_their_uri_and_prompt(
    recorded: Recorded,
) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        traced = pool.server("traced")
        await traced.read_resource("note://a")
        await traced.get_prompt("greet", {"who": "you"})
    for read in _pair(recorded, "resources/read"):
        assert _attributes(read)["mcp.resource.uri"] == "note://a"
        assert _attributes(read)["mcp.method.name"] == "resources/read"
    for prompt in _pair(recorded, "prompts/get greet"):
        assert _attributes(prompt)["gen_ai.prompt.name"] == "greet"
        assert "gen_ai.tool.name" not in _attributes(prompt)
        assert "error.type" not in _attributes(prompt)


async def test_an_in_process_server_gives_the_same_pair_of_spans_and_durations(
    recorded: Recorded,
) -> None:
    from _traced_server import server

    async with WorkerPool([server], in_process=["traced"], timeout=20) as pool:
        assert await pool.server("traced").add(a=1, b=2) == 3
        assert (await pool.server("traced").call_tool("refuse", {"store_id": "s"})).is_error
    _pair(recorded, "tools/call add")
    _, server_span = _pair(recorded, "tools/call refuse")
    assert (server_span.attributes or {})["error.type"] == "tool_error"
    points = recorded.points("mcp.server.operation.duration")
    kinds = sorted(str((p.attributes or {}).get("error.type")) for p in points)
    assert kinds == ["None", "tool_error"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_sync_pool_call_gives_the_same_pair_of_spans(recorded: Recorded) -> None:
    def run() -> Any:
        with SyncWorkerPool([SERVER], timeout=20) as pool:
            return pool.server("traced").add(a=4, b=4)

    assert await anyio.to_thread.run_sync(run) == 8
    _pair(recorded, "tools/call add")


async def test_each_operation_records_its_client_and_server_duration(recorded: Recorded) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        traced = pool.server("traced")
        assert await traced.add(a=1, b=1) == 2
        await traced.call_tool("refuse", {"store_id": "s"})
    client = {
        (p.attributes or {}).get("gen_ai.tool.name"): p
        for p in recorded.points("mcp.client.operation.duration")
    }
    server = {
        (p.attributes or {}).get("gen_ai.tool.name"): p
        for p in recorded.points("mcp.server.operation.duration")
    }
    assert set(client) == set(server) == {"add", "refuse"}
    for points in (client, server):
        assert points["add"].count == 1 and points["refuse"].count == 1
        assert "error.type" not in (points["add"].attributes or {})
        assert (points["refuse"].attributes or {})["error.type"] == "tool_error"
        assert (points["add"].attributes or {})["mcp.method.name"] == "tools/call"
        assert (points["add"].attributes or {})["nativemcp.server.name"] == "traced"
        assert "jsonrpc.request.id" not in (points["add"].attributes or {})


async def test_a_workers_log_record_carries_the_ids_of_the_call_it_was_logged_in(
    recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tests.traced")
    async with WorkerPool([SERVER], timeout=20) as pool:
        assert await pool.server("traced").noisy(word="hi") == "hi"
    _, server = _pair(recorded, "tools/call noisy")
    assert server.context is not None
    [record] = [r for r in caplog.records if r.getMessage() == "noisy says hi"]
    assert getattr(record, "otelTraceID", None) == format(server.context.trace_id, "032x")
    assert getattr(record, "otelSpanID", None) == format(server.context.span_id, "016x")


async def test_an_untraced_workers_log_record_carries_no_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="tests.traced")
    async with WorkerPool([SERVER], timeout=20) as pool:
        assert await pool.server("traced").noisy(word="plain") == "plain"
    [record] = [r for r in caplog.records if r.getMessage() == "noisy says plain"]
    assert not hasattr(record, "otelTraceID")
