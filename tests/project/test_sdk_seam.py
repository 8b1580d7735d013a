"""Each private part of the official SDK that `nativemcp.proxy._sdk_seam` reads, and each
value it copies from the SDK or sse-starlette, checked against the installed versions: a
release that moves or changes one fails here, by name."""

from __future__ import annotations

import ast
import contextlib
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final
from urllib.parse import parse_qs

import anyio
import httpx2
import mcp_types as types
import pytest
from _sdk_tokens import MemoryTokens
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.server import _streamable_http_modern as _modern_http
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import AnyUrl
from sse_starlette import EventSourceResponse

from nativemcp.proxy._sdk_seam import (
    LEGACY_SSE_HEADERS,
    SSE_PING,
    client_connection,
    close_subprocess_transport,
    default_server_middleware,
    is_the_request,
    legacy_catch_all,
    legacy_event,
    legacy_ping,
    mcp_http_client,
    modern_event,
    send_raw_request,
    set_token_expiry,
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


# -- The SDK's HTTP client and OAuth provider -------------------------------------------


async def test_the_sdks_http_client_carries_headers_and_auth_with_its_long_read() -> None:
    auth = httpx2.BasicAuth("user", "secret")
    async with mcp_http_client(headers={"x-entry": "1"}, auth=auth) as client:
        assert isinstance(client, httpx2.AsyncClient)
        assert client.headers["x-entry"] == "1"
        assert client.auth is auth
        # Event streams stay open: the read waits far longer than the connect.
        assert client.timeout.read is not None and client.timeout.connect is not None
        assert client.timeout.read > client.timeout.connect
        assert not client.follow_redirects  # the transport follows them itself
    async with mcp_http_client(timeout=httpx2.Timeout(3.0)) as client:
        assert client.timeout.read == 3.0


def _provider() -> OAuthClientProvider:
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    client = OAuthClientInformationFull(
        client_id="c1", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")]
    )
    kept = OAuthToken(access_token="kept", refresh_token="r1", expires_in=3600)
    return OAuthClientProvider("https://mcp.example/mcp", metadata, MemoryTokens(client, kept))


async def _first_request(provider: OAuthClientProvider, request: httpx2.Request) -> Any:
    flow = provider.async_auth_flow(request)
    try:
        return await flow.__anext__()
    finally:
        await flow.aclose()


async def test_a_flow_with_a_valid_token_yields_the_very_request_it_was_given() -> None:
    provider = _provider()
    request = httpx2.Request("POST", "https://mcp.example/mcp")
    outgoing = await _first_request(provider, request)
    assert is_the_request(outgoing, request)
    assert outgoing.headers["authorization"] == "Bearer kept"
    assert not is_the_request(httpx2.Request("POST", "https://mcp.example/mcp"), request)


async def test_an_expiry_set_in_the_past_makes_the_flow_refresh_first() -> None:
    provider = _provider()
    request = httpx2.Request("POST", "https://mcp.example/mcp")
    assert is_the_request(await _first_request(provider, request), request)  # grant loaded
    set_token_expiry(provider, 1.0)
    assert not provider.context.is_token_valid()
    request = httpx2.Request("POST", "https://mcp.example/mcp")
    outgoing = await _first_request(provider, request)
    assert not is_the_request(outgoing, request)
    assert parse_qs(outgoing.content.decode())["grant_type"] == ["refresh_token"]
    set_token_expiry(provider, time.time() + 60)
    assert provider.context.is_token_valid()
    set_token_expiry(provider, None)  # no expiry: valid as long as it is kept
    assert provider.context.is_token_valid()


# -- anyio's subprocess on asyncio ------------------------------------------------------


async def test_an_asyncio_process_has_a_transport_the_seam_closes(anyio_backend: str) -> None:
    # The stdio transport closes it after ending a server whose escaped child still
    # holds a pipe; if anyio or asyncio renames the attributes, it would warn instead.
    process = await anyio.open_process([sys.executable, "-c", "pass"])
    async with process:
        await process.wait()
    closed = close_subprocess_transport(process)
    assert closed is (anyio_backend == "asyncio")  # trio's process has no transport
    if closed:
        assert process._process._transport.is_closing()  # type: ignore[attr-defined]


def test_an_object_without_a_process_has_no_transport_to_close() -> None:
    assert close_subprocess_transport(SimpleNamespace()) is False


# -- The seam is the only way in --------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[2]
_SDK: Final = ("mcp", "mcp_types")
"""The official SDK's top-level packages."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _sdk_privates(source: str) -> list[tuple[int, str]]:
    """Where ``source`` reaches an SDK private: a private module (``mcp.shared._x``), a
    private name imported from the SDK, or a private attribute of a name bound to the
    SDK (``types._x`` after ``import mcp_types as types``); ``(line, what)`` each."""
    found: list[tuple[int, str]] = []
    bound: set[str] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _SDK:
                    bound.add(alias.asname or alias.name.split(".")[0])
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append((node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            parts = node.module.split(".")
            if parts[0] not in _SDK:
                continue
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                if any(_private(part) for part in [*parts, alias.name]):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_the_check_finds_private_modules_names_and_attributes_of_the_sdk() -> None:
    source = (
        "import mcp_types as types\n"
        "from mcp.shared._httpx_utils import create_mcp_http_client\n"
        "from mcp.server import _streamable_http_modern\n"
        "from mcp.client.auth import OAuthClientProvider\n"
        "import mcp.server._otel\n"
        "from ._local import _private_of_ours\n"
        "types._hidden\n"
        "OAuthClientProvider._initialize\n"
        "self._own\n"
    )
    assert [line for line, _ in _sdk_privates(source)] == [2, 3, 5, 7, 8]


def test_only_the_seam_reaches_the_sdks_private_parts() -> None:
    seam = _ROOT / "proxy" / "_sdk_seam.py"
    elsewhere = {
        f"{path.relative_to(_ROOT)}:{line}: {what}"
        for folder in ("protocol", "workers", "proxy")
        for path in sorted((_ROOT / folder).rglob("*.py"))
        if path != seam
        for line, what in _sdk_privates(path.read_text())
    }
    assert not elsewhere, "go through nativemcp.proxy._sdk_seam"
    assert _sdk_privates(seam.read_text())  # the check reads what the seam does
