"""The fast path: plain 2026-07-28 requests answered without the SDK's session
machinery, with the same answer the SDK path gives.

A 2026-07-28 request stands alone: its version, client info and capabilities ride in
``params._meta``. `FastPath` answers the requests that need nothing but the pool
(``tools/list``, ``resources/list`` and ``read``, ``prompts/list`` and ``get``,
``server/discover``, and on a stateless app (``--stateless``) ``tools/call``, which
elsewhere may suspend for its client's input) straight from the bridge: the body is
decoded with msgspec, the SDK's own checks accept or refuse it
(`TransportSecurityMiddleware`, `classify_inbound_request`, the per-version surface of
`mcp_types.methods`, ``Mcp-Param-*`` headers), the bridge's own methods run the call
and build the result, and the result is shaped as the SDK shapes it
(`serialize_server_result`, ``resultType``, the ``serverInfo`` stamp).

Whatever is not plainly such a request goes to the SDK path untouched, decided per
request before anything runs: a refusal of any kind (the SDK then words it), another
version or method, any request while OpenTelemetry tracing is set up (the SDK's spans
stay the SDK's), a server with middleware of its own, a progress token, a log level,
``requestState``, ``task``, a cache hint, an Accept or Content-Type the SDK would
refuse. So a client cannot tell the paths apart (tests/proxy/serve/test_fast_path_equal.py
compares them).

Like the SDK's SSE mode, the answer is JSON unless a notification (a tool's log message)
comes first, or the call runs past the SDK's 15 s window: then it is an event stream
with the same events, pinged as the SDK pings. Every check of the app before this one
(token, Host, body size, request ids) has run: this sits where the session manager sits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import mcp_types as types
import msgspec
import sniffio
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types import methods as surface
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ._apps import AppsHandshake
from ._bridge import McpBridge
from ._request_ids import read_body, replayed
from ._resource_server import caller_from_scope
from ._task_extension import TaskExtensionCalls
from ._tasks import TaskCalls
from ._window import Window

__all__ = ["FAST_METHODS", "FastPath"]

_logger = logging.getLogger("nativemcp.serve")

FAST_METHODS: Final = frozenset(
    {
        "tools/call",
        "tools/list",
        "resources/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "ping",
        "server/discover",
    }
)
"""The methods the fast path answers (everything else goes to the SDK path)."""

SSE_WINDOW: Final = 15.0
"""Seconds a silent call answers in JSON before the answer becomes an event stream
(the SDK's ``_SSE_PING_INTERVAL``, and its ping interval after)."""

_ENVELOPE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "_meta"})
"""A ``tools/call`` with more than these (``task``, ``requestState``,
``inputResponses``) takes the SDK path."""
_META_KEYS: Final = frozenset({types.PROTOCOL_VERSION_META_KEY, types.CLIENT_CAPABILITIES_META_KEY})
_OPTIONAL_META_KEYS: Final = frozenset({types.CLIENT_INFO_META_KEY})
"""``_meta`` with anything else (a progress token, a log level, trace context) takes the
SDK path: those change what the SDK sends or records."""
_SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]
"""The SDK's event-stream headers for a 2026-07-28 answer."""
_PING: Final = b": ping\r\n\r\n"
_PASSIVE: Final = frozenset(
    {
        *(type(m) for m in LowLevelServer("nativemcp-probe").middleware),
        RequestStateBoundary,
        TaskCalls,
        TaskExtensionCalls,
        AppsHandshake,
    }
)
"""The server middleware the fast path may skip: what every SDK server starts with (its
OpenTelemetry spans, taken only while no tracer provider is set), and the bridge's
``requestState`` seal and task routing (a request with ``requestState`` or ``task``,
or from a client that declares an extension such as Tasks, takes the SDK path) and MCP
Apps' ``initialize`` handshake. A server
with any other middleware is served by the SDK path only."""
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder()


_Run = Callable[["_Reply"], Awaitable[Any]]
"""A request's handler: the bridge's, given the answer its notifications ride."""


class _Fallback(Exception):
    """This request is not plainly one the fast path answers: the SDK path takes it."""


class FastPath:
    """Answers plain stateless 2026-07-28 requests from ``bridge``; everything else goes
    to ``fallback`` (the route's session manager), its body replayed.

    Args:
        bridge: the route's bridge (its handlers run the requests).
        server: the bridge's SDK server (its request handlers, cache hints and
            ``serverInfo`` stamp decide what is answered and how).
        security: the route's Host and Origin checks (the SDK's).
        max_body_size: a larger body goes to the SDK path (which answers 413).
    """

    def __init__(
        self,
        bridge: McpBridge,
        server: LowLevelServer[Any],
        security: TransportSecuritySettings,
        max_body_size: int,
    ) -> None:
        self._bridge = bridge
        self._max = max_body_size
        self._server = server
        self._security = TransportSecurityMiddleware(security)
        self._modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        # The SDK copies its stamp for each answer so a handler cannot change it for the
        # next; here the answer is encoded at once and nothing writes to it.
        self._stamp = server.server_info_stamp
        self.answered = 0
        """Requests answered here (not through the SDK path) so far."""

    async def __call__(self, fallback: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, here or through ``fallback``."""
        version = _header(scope, b"mcp-protocol-version")
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or version not in self._modern
            or sniffio.current_async_library() != "asyncio"  # see `Window`
            or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
            or not all(type(m) in _PASSIVE for m in self._server.middleware)
            # Under OAuth each caller sees and calls what its scopes cover, as its own
            # subject: the SDK path's handlers apply that (not built here yet).
            or caller_from_scope(scope) is not None
        ):
            await fallback(scope, receive, send)
            return
        # The body as `RequestIds` reads it (None: too large or cut short, which the
        # SDK path refuses), and those messages replayed to the SDK path if it answers.
        read, body = await read_body(receive, self._max)
        try:
            if body is None:
                raise _Fallback
            request_id, method, params, run = await self._accept(scope, body)
        except _Fallback:
            await fallback(scope, replayed(read, receive), send)
            return
        self.answered += 1
        reply = _Reply(receive, send, request_id)
        await reply.serve(lambda: self._answer(method, params, run, reply))

    async def _accept(
        self, scope: Scope, body: bytes
    ) -> tuple[int | str, str, dict[str, Any], _Run]:
        """The request's id, method, params and its handler, when the fast path answers
        it exactly as the SDK would; `_Fallback` for anything else."""
        request = Request(scope)
        if await self._security.validate_request(request, is_post=True) is not None:
            raise _Fallback
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse):
            raise _Fallback
        try:
            decoded = _DECODER.decode(body)
        except msgspec.DecodeError:
            raise _Fallback from None
        if not isinstance(decoded, dict) or not decoded.keys() <= _ENVELOPE_KEYS:
            raise _Fallback
        request_id, method, params = decoded.get("id"), decoded.get("method"), decoded.get("params")
        if (
            decoded.get("jsonrpc") != "2.0"
            or type(request_id) not in (int, str)
            or method not in FAST_METHODS
            or method in self._server.cache_hints
            or self._server.get_request_handler(method) is None
            or not isinstance(params, dict)
        ):
            raise _Fallback
        meta = params.get("_meta")
        if (
            not isinstance(meta, dict)
            or not _META_KEYS <= meta.keys() <= _META_KEYS | _OPTIONAL_META_KEYS
        ):
            raise _Fallback
        capabilities = meta[types.CLIENT_CAPABILITIES_META_KEY]
        if not isinstance(capabilities, dict) or "extensions" in capabilities:
            # A client that declares extensions (MCP Apps: UI metadata, tools only an
            # app calls) is answered per what it declared: the SDK path reads that.
            raise _Fallback
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        if find_duplicated_routing_header(headers) is not None:
            raise _Fallback
        verdict = classify_inbound_request(decoded, headers=dict(headers))
        if isinstance(verdict, InboundLadderRejection):
            raise _Fallback
        version = verdict.protocol_version
        try:
            surface.validate_client_request(method, version, params)
        except (KeyError, ValueError):  # ValidationError is a ValueError
            raise _Fallback from None
        run = self._handler(method, version, params, request)
        assert isinstance(request_id, int | str)  # checked above
        return request_id, str(method), params, run

    def _handler(self, method: str, version: str, params: dict[str, Any], request: Request) -> _Run:
        bridge = self._bridge
        if method == "tools/call":
            # A call that may suspend for its client's input (not stateless) is the SDK's.
            if bridge.suspend or bridge.profile.search or not params.keys() <= _CALL_KEYS:
                raise _Fallback  # under tool search, `_routed` answers the meta-tools
            name, arguments = params["name"], params.get("arguments") or {}
            if _param_headers_refused(bridge, name, arguments, request):
                raise _Fallback

            async def call(reply: _Reply) -> types.CallToolResult:
                tool = await bridge.served_tool(name, apps=False)
                options = bridge.call_options(
                    None, request.scope, on_request=bridge.cannot_ask, on_log=reply.log
                )
                return await bridge.run_tool(tool, dict(arguments), version, options, apps=False)

            return call
        if method == "tools/list":
            return lambda _: bridge.tool_listing(tasks=False, apps=False)
        if method == "resources/list":
            return lambda _: bridge.list_resources(None, None)
        if method == "prompts/list":
            return lambda _: bridge.list_prompts(None, None)
        if method == "resources/read":
            typed_read = _typed(types.ReadResourceRequestParams, params)
            return lambda _: bridge.read_resource(None, typed_read)
        if method == "prompts/get":
            typed_get = _typed(types.GetPromptRequestParams, params)
            return lambda _: bridge.get_prompt(None, typed_get)
        if method == "ping":
            return _empty
        server = self._server

        async def discover(_: _Reply) -> types.DiscoverResult:
            # The SDK's default `server/discover` handler, which this server keeps.
            return types.DiscoverResult(
                supported_versions=list(MODERN_PROTOCOL_VERSIONS),
                capabilities=server.get_capabilities(protocol_version=version),
                instructions=server.instructions,
            )

        return discover

    async def _answer(
        self, method: str, params: dict[str, Any], run: _Run, reply: _Reply
    ) -> dict[str, Any]:
        """The result as the SDK's runner shapes it for a 2026-07-28 client."""
        version = params["_meta"][types.PROTOCOL_VERSION_META_KEY]
        result = await run(reply)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            dumped = surface.serialize_server_result(method, version, dumped)
        except ValidationError:
            _logger.exception("handler for %r returned an invalid result", method)
            raise MCPError(
                code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
            ) from None
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {types.SERVER_INFO_META_KEY: self._stamp}
        elif isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**meta, types.SERVER_INFO_META_KEY: self._stamp}
        return dumped


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _typed(model: type[Any], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params, by_name=False)
    except ValidationError:
        raise _Fallback from None


async def _empty(_: _Reply) -> types.EmptyResult:
    return types.EmptyResult()


def _param_headers_refused(bridge: McpBridge, name: Any, arguments: Any, request: Request) -> bool:
    """Whether the SDK would refuse the call's ``Mcp-Param-*`` headers (it checks them
    against the tool's schema, as served, before the call runs)."""
    if not isinstance(name, str) or not isinstance(arguments, Mapping):
        return True  # the SDK's own validation words it
    if not arguments and not any(k.startswith(b"mcp-param-") for k, _ in request.scope["headers"]):
        return False
    schema = bridge.tool_input_schema(name)
    if schema is None:  # not served, or relisted since: the SDK skips the check too
        return False
    if not _annotated(schema):  # no header is compared (a stray one is ignored)
        return False
    return validate_mcp_param_headers(schema, arguments, request.headers) is not None


_ANNOTATED: dict[int, tuple[Any, bool]] = {}
"""Whether a served schema routes any argument to a header, by the schema's identity
(the schema is kept with it, so its id is not reused while it is here)."""


def _annotated(schema: Any) -> bool:
    known = _ANNOTATED.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_ANNOTATED) > 4096:  # schemas replaced by relistings: start over
        _ANNOTATED.clear()
    annotated = bool(x_mcp_header_map(schema))
    _ANNOTATED[id(schema)] = (schema, annotated)
    return annotated


class _Reply:
    """One answer: JSON, unless a notification comes first or the call outlasts the
    SDK's window; then an event stream, as the SDK sends it."""

    def __init__(self, receive: Receive, send: Send, request_id: int | str) -> None:
        self._receive = receive
        self._send = send
        self._id = request_id
        self._streaming = False
        self._lock = anyio.Lock()

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        """A tool's log message, sent on this answer as the bridge sends it on the SDK
        path (a 2026-07-28 request's connection is its own: no level is set on it)."""
        params = types.LoggingMessageNotificationParams(
            level=level,  # type: ignore[arg-type]
            data=data,
            logger=logger,
        )
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self.notify("notifications/message", dumped)

    async def serve(self, answer: Callable[[], Any]) -> None:
        """Run ``answer`` and send what it gives, or the error it raises."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id}
        with anyio.CancelScope() as scope:
            window = Window(SSE_WINDOW, lambda: self._watch(scope))
            try:
                message["result"] = await answer()
            except Exception as exc:  # the SDK's mapping: MCPError and ValidationError as
                # they are, anything else logged and answered as an internal error
                error = modern_error_data(exc)
                message["error"] = error.model_dump(by_alias=True, mode="json", exclude_none=True)
            finally:
                await window.aclose()
        if len(message) > 2:  # not cancelled by the client's leaving
            async with self._lock:
                await self._finish(message)

    async def _finish(self, message: dict[str, Any]) -> None:
        if self._streaming:
            await self._send(
                {"type": "http.response.body", "body": _event(message), "more_body": False}
            )
            return
        status = 200
        if "error" in message:
            status = ERROR_CODE_HTTP_STATUS.get(message["error"]["code"], 200)
        body = _ENCODER.encode(message)
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-length", str(len(body)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await self._send({"type": "http.response.body", "body": body})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification on this answer's stream (committing it to one)."""
        async with self._lock:
            await self._stream(_event({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _stream(self, chunk: bytes) -> None:
        if not self._streaming:
            self._streaming = True
            await self._send(
                {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS}
            )
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def _watch(self, scope: anyio.CancelScope) -> None:
        """Once the answer has been silent for the window: commit it to a stream with a
        ping, and ping after each silent window, cancelling the answer when the client
        leaves (as the SDK does)."""
        while True:
            async with self._lock:
                await self._stream(_PING)
            with anyio.move_on_after(SSE_WINDOW):
                while (await self._receive()).get("type") != "http.disconnect":
                    pass
                scope.cancel()
                return


def _event(message: dict[str, Any]) -> bytes:
    # The SDK writes its events with the standard library's JSON, compact.
    data = json.dumps(message, separators=(",", ":"))
    return f"event: message\r\ndata: {data}\r\n\r\n".encode()
