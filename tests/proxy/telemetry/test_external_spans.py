"""An external MCP server through the official SDK's client: the SDK's own client span
(which injects ``params._meta.traceparent``) nests under the pool's client span, which
names the MCP session a Streamable HTTP server issued."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from _external_server import make_server
from _telemetry import Recorded
from opentelemetry.trace import SpanKind, StatusCode
from starlette.requests import Request

from nativemcp.protocol import METHOD_NOT_FOUND
from nativemcp.proxy import WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

TESTS = Path(__file__).parents[2]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_sdks_client_span_nests_under_the_pools_client_span(
    recorded: Recorded, tmp_path: Path
) -> None:
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    async with WorkerPool(mcp_servers={"ext": entry}, timeout=30) as pool:
        ext = pool.server("ext")
        response = await ext.call_tool("echo", {"text": "hi"})
        failed = await ext.call_tool("fail", {"message": "no"})
    assert not response.is_error and failed.is_error
    ours = [s for s in recorded.spans if s.name == "tools/call echo"]
    sdk = [s for s in recorded.spans if s.name == "MCP send tools/call echo"]
    assert len(ours) == 1 and len(sdk) == 1
    assert ours[0].kind == sdk[0].kind == SpanKind.CLIENT
    assert ours[0].context is not None and sdk[0].parent is not None
    assert sdk[0].parent.span_id == ours[0].context.span_id
    assert (ours[0].attributes or {})["nativemcp.server.name"] == "ext"
    # The version the SDK client negotiated with the server (a dated MCP revision).
    version = str((ours[0].attributes or {})["mcp.protocol.version"])
    assert len(version) == 10 and version[:2] == "20", version
    assert "mcp.session.id" not in (ours[0].attributes or {})  # stdio has no session
    fail = recorded.named("tools/call fail", SpanKind.CLIENT)
    assert (fail.attributes or {})["error.type"] == "tool_error"
    assert fail.status.status_code == StatusCode.ERROR


def _handshake_era(inner: Any, issued: list[str]) -> Any:
    """``inner`` (the SDK's Streamable HTTP app) as a 2025-11-25 server answers: a
    ``server/discover`` probe is an unknown method, so the client falls back to the
    initialize handshake, which opens a session. Every session id it issues goes in
    ``issued``."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        body = await Request(scope, receive).body()
        request = json.loads(body) if body else {}
        if isinstance(request, dict) and request.get("method") == "server/discover":
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error})
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": answer.encode()})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def note(message: Any) -> None:
            if message["type"] == "http.response.start":
                issued.extend(v.decode() for k, v in message["headers"] if k == b"mcp-session-id")
            await send(message)

        await inner(scope, replay, note)

    return app


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_streamable_http_servers_session_id_is_on_the_calls_client_span(
    recorded: Recorded, tmp_path: Path
) -> None:
    issued: list[str] = []
    app = _handshake_era(make_server(str(tmp_path)).streamable_http_app(), issued)
    # Bound and listening before uvicorn starts: the pool's first connect waits in the
    # backlog, no port to poll.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            try:
                entry = {"type": "http", "url": url}
                async with WorkerPool(mcp_servers={"remote": entry}, timeout=30) as pool:
                    remote = pool.server("remote")
                    assert not (await remote.call_tool("echo", {"text": "hi"})).is_error
            finally:
                server.should_exit = True
    [session] = set(issued)
    call = recorded.named("tools/call echo", SpanKind.CLIENT)
    attributes = call.attributes or {}
    assert attributes["mcp.session.id"] == session
    assert attributes["mcp.protocol.version"] == "2025-11-25"


async def _chatty_log(tmp_path: Path, caplog: pytest.LogCaptureFixture, *, beside: bool) -> Any:
    """The log record of an external server's one log message, sent during a call
    (``beside``: while another call is in flight too)."""
    caplog.set_level(logging.INFO, logger="nativemcp.external.ext")
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    async with WorkerPool(mcp_servers={"ext": entry}, timeout=30) as pool:
        ext = pool.server("ext")
        async with anyio.create_task_group() as tg:
            if beside:
                # In flight from its first step, which runs before chatty's first await ends.
                tg.start_soon(ext.call_tool, "hang", {"key": "k"})
            assert not (await ext.call_tool("chatty", {"steps": 1})).is_error
            tg.cancel_scope.cancel()
    [record] = [r for r in caplog.records if r.getMessage() == "did step 1"]
    return record


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_external_servers_log_message_carries_the_ids_of_the_call_it_came_in(
    recorded: Recorded, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=False)
    call = recorded.named("tools/call chatty", SpanKind.CLIENT)
    assert call.context is not None
    assert getattr(record, "otelTraceID", None) == format(call.context.trace_id, "032x")
    assert getattr(record, "otelSpanID", None) == format(call.context.span_id, "016x")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_untraced_external_log_message_carries_no_ids(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=False)
    assert not hasattr(record, "otelTraceID")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_log_message_while_two_calls_are_in_flight_is_given_to_neither(
    recorded: Recorded, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=True)
    assert recorded.named("tools/call chatty", SpanKind.CLIENT)
    assert not hasattr(record, "otelTraceID")
