"""The fast path: plain stateless requests answered without the SDK's session
machinery, with the same answer the SDK path gives.

A 2026-07-28 request stands alone: its version, client info and capabilities ride in
``params._meta``; so does a 2025-11-25 request to a stateless app (``--stateless``),
which the SDK serves with a connection of its own that nothing else reads. `FastPath`
answers the requests that need nothing but the pool
(``tools/list``, ``resources/list`` and ``read``, ``prompts/list`` and ``get``,
``server/discover``, and on a stateless app (``--stateless``) ``tools/call``, which
elsewhere may suspend for its client's input) straight from the bridge: the body is
decoded with msgspec, the SDK's checks accept or refuse it
(`TransportSecurityMiddleware`, the per-version surface of `mcp_types.methods`,
``Mcp-Param-*`` headers; the routing headers and a plain result by our own code,
`_own_checks`, held equal to the SDK's `classify_inbound_request` and surface check),
the bridge's own methods run the call and build the result, and the result is shaped
as the SDK shapes it
(`serialize_server_result`, ``resultType``, the ``serverInfo`` stamp).

Whatever is not plainly such a request goes to the SDK path untouched, decided per
request before anything runs: a refusal of any kind (the SDK then words it), another
version or method, any request while OpenTelemetry tracing is set up (the SDK's spans
stay the SDK's), a server with middleware of its own, a progress token, a log level,
``requestState``, ``task``, a cache hint, an Accept or Content-Type the SDK would
refuse. So a client cannot tell the paths apart (tests/proxy/serve/test_fast_path_equal.py
compares them).

The answer is written by `Reply` (``_reply.py``): like the SDK's SSE mode, a 2026-07-28
answer is JSON unless a notification (a tool's log message) comes first, or the call
runs past the SDK's 15 s window: then it is an event stream with the same events, pinged
as the SDK pings. A 2025-11-25 answer is always an event stream, as the SDK's legacy
transport sends it (its headers, its pings); the fast path sends it whole when the
answer is quick, committing it early under the same rules. What the SDK writes inline
or keeps private (its window, headers, pings, frames, default middleware) is read
through `nativemcp.proxy._sdk_seam`. Every check of the app before this one
(token, Host, body size, request ids) has run: this sits where the session manager sits.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import mcp_types as types
import sniffio
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.request_state import RequestStateBoundary
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from nativemcp.protocol import NativeMCPResponse, ProtocolError, spec_call_result

from ..._sdk_seam import default_server_middleware
from ...http_edge import header_value
from .._apps import AppsHandshake
from .._bridge import McpBridge
from .._logs import logged, request_log_floor
from .._request_ids import decoded_request, read_body, read_request, replayed
from ..auth import caller_from_scope
from ..tasks import TASKS_PROTOCOL_VERSION, TaskCalls, TaskExtensionCalls
from ._call_results import plain_dump
from ._listing_checks import ListingChecks
from ._own_checks import plain_call_result, routing_version
from ._reply import Reply

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

_ENVELOPE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "_meta"})
"""A ``tools/call`` with more than these (``task``, ``requestState``,
``inputResponses``) takes the SDK path."""
_META_KEYS: Final = frozenset({types.PROTOCOL_VERSION_META_KEY, types.CLIENT_CAPABILITIES_META_KEY})
_OPTIONAL_META_KEYS: Final = frozenset({types.CLIENT_INFO_META_KEY})
"""``_meta`` with anything else (a progress token, a log level, trace context) takes the
SDK path: those change what the SDK sends or records."""
_LEGACY_CALL_KEYS: Final = frozenset({"name", "arguments"})
"""A 2025-11-25 ``tools/call`` with more (``task``, ``_meta``) takes the SDK path."""
LEGACY_VERSION: Final = TASKS_PROTOCOL_VERSION
"""The handshake-era version the fast path answers on a stateless app (2025-11-25)."""
_PASSIVE: Final = frozenset(
    {
        *default_server_middleware(),
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


_Run = Callable[["Reply"], Awaitable[Any]]
"""A request's handler: the bridge's, given the answer its notifications ride."""


class _Fallback(Exception):
    """This request is not plainly one the fast path answers: the SDK path takes it."""


class FastPath:
    """Answers plain stateless 2026-07-28 requests (and 2025-11-25 ones where
    ``stateless``) from ``bridge``; everything else goes to ``fallback`` (the route's
    session manager), its body replayed.

    Args:
        bridge: the route's bridge (its handlers run the requests).
        server: the bridge's SDK server (its request handlers, cache hints and
            ``serverInfo`` stamp decide what is answered and how).
        security: the route's Host and Origin checks (the SDK's).
        max_body_size: a larger body goes to the SDK path (which answers 413).
        stateless: the route's session manager is stateless, so a 2025-11-25 request
            holds no session either and is answered here too.
    """

    def __init__(
        self,
        bridge: McpBridge,
        server: LowLevelServer[Any],
        security: TransportSecuritySettings,
        max_body_size: int,
        *,
        stateless: bool = False,
    ) -> None:
        self._bridge = bridge
        self._max = max_body_size
        self._server = server
        self._security = TransportSecurityMiddleware(security)
        self._modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        self._legacy = LEGACY_VERSION if stateless else None
        self._checks = ListingChecks()
        self._passing: set[tuple[bytes | None, ...]] = set()
        # The SDK copies its stamp for each answer so a handler cannot change it for the
        # next; here the answer is encoded at once and nothing writes to it.
        self._stamp = server.server_info_stamp
        self._last_listing: tuple[object, str, dict[str, Any]] = (None, "", {})
        self.answered = 0
        """Requests answered here (not through the SDK path) so far."""

    async def __call__(self, fallback: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, here or through ``fallback``."""
        version = header_value(scope, b"mcp-protocol-version")
        legacy = version is not None and version == self._legacy
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or (version not in self._modern and not legacy)
            or sniffio.current_async_library() != "asyncio"  # see `Window`
            or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
            or not all(type(m) in _PASSIVE for m in self._server.middleware)
            # Under OAuth each caller sees and calls what its scopes cover, as its own
            # subject: the SDK path's handlers apply that (not built here yet).
            or caller_from_scope(scope) is not None
        ):
            await fallback(scope, receive, send)
            return
        # The body as `RequestIds` read and decoded it, ``receive`` replaying it still;
        # else read here (None: too large or cut short, which the SDK path refuses),
        # and those messages replayed to the SDK path if it answers.
        request = read_request(scope)
        if request is None:
            read, body = await read_body(receive, self._max)
            receive = replayed(read, receive)
            request = None if body is None else decoded_request(body)
        try:
            if request is None or request.not_json:
                raise _Fallback
            if legacy:
                accepted = await self._accept_legacy(scope, request.message)
            else:
                accepted = await self._accept(scope, request.message)
        except _Fallback:
            await fallback(scope, receive, send)
            return
        request_id, method, version, run = accepted
        self.answered += 1
        reply = Reply(receive, send, request_id, legacy=legacy)
        await reply.serve(lambda: self._answer(method, version, run, reply))

    async def _envelope(
        self, scope: Scope, decoded: Any
    ) -> tuple[Request, int | str, str, dict[str, Any] | None]:
        """The checks both eras make first (Host and Origin, Accept, a JSON-RPC request
        of a method answered here): the request, its id, method and params."""
        request = Request(scope)
        if not await self._headers_pass(request):
            raise _Fallback
        if not isinstance(decoded, dict) or not decoded.keys() <= _ENVELOPE_KEYS:
            raise _Fallback
        request_id, method, params = decoded.get("id"), decoded.get("method"), decoded.get("params")
        if (
            decoded.get("jsonrpc") != "2.0"
            or type(request_id) not in (int, str)
            or method not in FAST_METHODS
            or method in self._server.cache_hints
            or self._server.get_request_handler(method) is None
            or not (params is None or isinstance(params, dict))
        ):
            raise _Fallback
        assert isinstance(request_id, int | str) and isinstance(method, str)  # checked above
        return request, request_id, method, params

    async def _headers_pass(self, request: Request) -> bool:
        """Whether the SDK's header checks pass: Content-Type, Host and Origin
        (`TransportSecurityMiddleware`), and an Accept of both JSON and an event stream.

        They read those four headers' first values and nothing else, and clients send
        few, so a passing set is remembered (a refusal is not: the SDK path words it)."""
        key = _first_values(request.scope["headers"])
        if key in self._passing:
            return True
        if await self._security.validate_request(request, is_post=True) is not None:
            return False
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse):
            return False
        if len(self._passing) >= _KEPT_HEADERS:  # many clients, or made-up values
            self._passing.clear()
        self._passing.add(key)
        return True

    async def _accept_legacy(self, scope: Scope, decoded: Any) -> tuple[int | str, str, str, _Run]:
        """`_accept` for a 2025-11-25 request to a stateless app: the SDK's legacy
        transport and a connection born ready for it (no ``initialize``)."""
        request, request_id, method, params = await self._envelope(scope, decoded)
        if params is not None and "_meta" in params:
            raise _Fallback  # a progress token, a log level: the SDK's session reads them
        version = LEGACY_VERSION
        if not self._checks.request_valid(method, version, params):
            raise _Fallback
        params = params or {}
        if method == "tools/call" and not params.keys() <= _LEGACY_CALL_KEYS:
            raise _Fallback
        return request_id, method, version, self._handler(method, version, params, request)

    async def _accept(self, scope: Scope, decoded: Any) -> tuple[int | str, str, str, _Run]:
        """The request's id, method, version and its handler, when the fast path answers
        it exactly as the SDK would; `_Fallback` for anything else."""
        request, request_id, method, params = await self._envelope(scope, decoded)
        if params is None:
            raise _Fallback  # a 2026-07-28 request carries its envelope in params
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
        version = routing_version(decoded, scope["headers"], self._modern)
        if version is None:  # refused, or ours cannot tell: the SDK's checks decide
            version = _sdk_routing_version(decoded, scope["headers"])
        if not self._checks.request_valid(method, version, params):
            raise _Fallback
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if not params.keys() <= _CALL_KEYS or _param_headers_refused(
                self._bridge, name, arguments, request
            ):
                raise _Fallback
        return request_id, method, version, self._handler(method, version, params, request)

    def _handler(self, method: str, version: str, params: dict[str, Any], request: Request) -> _Run:
        bridge = self._bridge
        if method == "tools/call":
            # A call that may suspend for its client's input (not stateless) is the SDK's.
            if bridge.suspend or bridge.profile.search or bridge.profile.code_mode:
                raise _Fallback  # tool search, code mode: `_routed` answers the meta-tools
            name, arguments = params["name"], params.get("arguments") or {}
            # A 2026-07-28 request gets log messages at or above its _meta level only.
            floor = 0 if version == self._legacy else request_log_floor(params.get("_meta"))

            async def call(reply: Reply) -> types.CallToolResult | dict[str, Any]:
                async def on_log(level: str, data: Any, logger: str | None) -> None:
                    if logged(level, floor):
                        await reply.log(level, data, logger)

                tool = await bridge.tools.served_tool(name, apps=False)
                options = bridge.calls.call_options(
                    None, on_request=bridge.cannot_ask, on_log=on_log
                )
                answer = await bridge.calls.tool_answer(tool, dict(arguments), version, options)
                if isinstance(answer, types.CallToolResult):
                    return answer  # a tool error of the bridge's own
                # A plain result is dumped here as the SDK's model would dump it; if the
                # version's check refuses that, the model words the refusal as the SDK
                # path does (`ToolCalls.shaped`, then the check in `_answer`).
                dumped = self._plain(version, answer)
                return bridge.calls.shaped(tool, answer, apps=False) if dumped is None else dumped

            return call
        if method == "tools/list":
            tasks = bridge.tasks.offered_at(version)
            return lambda _: bridge.tools.tool_listing(tasks=tasks, apps=False)
        if method == "resources/list":
            return lambda _: bridge.features.list_resources(None, None)
        if method == "prompts/list":
            return lambda _: bridge.features.list_prompts(None, None)
        if method == "resources/read":
            typed_read = _typed(types.ReadResourceRequestParams, params)
            return lambda _: bridge.features.read_resource(None, typed_read)
        if method == "prompts/get":
            typed_get = _typed(types.GetPromptRequestParams, params)
            return lambda _: bridge.features.get_prompt(None, typed_get)
        if method == "ping":
            return _empty
        server = self._server

        async def discover(_: Reply) -> types.DiscoverResult:
            # The SDK's default `server/discover` handler, which this server keeps.
            return types.DiscoverResult(
                supported_versions=list(MODERN_PROTOCOL_VERSIONS),
                capabilities=server.get_capabilities(protocol_version=version),
                instructions=server.instructions,
            )

        return discover

    def _plain(self, version: str, response: NativeMCPResponse[Any]) -> dict[str, Any] | None:
        """A plain tool result checked for ``version`` (None: not plain, not sendable,
        or refused by the check: the SDK's model then shapes it)."""
        try:
            dumped = plain_dump(spec_call_result(response))
        except ProtocolError:
            return None
        if dumped is None:
            return None
        checked = plain_call_result(version, dumped)
        if checked is not None:
            return checked  # what the SDK's check would give (`_own_checks`)
        try:
            return self._checks.result("tools/call", version, dumped)
        except ValidationError:
            return None

    async def _answer(self, method: str, version: str, run: _Run, reply: Reply) -> dict[str, Any]:
        """The result as the SDK's runner shapes it for a client of ``version``."""
        result = await run(reply)
        kept = self._last_listing
        if isinstance(result, dict):
            dumped = result  # a plain tool result, checked in `_plain`
        elif kept[0] is result and kept[1] == version:
            # The same listing object as last time (`ServedTools.tool_listing` keeps it
            # while the catalog is unchanged): its checked dump, unchanged too.
            dumped = dict(kept[2])
        else:
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            try:
                dumped = self._checks.result(method, version, dumped)
            except ValidationError:
                _logger.exception("handler for %r returned an invalid result", method)
                raise MCPError(
                    code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
                ) from None
            if isinstance(result, types.ListToolsResult):
                self._last_listing = (result, version, dict(dumped))
        if version not in self._modern:
            return dumped  # a handshake-era result: no resultType, no stamp
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {types.SERVER_INFO_META_KEY: self._stamp}
        elif isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**meta, types.SERVER_INFO_META_KEY: self._stamp}
        return dumped


_CHECKED_HEADERS: Final = (b"content-type", b"host", b"origin", b"accept")
_KEPT_HEADERS: Final = 256
"""Passing header sets remembered per route; past that, start over."""


def _first_values(headers: Any) -> tuple[bytes | None, ...]:
    """The first value of each of `_CHECKED_HEADERS` (None: absent), as the SDK's
    checks read them (Starlette's ``Headers.get`` takes the first)."""
    found: list[bytes | None] = [None, None, None, None]
    for key, value in headers:
        if key in _CHECKED_HEADERS:
            index = _CHECKED_HEADERS.index(key)
            if found[index] is None:
                found[index] = value
    return tuple(found)


def _sdk_routing_version(decoded: dict[str, Any], raw: Any) -> str:
    """The SDK's routing checks (each routing header once, the request ladder): the
    version they pass the request at; `_Fallback` when they refuse it."""
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
    if find_duplicated_routing_header(headers) is not None:
        raise _Fallback
    verdict = classify_inbound_request(decoded, headers=dict(headers))
    if isinstance(verdict, InboundLadderRejection):
        raise _Fallback
    return verdict.protocol_version


def _typed(model: type[Any], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params, by_name=False)
    except ValidationError:
        raise _Fallback from None


async def _empty(_: Reply) -> types.EmptyResult:
    return types.EmptyResult()


def _param_headers_refused(bridge: McpBridge, name: Any, arguments: Any, request: Request) -> bool:
    """Whether the SDK would refuse the call's ``Mcp-Param-*`` headers (it checks them
    against the tool's schema, as served, before the call runs)."""
    if not isinstance(name, str) or not isinstance(arguments, Mapping):
        return True  # the SDK's own validation words it
    if not arguments and not any(k.startswith(b"mcp-param-") for k, _ in request.scope["headers"]):
        return False
    schema = bridge.tools.tool_input_schema(name)
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
