"""Each private part of the official SDK that `nativemcp.proxy._sdk_seam` reads, and each
value it copies from the SDK or sse-starlette, checked against the installed versions: a
release that moves or changes one fails here, by name."""

from __future__ import annotations

import contextlib
import json
import re
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import _streamable_http_modern as _modern_http
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from sse_starlette import EventSourceResponse

from nativemcp.proxy._sdk_seam import (
    LEGACY_SSE_HEADERS,
    SSE_PING,
    client_connection,
    default_server_middleware,
    legacy_catch_all,
    legacy_event,
    legacy_ping,
    modern_event,
    send_raw_request,
    sse_headers,
    sse_window,
)

pytestmark = pytest.mark.anyio


def test_a_server_sessions_connection_is_the_one_it_was_made_with() -> None:
    connection = SimpleNamespace(protocol_version="2025-11-25", client_params=None)
    session = ServerSession(SimpleNamespace(), connection)  # type: ignore[arg-type]
    assert client_connection(session) is connection


def test_an_object_without_a_connection_has_none() -> None:
    assert client_connection(SimpleNamespace()) is None


async def test_a_raw_request_reaches_the_server_and_returns_its_raw_result() -> None:
    server = MCPServer("seam")

    @server.tool()
    def echo(text: str) -> str:
        """Say ``text`` back."""
        return text

    # A 2025-11-25 connection, where the pool sends its one raw request (a task).
    async with Client(server, mode="legacy") as client:
        raw = await send_raw_request(
            client, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
        )
    assert raw["content"] == [{"type": "text", "text": "hi"}]


# -- Streamable HTTP as the SDK writes it: each copy against what the SDK sends ---------


async def _exchange(
    app: Any, headers: dict[str, str], body: dict[str, Any], on_chunk: Any = None
) -> list[dict[str, Any]]:
    """One POST to the ASGI ``app``: the messages it sent (``on_chunk`` sees each part of
    a body that is not the last)."""
    sent: list[dict[str, Any]] = []
    raw = json.dumps(body).encode()
    messages = [{"type": "http.request", "body": raw, "more_body": False}]
    disconnected = anyio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        more = message["type"] == "http.response.body" and message.get("more_body")
        if more and on_chunk is not None:
            on_chunk(message["body"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }
    async with app.router.lifespan_context(app):
        with anyio.fail_after(10):
            await app(scope, receive, send)
    disconnected.set()
    return sent


def _waiting_server(released: anyio.Event) -> MCPServer:
    server = MCPServer("seam")

    @server.tool()
    async def wait() -> str:
        """Answer once released."""
        await released.wait()
        return "done"

    return server


_HEADERS = {
    "host": "127.0.0.1:8000",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


async def test_a_silent_modern_answer_streams_with_the_sdks_headers_ping_and_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The window is the SDK's own constant, read at each request: shortened, the SDK
    # commits its answer to an event stream and pings it while the tool waits.
    monkeypatch.setattr(_modern_http, "_SSE_PING_INTERVAL", 0.05)
    released = anyio.Event()
    app = _waiting_server(released).streamable_http_app(stateless_http=True)
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "wait", "arguments": {}, "_meta": meta},
    }
    headers = {**_HEADERS, "mcp-protocol-version": version, "mcp-method": "tools/call"}
    headers["mcp-name"] = "wait"
    sent = await _exchange(app, headers, body, lambda _: released.set())
    assert sent[0]["headers"] == sse_headers()
    assert sent[1]["body"] == SSE_PING
    last = sent[-1]["body"]
    data = last.decode().split("data: ", 1)[1].rstrip("\r\n")
    assert last == modern_event(json.loads(data))


def test_the_window_is_the_sdks() -> None:
    assert sse_window() == _modern_http._SSE_PING_INTERVAL > 0


async def test_a_legacy_answer_streams_with_the_sdks_headers_and_frame() -> None:
    released = anyio.Event()
    released.set()
    app = _waiting_server(released).streamable_http_app(stateless_http=True)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait"}}
    headers = {**_HEADERS, "mcp-protocol-version": "2025-11-25"}
    sent = await _exchange(app, headers, body)
    names = {name for name, _ in LEGACY_SSE_HEADERS}
    assert [h for h in sent[0]["headers"] if h[0] in names] == LEGACY_SSE_HEADERS
    (event,) = [m["body"] for m in sent[1:] if m.get("body", b"").startswith(b"event: message")]
    data = event.decode().split("data: ", 1)[1].rstrip("\r\n")
    assert event == legacy_event(json.loads(data))


async def test_sse_starlettes_ping_is_a_comment_stamped_with_the_time() -> None:
    seen: list[bytes] = []
    released = anyio.Event()

    async def events() -> Any:
        await released.wait()
        yield {"event": "message", "data": "{}"}

    def on_chunk(chunk: bytes) -> None:
        seen.append(chunk)
        released.set()

    response = EventSourceResponse(events(), ping=0.05)

    class _App:
        router = SimpleNamespace(lifespan_context=lambda app: contextlib.nullcontext())

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await response(scope, receive, send)

    await _exchange(_App(), _HEADERS, {}, on_chunk)
    theirs, ours = seen[0], legacy_ping()
    pattern = rb": ping - (.+)\r\n\r\n"
    stamps = [re.fullmatch(pattern, ping) for ping in (theirs, ours)]
    assert all(stamps)
    for stamp in stamps:
        assert stamp is not None
        assert datetime.fromisoformat(stamp[1].decode()).tzinfo is not None


async def test_a_legacy_handlers_other_exception_answers_code_zero_and_its_text() -> None:
    server = LowLevelServer("seam")

    async def broken(ctx: Any, params: Any) -> Any:
        raise RuntimeError("the handler broke")

    server.add_request_handler("prompts/list", types.PaginatedRequestParams, broken)
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.list_prompts()
    expected = legacy_catch_all(RuntimeError("the handler broke"))
    assert (raised.value.error.code, raised.value.error.message) == (
        expected.code,
        expected.message,
    )


def test_every_sdk_server_starts_with_the_middleware_the_seam_names() -> None:
    assert {type(m) for m in LowLevelServer("seam").middleware} == default_server_middleware()
