"""Requests whose ``id`` no client can match, answered with a JSON-RPC error.

MCP ids are strings or integers. The SDK's Streamable HTTP transport reads a message
with a ``method`` and any other ``id`` (an object, ``1e400``, ``1.5``, ``true``,
``null``) as a notification: it answers 202 and the request is never answered, so its
client waits for ever. `RequestIds` reads such a POST's body first and answers it as
JSON-RPC 2.0 says to answer an Invalid Request: ``-32600`` with ``id: null``, with the
HTTP status the SDK gives the other messages it cannot read (400). A request whose
``Mcp-Method`` or ``Mcp-Name`` header contradicts its body is answered 400 too, with the
SDK's header-mismatch error, in every era: the SDK checks those headers only on a
request that names a 2026-07-28 version in ``MCP-Protocol-Version``, yet a router reads
them on any request (a call labelled as one tool must not be routed where another's
rules apply). Every other request
reaches the transport unchanged, its body replayed as it arrived, and what was read
of it left in the ASGI scope (`read_request`) so the layers below (the fast path) need
not read and decode it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
import msgspec
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    NAME_BEARING_METHODS,
    decode_header_value,
)
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nativemcp.protocol import INVALID_REQUEST

__all__ = [
    "ReadRequest",
    "RequestIds",
    "decoded_request",
    "read_body",
    "read_request",
    "replayed",
]

_REQUEST_ID: Final = TypeAdapter(types.RequestId)
"""The SDK's own rule for an id (a strict int, or a str)."""
_SHOWN: Final = 60
"""How much of a refused id the error message quotes."""
_SCOPE_KEY: Final = "nativemcp.read_request"
_DECODER: Final = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """A POST's body as `RequestIds` read it, and its JSON decoded (``not_json``: the
    body is no JSON msgspec reads, a number out of range included)."""

    body: bytes
    message: Any
    not_json: bool


def read_request(scope: Scope) -> ReadRequest | None:
    """What `RequestIds` read of this request's body (None: it read nothing, the body
    being too large or cut short, or no `RequestIds` ran). The request's ``receive``
    replays that body still."""
    found = scope.get(_SCOPE_KEY)
    return found if isinstance(found, ReadRequest) else None


class _Envelope(msgspec.Struct):
    """What is read of a message here: its method, and its id left as JSON."""

    method: Any = None
    id: msgspec.Raw = msgspec.Raw(b"")


def decoded_request(body: bytes) -> ReadRequest:
    """``body`` with its JSON decoded, as `RequestIds` leaves it."""
    try:
        return ReadRequest(body, _DECODER.decode(body), not_json=False)
    except msgspec.DecodeError:
        return ReadRequest(body, None, not_json=True)


def _refused(read: ReadRequest) -> bytes | None:
    """`_refused_id`, answered from the decoded message where it settles it: an id that
    is an integer or a string, or no request at all."""
    message = read.message
    if not read.not_json:
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return None
        if "id" not in message or type(message["id"]) in (int, str):
            return None  # a notification, or the SDK's own rule (a strict int, or a str)
    return _refused_id(read.body)


def _refused_id(body: bytes) -> bytes | None:
    """The JSON of ``body``'s id when it is a request (it has a ``method``) whose id is
    neither a string nor an integer; None for anything else (the SDK judges it)."""
    try:
        message = msgspec.json.decode(body, type=_Envelope)
    except msgspec.DecodeError:  # not one JSON object (a batch, a parse error)
        return None
    raw = bytes(message.id)
    if not isinstance(message.method, str) or not raw:
        return None  # a response, a notification, or no message at all
    try:
        _REQUEST_ID.validate_python(msgspec.json.decode(raw), by_name=False)
    except (msgspec.DecodeError, ValidationError):  # `1e400` is out of any range
        return raw
    return None


class RequestIds:
    """Wraps a Streamable HTTP endpoint: a POSTed request with an id that is neither a
    string nor an integer gets ``400`` and a JSON-RPC Invalid Request error.

    Args:
        max_body_size: bodies larger than this are not read here (the endpoint
            answers them 413).
    """

    def __init__(self, max_body_size: int) -> None:
        self._max = max_body_size

    async def __call__(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request through ``app``, unless its id is refused here."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        read, body = await read_body(receive, self._max)
        if body is not None:
            request = decoded_request(body)
            refused = _refused(request)
            if refused is not None:
                await _invalid_request(refused)(scope, receive, send)
                return
            mismatch = _routing_mismatch(scope, request.message)
            if mismatch is not None:
                await mismatch(scope, receive, send)
                return
            scope[_SCOPE_KEY] = request
        await app(scope, replayed(read, receive), send)


async def read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """Read a request's body messages: the messages read (to replay) and the whole body,
    or None when it is over ``limit`` bytes (the endpoint refuses it) or cut short."""
    read: list[Message] = []
    size = 0
    while True:
        message = await receive()
        read.append(message)
        size += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            break
        if size > limit:  # too large to hold: the endpoint refuses it
            break
    complete = read[-1]["type"] == "http.request" and not read[-1].get("more_body")
    if not complete or size > limit:
        return read, None
    return read, b"".join(m.get("body", b"") for m in read)


def replayed(read: list[Message], receive: Receive) -> Receive:
    """``receive`` with the messages already ``read`` given again first."""

    async def replay() -> Message:
        return read.pop(0) if read else await receive()

    return replay


def _invalid_request(raw_id: bytes) -> JSONResponse:
    shown = raw_id.decode("utf-8", "replace")
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "…"
    message = (
        f"Invalid Request: a request's id must be a string or an integer, not {shown}; "
        "send it again with one (a message without an id is a notification)"
    )
    error = {"code": INVALID_REQUEST, "message": message}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, 400)


_METHOD_KEY: Final = MCP_METHOD_HEADER.encode()
_NAME_KEY: Final = MCP_NAME_HEADER.encode()
_MODERN: Final = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)


def _routing_mismatch(scope: Scope, message: Any) -> JSONResponse | None:
    """The 400 for a request whose ``Mcp-Method`` or ``Mcp-Name`` contradicts its body,
    where the SDK does not check them (no 2026-07-28 ``MCP-Protocol-Version``); None
    for any other request (without those headers: nearly all of that era's)."""
    method_header = name_header = version = None
    for key, value in scope["headers"]:
        if key == _METHOD_KEY:
            method_header = value
        elif key == _NAME_KEY:
            name_header = value
        elif key == b"mcp-protocol-version":
            version = value
    if (method_header is None and name_header is None) or version in _MODERN:
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None  # no request: the SDK judges it
    method = message["method"]
    wrong = None
    if method_header is not None and method_header.decode("latin-1") != method:
        wrong = f"{MCP_METHOD_HEADER} header does not match the request body's method"
    name_key = NAME_BEARING_METHODS.get(method)
    params = message.get("params")
    named = params.get(name_key) if name_key and isinstance(params, dict) else None
    if (
        wrong is None
        and name_header is not None
        and named is not None
        and decode_header_value(name_header.decode("latin-1")) != named
    ):
        wrong = f"{MCP_NAME_HEADER} header does not match the request body's {name_key!r} parameter"
    if wrong is None:
        return None
    request_id = message.get("id")
    error = {"code": HEADER_MISMATCH, "message": wrong}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, 400)
