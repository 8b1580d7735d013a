"""The fast path answers as the SDK path does: the same requests go to two apps over one
pool, one with the fast path and one without, and their answers are compared (status,
the headers a client reads, the JSON). The fast path's own count shows which requests
it answered: plain ones here, the rest through the SDK path. Both eras: 2026-07-28, and
2025-11-25 to a stateless app."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from _mcp_http import serving
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.inbound import encode_header_value
from starlette.applications import Starlette

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

VERSION = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "differ", "version": "1"},
}
COMPARED = ("content-type", "mcp-protocol-version", "mcp-session-id", "allow", "www-authenticate")
"""The headers a client reads (uvicorn's date and server are the same either way)."""


def _legacy(
    method: str, params: dict[str, Any] | None = None, *, id: Any = 1
) -> tuple[dict[str, str], bytes]:
    """A 2025-11-25 request as a client of a stateless server sends it (no session, the
    version in its header, no envelope)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY,
    }
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return headers, json.dumps(body).encode()


def _request(
    method: str, params: dict[str, Any] | None = None, *, id: Any = 1, name: str | None = None
) -> tuple[dict[str, str], bytes]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = encode_header_value(name)  # as the SDK's client sends it
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    body["params"] = {"_meta": META, **(params or {})}
    return headers, json.dumps(body).encode()


def _refused_headers(headers: dict[str, str], body: bytes) -> list[tuple[dict[str, str], bytes]]:
    """The request with each header the SDK refuses: an Accept without one of its two
    types (near misses too: a longer type that starts with one, or ends with it), another
    Content-Type, a foreign Origin (one that starts with a local name too)."""
    refused = [
        {"accept": "application/json"},
        {"accept": "text/event-stream"},
        {"accept": "application/json-seq, text/event-stream"},
        {"accept": "application/json, text/event-streams"},
        {"accept": "application/json, x-text/event-stream"},
        {"content-type": "text/plain"},
        {"origin": "http://evil.example"},
        {"origin": "http://localhost.evil.example"},
    ]
    return [({**headers, **change}, body) for change in refused]


@contextlib.asynccontextmanager
async def _pair(pool: WorkerPool, **options: Any) -> AsyncIterator[tuple[Starlette, Any]]:
    """A fast app and a plain one over ``pool``, served, and a function that sends one
    request to both and returns the two answers."""
    options = {"stateless": True, **options}
    fast = http_app(pool, **options)
    plain = http_app(pool, fast_path=False, **options)
    async with (
        serving(fast) as fast_url,
        serving(plain) as plain_url,
        httpx2.AsyncClient(timeout=20) as http,
    ):

        async def both(
            headers: dict[str, str], body: bytes, path: str = "/mcp"
        ) -> tuple[httpx2.Response, httpx2.Response]:
            one = await http.post(fast_url + path, headers=headers, content=body)
            two = await http.post(plain_url + path, headers=headers, content=body)
            return one, two

        yield fast, both


def _answer(response: httpx2.Response) -> tuple[int, dict[str, str], Any]:
    """What a client reads of an answer: status, headers, and the JSON-RPC message(s)."""
    headers = {k: response.headers[k] for k in COMPARED if k in response.headers}
    if "mcp-session-id" in headers:  # a new session's id is random: its presence counts
        headers["mcp-session-id"] = "(a session)"
    text = response.text
    if headers.get("content-type", "").startswith("text/event-stream"):
        # An event stream's lines end at CR, LF or CRLF only: str.splitlines would also
        # split at a U+2028 or U+0085 that JSON leaves unescaped inside a string.
        lines = re.split(r"\r\n|\r|\n", text)
        events = [line[6:] for line in lines if line.startswith("data: ")]
        return response.status_code, headers, [json.loads(e) for e in events]
    try:
        return response.status_code, headers, json.loads(text)
    except ValueError:
        return response.status_code, headers, text


def _assert_same(pair: tuple[httpx2.Response, httpx2.Response]) -> Any:
    fast, plain = (_answer(r) for r in pair)
    assert fast == plain
    return fast


PLAIN = [
    _request("tools/list"),
    _request("tools/call", {"name": "move", "arguments": {"point": {"x": 1, "y": 2}}}, name="move"),
    _request("tools/call", {"name": "corners", "arguments": {"size": 2}}, name="corners"),
    _request("tools/call", {"name": "refuse", "arguments": {"reason": "no"}}, name="refuse"),
    _request("tools/call", {"name": "move", "arguments": {"point": "x"}}, name="move"),
    _request("tools/call", {"name": "nope", "arguments": {}}, name="nope"),
    _request("tools/call", {"name": "ask_model", "arguments": {"question": "?"}}, name="ask_model"),
    _request("tools/call", {"name": "count", "arguments": {"steps": 2}}, id="s", name="count"),
    _request("resources/list"),
    _request("resources/read", {"uri": "shapes://unit"}, name="shapes://unit"),
    _request("resources/read", {"uri": "shapes://square/3"}, name="shapes://square/3"),
    _request("resources/read", {"uri": "shapes://none"}, name="shapes://none"),
    _request("prompts/list"),
    _request("prompts/get", {"name": "describe", "arguments": {"shape": "o"}}, name="describe"),
    _request("prompts/get", {"name": "missing"}, name="missing"),
    _request("server/discover", id=2**53),
    _request("tools/list", id=""),
]
"""Requests the fast path answers: results, tool errors, JSON-RPC errors, a tool that
logs (an event stream), one that asks the client (refused: stateless)."""

ELSEWHERE = [
    _request("tools/call", {"name": "move", "arguments": {}, "task": {"ttl": 1}}, name="move"),
    _request("tools/call", {"name": "move", "_meta": {**META, "progressToken": 1}}, name="move"),
    _request("tools/call", {"name": "move", "arguments": {}}, name="other"),  # header mismatch
    _request("tools/call", {"arguments": {}}),
    _request("tools/call", {"name": 5}, name="5"),
    _request("resources/templates/list"),
    _request("completion/complete", {"ref": {"type": "ref/prompt", "name": "describe"}}),
    _request("logging/setLevel", {"level": "info"}),
    _request("nothing/here"),
    _request("ping"),  # gone from 2026-07-28: the SDK says so
    (
        {**_request("tools/list")[0], "mcp-protocol-version": "2025-11-25"},
        _request("tools/list")[1],
    ),
    *_refused_headers(*_request("tools/list")),
    (_request("ping")[0], b"{not json"),
    (_request("ping")[0], b"[]"),
    (_request("ping")[0], b'{"jsonrpc": "2.0", "method": "ping", "params": {}}'),
    (_request("ping")[0], b'{"jsonrpc": "1.0", "id": 1, "method": "ping", "params": {}}'),
    (_request("ping")[0], b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'),
]
"""Requests the SDK path answers: tasks, progress, refusals of every kind, other methods,
versions and media types."""

LEGACY_PLAIN = [
    _legacy("tools/list"),
    _legacy("tools/list", {}),
    _legacy("tools/call", {"name": "move", "arguments": {"point": {"x": 1, "y": 2}}}),
    _legacy("tools/call", {"name": "corners", "arguments": {"size": 2}}),
    _legacy("tools/call", {"name": "refuse", "arguments": {"reason": "no"}}),
    _legacy("tools/call", {"name": "move", "arguments": {"point": "x"}}),
    _legacy("tools/call", {"name": "move"}),
    _legacy("tools/call", {"name": "nope", "arguments": {}}),
    _legacy("tools/call", {"name": "ask_model", "arguments": {"question": "?"}}),
    _legacy("tools/call", {"name": "count", "arguments": {"steps": 2}}, id="s"),
    _legacy("resources/list"),
    _legacy("resources/read", {"uri": "shapes://unit"}),
    _legacy("resources/read", {"uri": "shapes://square/3"}),
    _legacy("resources/read", {"uri": "shapes://none"}),
    _legacy("prompts/list", {}),
    _legacy("prompts/get", {"name": "describe", "arguments": {"shape": "o"}}),
    _legacy("prompts/get", {"name": "missing"}),
    _legacy("ping"),
    _legacy("ping", id=2**53),
    _legacy("tools/list", id=""),
    # JSON leaves U+2028 and U+0085 unescaped: an event's data line holds them whole.
    _legacy("tools/call", {"name": "refuse", "arguments": {"reason": "a\u2028b\x85c"}}),
]
"""2025-11-25 requests to a stateless app that the fast path answers: every one an event
stream, as the SDK's legacy transport sends it."""

LEGACY_ELSEWHERE = [
    _legacy("tools/call", {"name": "move", "arguments": {}, "task": {"ttl": 1}}),
    _legacy("tools/call", {"name": "count", "arguments": {}, "_meta": {"progressToken": 1}}),
    _legacy("tools/list", {"_meta": {}}),
    _legacy("tools/call", {"arguments": {}}),
    _legacy("tools/call", {"name": 5}),
    _legacy("server/discover", {}),  # not in 2025-11-25: the SDK says so
    _legacy("initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {}}),
    _legacy("resources/templates/list"),
    _legacy("logging/setLevel", {"level": "info"}),
    _legacy("nothing/here"),
    ({**_legacy("ping")[0], "mcp-protocol-version": "2025-06-18"}, _legacy("ping")[1]),
    *_refused_headers(*_legacy("ping")),
    (_legacy("ping")[0], b"{not json"),
    (_legacy("ping")[0], b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'),
    (_legacy("ping")[0], b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}'),
    (_legacy("ping")[0], b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": 1}'),
]
"""2025-11-25 requests the SDK path answers: tasks, progress, other methods and
versions, refusals of every kind."""


async def test_plain_requests_answer_the_same_through_the_fast_path() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            streamed = []
            for headers, body in PLAIN:
                _, got, message = _assert_same(await both(headers, body))
                if got["content-type"] == "text/event-stream":
                    streamed.append(message)
            assert fast.state.fast_answers() == len(PLAIN)
            # The logging tool's answer is an event stream: its log lines, then the result.
            (events,) = streamed
            assert [e.get("method") for e in events[:-1]] == ["notifications/message"] * 2
            assert events[-1]["result"]["structuredContent"] == {"result": 2}


@pytest.mark.parametrize("requests", [ELSEWHERE, LEGACY_ELSEWHERE], ids=[VERSION, LEGACY])
async def test_unusual_requests_take_the_sdk_path_and_answer_the_same(
    requests: list[tuple[dict[str, str], bytes]],
) -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            # A plain request first: its headers are remembered as passing, and the
            # refused variants below must still be refused (nothing else remembered).
            first = _request("tools/list") if requests is ELSEWHERE else _legacy("tools/list")
            _assert_same(await both(*first))
            for headers, body in requests:
                _assert_same(await both(headers, body))
            assert fast.state.fast_answers() == 1


async def test_plain_legacy_requests_to_a_stateless_app_answer_the_same() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            for headers, body in LEGACY_PLAIN:
                _, got, events = _assert_same(await both(headers, body))
                assert got["content-type"] == "text/event-stream"
                assert events[-1]["id"] == json.loads(body)["id"]
            assert fast.state.fast_answers() == len(LEGACY_PLAIN)
            # The logging tool's stream: its log lines, then the result.
            _, _, events = _assert_same(await both(*LEGACY_PLAIN[9]))
            assert [e.get("method") for e in events[:-1]] == ["notifications/message"] * 2
            # No handshake-era result carries the 2026-07-28 stamp or resultType.
            _, _, events = _assert_same(await both(*LEGACY_PLAIN[2]))
            assert "resultType" not in events[-1]["result"]
            assert "_meta" not in events[-1]["result"]


async def test_legacy_requests_to_a_stateful_app_take_the_sdk_path() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool, stateless=False) as (fast, both):
        with anyio.fail_after(60):
            for headers, body in LEGACY_PLAIN[:3]:
                status, _, _ = _assert_same(await both(headers, body))
                assert status == 400  # no session: the SDK's refusal, on both
            assert fast.state.fast_answers() == 0


async def test_limits_apply_before_the_fast_path() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool, token="s3cret", max_body_size=2000) as (fast, both):
        with anyio.fail_after(60):
            headers, body = _request("tools/list")
            status, _, _ = _assert_same(await both(headers, body))
            assert status == 401
            authorized = {**headers, "authorization": "Bearer s3cret"}
            rebound = {**authorized, "host": "evil.example"}
            status, _, _ = _assert_same(await both(rebound, body))
            assert status == 421
            big = _request("tools/call", {"name": "move", "arguments": {"p": "x" * 3000}})
            status, _, _ = _assert_same(await both({**authorized, "mcp-name": "move"}, big[1]))
            assert status == 413
            assert fast.state.fast_answers() == 0
            status, _, message = _assert_same(await both(authorized, body))
            assert status == 200 and message["result"]["tools"]
            assert fast.state.fast_answers() == 1


async def test_each_server_route_has_its_fast_path() -> None:
    pool = WorkerPool(["_serve_servers:server", "_serve_servers:other"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            headers, body = _request("tools/call", {"name": "ping_other"}, name="ping_other")
            _, _, message = _assert_same(await both(headers, body, "/mcp/other"))
            assert message["result"]["content"][0]["text"]
            headers, body = _request("tools/list")
            _, _, message = _assert_same(await both(headers, body))
            names = {tool["name"] for tool in message["result"]["tools"]}
            assert "other__ping_other" in names and "shapes__move" in names
            assert fast.state.fast_answers() == 2


async def _session(client: Client) -> list[Any]:
    """What one client session reads: a listing, calls, a read, a prompt."""
    listed = await client.list_tools()
    moved = await client.call_tool("move", {"point": {"x": 1, "y": 2}})
    refused = await client.call_tool("refuse", {"reason": "no"})
    unknown = await client.call_tool("move", {"point": "x"})
    read = await client.read_resource("shapes://unit")
    prompt = await client.get_prompt("describe", {"shape": "o"})
    answers = [listed, moved, refused, unknown, read, prompt]
    return [answer.model_dump(mode="json") for answer in answers]


@pytest.mark.parametrize(("mode", "version"), [("auto", VERSION), ("legacy", "2025-11-25")])
async def test_the_sdk_client_reads_the_same_from_either_path(mode: Any, version: str) -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    fast = http_app(pool, stateless=True)
    plain = http_app(pool, stateless=True, fast_path=False)
    async with pool, serving(fast) as fast_url, serving(plain) as plain_url:
        with anyio.fail_after(60):
            read = []
            for base in (fast_url, plain_url):
                async with Client(f"{base}/mcp", mode=mode) as client:
                    assert client.protocol_version == version
                    read.append(await _session(client))
            answered = fast.state.fast_answers()
    assert read[0] == read[1]
    assert read[0][1]["structured_content"] == {"x": 2, "y": 2}
    # Both eras' requests take the fast path (a 2025-11-25 client's initialize the
    # SDK's; the client may send a request of its own besides the six).
    assert answered >= 6


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_METHODS = st.sampled_from(
    ["tools/call", "tools/list", "resources/read", "prompts/get", "ping", "server/discover", "x"]
)
_KNOWN = ["move", "corners", "refuse", "nope", "describe", "shapes://unit"]
_NAMES = st.sampled_from(_KNOWN) | st.text(max_size=5)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[dict[str, str], bytes]:
    method = draw(_METHODS)
    name = draw(_NAMES)
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        params["name" if method != "resources/read" else "uri"] = name
    if draw(st.booleans()):
        params["arguments"] = draw(_JSON)
    if draw(st.booleans()):
        params[draw(st.text(max_size=6))] = draw(_JSON)
    request_id = draw(st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=4))
    if draw(st.booleans()):  # a 2025-11-25 request, its params left out or not
        headers, body = _legacy(method, params or draw(st.sampled_from([None, {}])), id=request_id)
    else:
        headers, body = _request(method, params, id=request_id, name=name)
    if draw(st.booleans()):  # the params themselves malformed
        decoded = json.loads(body)
        decoded["params"] = draw(_JSON)
        body = json.dumps(decoded).encode()
    return headers, body


@pytest.mark.parametrize("stateless", [True, False])
async def test_generated_requests_answer_the_same_either_way(stateless: bool) -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool, stateless=stateless) as (fast, both):
        cases: list[tuple[dict[str, str], bytes]] = []

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(_requests())
        def collect(case: tuple[dict[str, str], bytes]) -> None:
            cases.append(case)

        collect()
        with anyio.fail_after(120):
            for headers, body in cases:
                _assert_same(await both(headers, body))
        assert fast.state.fast_answers() > 0


@pytest.mark.parametrize("era", [VERSION, LEGACY])
async def test_a_call_silent_past_the_window_answers_as_a_pinged_stream_either_way(
    monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    from mcp.server import _streamable_http_modern as sdk_modern
    from sse_starlette import EventSourceResponse

    from nativemcp.proxy.serve.fast import _reply

    # Every window short: ours, the SDK's 2026-07-28 one (its module's constant, read at
    # each request) and sse-starlette's pings on the SDK's 2025-11-25 stream.
    monkeypatch.setattr(_reply, "SSE_WINDOW", 0.2)
    monkeypatch.setattr(sdk_modern, "_SSE_PING_INTERVAL", 0.2)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", 0.2)
    slow = {"name": "slow", "arguments": {"seconds": 0.5}}
    legacy = era == LEGACY
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            call = (
                _legacy("tools/call", slow) if legacy else _request("tools/call", slow, name="slow")
            )
            one, two = await both(*call)
            assert one.headers["content-type"] == two.headers["content-type"] == "text/event-stream"
            # (2025-11-25's pings are sse-starlette's, stamped with the time)
            ping = ": ping - " if legacy else ": ping"
            assert one.text.startswith(ping) and two.text.startswith(ping)
            _, _, events = _assert_same((one, two))
            assert events[-1]["result"]["content"][0]["text"] == "finished"
            # A quick call after it answers in JSON (2026-07-28): the window closed with
            # its answer.
            listing = _legacy("tools/list") if legacy else _request("tools/list")
            _, got, _ = _assert_same(await both(*listing))
            assert got["content-type"] == ("text/event-stream" if legacy else "application/json")
            assert fast.state.fast_answers() == 2


async def test_requests_take_the_sdk_path_while_tracing_is_set_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import trace

    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool) as (fast, both):
        with anyio.fail_after(60):
            headers, body = _request("tools/list")
            # A tracer provider set (any but the API's placeholder): the SDK's spans.
            monkeypatch.setattr(trace, "get_tracer_provider", trace.NoOpTracerProvider)
            _assert_same(await both(headers, body))
            assert fast.state.fast_answers() == 0
            monkeypatch.undo()
            _assert_same(await both(headers, body))
            assert fast.state.fast_answers() == 1


async def test_a_server_with_middleware_or_cache_hints_of_its_own_takes_the_sdk_path() -> None:
    from mcp.server.caching import CacheHint
    from mcp.server.lowlevel import Server as LowLevelServer
    from starlette.types import Message

    from nativemcp.proxy import McpBridge
    from nativemcp.proxy.http_edge._rebinding import local_only
    from nativemcp.proxy.serve.fast._fast_path import FastPath

    async def stamp(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    headers, body = _request("tools/list")
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"127.0.0.1:8000")]
        + [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    async with WorkerPool(["_serve_servers:server"], timeout=20) as pool:
        bridge = McpBridge(pool, suspend=False)
        server: LowLevelServer[Any] = bridge.server()
        fast = FastPath(bridge, server, local_only([], []), 1 << 20)
        fell: list[bytes] = []
        sent: list[Message] = []

        async def fallback(scope: Any, receive: Any, send: Any) -> None:
            fell.append((await receive())["body"])

        async def send(message: Message) -> None:
            sent.append(message)

        async def receive() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        with anyio.fail_after(20):
            server.middleware.append(stamp)
            await fast(fallback, scope, receive, send)
            assert fell == [body] and not sent and fast.answered == 0
            server.middleware.remove(stamp)
            # A cache hint changes the SDK's answer (ttlMs, cacheScope): its path.
            server.cache_hints["tools/list"] = CacheHint(ttl_ms=1000)
            await fast(fallback, scope, receive, send)
            assert fell == [body, body] and not sent and fast.answered == 0
            del server.cache_hints["tools/list"]
            await fast(fallback, scope, receive, send)
            assert fell == [body, body] and fast.answered == 1
            assert sent[0]["status"] == 200


async def test_a_stateful_app_answers_all_but_tool_calls_on_the_fast_path() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    async with pool, _pair(pool, stateless=False) as (fast, both):
        with anyio.fail_after(60):
            calls = [(h, b) for h, b in PLAIN if h["mcp-method"] == "tools/call"]
            for headers, body in PLAIN:
                _assert_same(await both(headers, body))
            for headers, body in ELSEWHERE:
                _assert_same(await both(headers, body))
            # A call may suspend for its client's input there: the SDK path runs it.
            assert fast.state.fast_answers() == len(PLAIN) - len(calls)
