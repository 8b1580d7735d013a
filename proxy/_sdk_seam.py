"""The SDK's and its dependencies' private parts that nativemcp touches, in one place.

The public APIs of the official `mcp` SDK (and of anyio, under it) do not offer these;
each is read through one function or constant here, so a release that changes one
breaks one module, and ``tests/project/test_sdk_seam.py`` checks each against the
installed version (it fails on the release that changes it, before a user meets the
change). Anything new that reaches into the SDK or a dependency goes here too.

Besides the SDK's private names, the values serve's fast path copies because the SDK
(or sse-starlette, under its 2025-11-25 transport) writes them inline are here: the
bytes of its event streams, their headers in order, its pings, its catch-all error; each
is checked against what the installed SDK sends.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import ErrorData

__all__ = [
    "LEGACY_SSE_HEADERS",
    "SSE_PING",
    "client_connection",
    "close_subprocess_transport",
    "default_server_middleware",
    "is_the_request",
    "legacy_catch_all",
    "legacy_event",
    "legacy_ping",
    "mcp_http_client",
    "modern_event",
    "send_raw_request",
    "set_token_expiry",
    "sse_headers",
    "sse_window",
]


def client_connection(session: object) -> Any | None:
    """The SDK's per-client `Connection` behind a server request context's session
    (``ctx.session``): one object per connected client, which carries its declared
    capabilities and session id, and which serve keys per-client state by (log level,
    subscriptions, MCP Apps declared at the handshake). None where there is none.

    The SDK keeps it as ``ServerSession._connection`` and names only the session in a
    request context."""
    return getattr(session, "_connection", None)


async def send_raw_request(
    client: Client, method: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """Send ``method`` through ``client``'s dispatcher and return the raw result.

    For the one answer the SDK's typed requests would refuse: a 2025-11-25
    task-augmented ``tools/call``, answered with a ``CreateTaskResult`` that its
    ``tools/call`` check rejects. ``client.session._dispatcher`` is private."""
    return await client.session._dispatcher.send_raw_request(method, params, {})


def mcp_http_client(
    headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
) -> Any:
    """An HTTP client as the SDK's Streamable HTTP transport makes its own: the SDK's
    default timeouts (30 s, and 300 s to read, as a server may hold an event stream
    open), redirects left to the transport (it follows them within the origin). The
    private ``mcp.shared._httpx_utils.create_mcp_http_client``."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)


# -- The SDK's OAuth client provider ----------------------------------------------------


def set_token_expiry(provider: Any, expires_at: float | None) -> None:
    """Tell an SDK ``OAuthClientProvider`` when its current access token expires (a
    time stamp, as ``time.time()``; None: no expiry). The SDK reads kept tokens from
    storage without their expiry and keeps it in ``provider.context.token_expiry_time``,
    a field of its ``OAuthContext`` that no public method sets."""
    provider.context.token_expiry_time = expires_at


def is_the_request(outgoing: object, request: object) -> bool:
    """Whether a request an SDK auth flow yields is the request the flow was started
    with (the MCP request, to send through the MCP client) rather than one of its own
    (discovery, registration, token). The SDK's ``async_auth_flow`` yields the very
    object httpx gave it, headers added in place; nothing else tells the two apart."""
    return outgoing is request


# -- Streamable HTTP as the SDK writes it (serve's fast path answers the same) ----------
# The SDK's server side is imported on first use: `nativemcp.proxy` loads without it.


def sse_window() -> float:
    """Seconds a silent 2026-07-28 answer stays JSON before it becomes an event stream,
    and between its pings after (the SDK's private ``_SSE_PING_INTERVAL``)."""
    from mcp.server import _streamable_http_modern

    window: float = _streamable_http_modern._SSE_PING_INTERVAL
    return window


def sse_headers() -> list[tuple[bytes, bytes]]:
    """The headers of the SDK's 2026-07-28 event stream, in order (its private
    ``_SSE_HEADERS``)."""
    from mcp.server import _streamable_http_modern

    return list(_streamable_http_modern._SSE_HEADERS)


SSE_PING: Final = b": ping\r\n\r\n"
"""The SDK's keepalive on a 2026-07-28 event stream (written inline: copied)."""

LEGACY_SSE_HEADERS: Final[list[tuple[bytes, bytes]]] = [
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
    (b"x-accel-buffering", b"no"),
]
"""The headers of the SDK's 2025-11-25 event stream, in order: its transport's, then
sse-starlette's (both written inline: copied)."""


@functools.cache
def default_server_middleware() -> frozenset[type]:
    """The classes of the middleware every SDK low-level server starts with (its
    OpenTelemetry spans; the class lives in the private ``mcp.server._otel``)."""
    from mcp.server._otel import OpenTelemetryMiddleware

    return frozenset({OpenTelemetryMiddleware})


_ENCODER: Final = msgspec.json.Encoder()


def modern_event(message: Mapping[str, Any]) -> bytes:
    """A JSON-RPC message as the SDK's 2026-07-28 event stream frames it: the standard
    library's compact JSON (its private ``_sse_event``)."""
    text = json.dumps(message, separators=(",", ":"))
    return f"event: message\r\ndata: {text}\r\n\r\n".encode()


def legacy_event(message: Mapping[str, Any]) -> bytes:
    """A JSON-RPC message as the SDK's 2025-11-25 event stream frames it: pydantic's
    compact JSON, UTF-8 as it is (as msgspec writes it), in sse-starlette's frame."""
    return b"event: message\r\ndata: " + _ENCODER.encode(message) + b"\r\n\r\n"


def legacy_ping() -> bytes:
    """sse-starlette's keepalive on a 2025-11-25 event stream: a comment stamped with
    the time (written inline in its ``EventSourceResponse._ping``: copied)."""
    return f": ping - {datetime.now(UTC)}\r\n\r\n".encode()


def legacy_catch_all(exc: Exception) -> ErrorData:
    """The error the SDK's 2025-11-25 dispatcher answers for a handler's exception that
    is neither an ``MCPError`` nor a ``ValidationError``: code 0 and the exception's
    text (written inline in ``JSONRPCDispatcher``: copied)."""
    from mcp_types import ErrorData

    return ErrorData(code=0, message=str(exc))


# -- anyio's subprocess on asyncio ------------------------------------------------------


def close_subprocess_transport(process: object) -> bool:
    """Close the asyncio subprocess transport behind an anyio ``Process``, which stays
    open (and warns when collected) while a process that escaped holds one of its pipes;
    whether there was one to close (none on trio). Nothing public reaches it: anyio keeps
    the asyncio process as ``Process._process``, asyncio its transport as
    ``Process._transport`` (the SDK's stdio client walks the same attributes)."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if not callable(close):
        return False
    with contextlib.suppress(PermissionError):  # <=3.12 may re-kill a setuid child
        close()
    return True
