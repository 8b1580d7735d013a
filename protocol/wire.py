"""The wire between an app and its worker processes: messages and frames, both ends.

Each frame is a 4-byte big-endian length followed by one msgspec-msgpack message.
Messages are tagged Structs: `ToWorker` from the proxy, `FromWorker` from the worker;
a running tool's notifications (`Notification`) ride inside them, and a tool's return
type travels as a descriptor (`describe_type` in the worker, `resolve_type` in the
caller). Pure, like the rest of `nativemcp.protocol`: the socket I/O on both ends is
`nativemcp.workers.channel`; the proxy (`nativemcp.proxy`) and the worker host
(`nativemcp.workers`) both import this module, and neither imports the other's
private modules to speak it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

from ._constants import JSONRPC_VERSION
from ._exceptions import ProtocolError
from ._typeref import RETURN_TYPE_META_KEY, describe_type, resolve_type
from ._types import CallToolResult, NativeMCPResponse, Tool
from ._unwrap import unwrap

__all__ = [
    "DEFAULT_MAX_FRAME",
    "FROM_CONTENT",
    "FROM_WRAPPED",
    "HEADER_SIZE",
    "KEEP",
    "RETURN_TYPE_META_KEY",
    "VALUE",
    "Answer",
    "Ask",
    "Call",
    "Caller",
    "Cancel",
    "FeatureRequest",
    "FromWorker",
    "GetServiceContext",
    "ListTools",
    "Log",
    "LogLevel",
    "LogNotification",
    "Notification",
    "Notify",
    "Ping",
    "ProgressNotification",
    "Ready",
    "Reply",
    "ResourceUpdatedNotification",
    "Result",
    "Shutdown",
    "SpanEvent",
    "SpanRecord",
    "Spans",
    "StartFailed",
    "SwitchContext",
    "ToWorker",
    "ValueReader",
    "describe_type",
    "encode_frame",
    "frame_fits",
    "pack_reply",
    "payload_size",
    "reply_value",
    "resolve_type",
    "unpack_reply",
]

DEFAULT_MAX_FRAME: Final = 64 * 1024 * 1024
"""Default largest frame, in bytes, either way (64 MiB)."""

_HEADER: Final = struct.Struct(">I")
HEADER_SIZE: Final = _HEADER.size
"""Bytes of the length prefix before each frame's payload."""


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The MCP logging levels (RFC 5424 names)."""


class ProgressNotification(msgspec.Struct, tag="progress", kw_only=True, omit_defaults=True):
    """Progress of a running call (MCP ``notifications/progress``)."""

    progress: float
    total: float | None = None
    message: str | None = None


class LogNotification(msgspec.Struct, tag="log", kw_only=True, omit_defaults=True):
    """A log message from a running call (MCP ``notifications/message``)."""

    level: LogLevel
    data: Any
    logger: str | None = None


class ResourceUpdatedNotification(
    msgspec.Struct, tag="resource_updated", kw_only=True, omit_defaults=True
):
    """A resource changed (MCP ``notifications/resources/updated`` to its subscribers)."""

    uri: str


Notification = ProgressNotification | LogNotification | ResourceUpdatedNotification
"""What a tool can send to its caller while it runs."""


def frame_fits(size: int, limit: int) -> bool:
    """Whether a frame payload of ``size`` bytes is within ``limit``: the one frame-size
    rule, applied by both ends to what they send and what they receive."""
    return size <= limit


def payload_size(frame: bytes) -> int:
    """The payload size of an encoded frame (its length prefix left out)."""
    return len(frame) - HEADER_SIZE


class Caller(msgspec.Struct, frozen=True, array_like=True):
    """Who is calling: the authenticated principal of a call (``serve`` under OAuth).

    ``subject`` is the access token's ``sub`` (the user, or the client acting for
    itself), unique per ``issuer``; ``client_id`` the OAuth client acting for it;
    ``scopes`` what its token grants.
    """

    subject: str
    client_id: str
    issuer: str | None = None
    scopes: frozenset[str] = frozenset()


class Call(msgspec.Struct, tag="call", array_like=True):
    """Run a tool; ``progress``: the caller wants progress notifications; ``value_only``:
    the caller wants only the typed value (a typed method call), not the model's text."""

    id: int
    tool: str
    arguments: dict[str, Any]
    progress: bool = False
    session_id: str | None = None
    """The caller's session scope for this call (None: the server's current scope)."""
    thread_id: str | None = None
    value_only: bool = False
    trace: dict[str, str] | None = None
    """The caller's trace context as its propagator wrote it (W3C ``traceparent``,
    ``tracestate``, ``baggage``): the parent of the worker's server span. None (one
    byte on the wire) when the caller records no trace; a frame without it decodes,
    and a receiver that predates it ignores it."""
    caller: Caller | None = None
    """The authenticated caller (None: not known, e.g. stdio or a static token)."""


class Cancel(msgspec.Struct, tag="cancel", array_like=True):
    """Cancel the call with this id (no reply)."""

    id: int


class Ping(msgspec.Struct, tag="ping", array_like=True):
    """Answered with an empty `Result`."""

    id: int


class ListTools(msgspec.Struct, tag="list_tools", array_like=True):
    """Answered with the tool list."""

    id: int


class GetServiceContext(msgspec.Struct, tag="service_context", array_like=True):
    """Answered with the service-context text."""

    id: int


class SwitchContext(msgspec.Struct, tag="switch_context", array_like=True):
    """Scope later calls to a session and thread; answered with an empty `Result`."""

    id: int
    session_id: str | None
    thread_id: str | None


class FeatureRequest(msgspec.Struct, tag="feature", array_like=True):
    """A resources/prompts/completion request (MCP method and params); answered with a
    `Result` whose value is the spec-shaped result, or ``error`` and ``code``."""

    id: int
    method: str
    params: dict[str, Any]
    trace: dict[str, str] | None = None
    """The caller's trace context, as `Call.trace` carries it: the parent of the
    worker's server span (None, one byte: the caller records no trace)."""


class _Outcome(msgspec.Struct, array_like=True):
    """What a request came to: its value, or an error message (and a JSON-RPC code)."""

    id: int
    value: Any = None
    error: str | None = None
    code: int | None = None


class Answer(_Outcome, tag="answer"):
    """The client's answer to an `Ask` (its result, or an error message and code)."""


class Shutdown(msgspec.Struct, tag="shutdown", array_like=True):
    """Finish: cancel running calls, run shutdown hooks, exit."""


ToWorker = (
    Call
    | Cancel
    | Ping
    | ListTools
    | GetServiceContext
    | SwitchContext
    | FeatureRequest
    | Answer
    | Shutdown
)


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """The handshake: the server is loaded and serving."""

    name: str
    version: str
    description: str
    tools: list[Tool]
    pid: int


class StartFailed(msgspec.Struct, tag="start_failed", array_like=True):
    """The server could not be loaded; the worker exits after sending this."""

    message: str


class Reply(msgspec.Struct, tag="reply", array_like=True):
    """The response to a `Call`, with its structured data sent once.

    ``rebuild`` says how the receiver restores the dropped ``structuredResult``:
    `KEEP` (it was sent), `FROM_CONTENT` (equal to ``structuredContent``) or
    `FROM_WRAPPED` (equal to ``structuredContent["result"]``); or, `VALUE`, that
    ``response`` is the value alone, the whole of a value-only call's success.
    """

    id: int
    response: msgspec.Raw
    """The `NativeMCPResponse`, still encoded: a typed call decodes only the part it
    needs, straight into its type (`reply_value`); `unpack_reply` decodes it all."""
    rebuild: int = 0


KEEP: Final = 0
"""`Reply.rebuild`: ``structuredResult`` was sent as it is (or there is none)."""
FROM_CONTENT: Final = 1
"""`Reply.rebuild`: ``structuredResult`` equals ``structuredContent``."""
FROM_WRAPPED: Final = 2
"""`Reply.rebuild`: ``structuredResult`` equals ``structuredContent["result"]``."""
VALUE: Final = 3
"""`Reply.rebuild`: ``response`` holds the ``structuredResult`` alone, of a success with
no content and nothing else (what a value-only call answers): a typed call decodes it
straight into its type, with no envelope around it to read through."""

_BARE_RESULT: Final = CallToolResult(content=[])
"""The result of a value-only success: the value travels beside it, in
``structuredResult``."""


def pack_reply(call_id: int, response: NativeMCPResponse[Any]) -> Reply:
    """A `Reply` carrying the structured payload once (see `Reply.rebuild`).

    Raises:
        TypeError: the response holds a value that msgpack cannot encode.
    """
    response.id = call_id
    value = response.structured_result
    result = response.result
    if (
        value is not None
        and result == _BARE_RESULT
        and response.error is None
        and response.jsonrpc == JSONRPC_VERSION
    ):
        return Reply(id=call_id, response=msgspec.Raw(_encoder.encode(value)), rebuild=VALUE)
    rebuild = KEEP
    if value is not None and result is not None and result.structured_content is not None:
        content = result.structured_content
        builtins = msgspec.to_builtins(value, str_keys=True)
        if builtins == content:
            rebuild = FROM_CONTENT
        elif len(content) == 1 and content.get("result", content) == builtins:
            rebuild = FROM_WRAPPED
        if rebuild != KEEP:
            response = msgspec.structs.replace(response, structured_result=None)
    return Reply(id=call_id, response=msgspec.Raw(_encoder.encode(response)), rebuild=rebuild)


def unpack_reply(reply: Reply) -> NativeMCPResponse[Any]:
    """The response as the tool returned it, ``structuredResult`` restored (as JSON data).

    Raises:
        ProtocolError: the response inside the reply does not decode.
    """
    try:
        if reply.rebuild == VALUE:
            value = msgspec.msgpack.decode(reply.response)
            return NativeMCPResponse(
                id=reply.id, result=CallToolResult(content=[]), structured_result=value
            )
        response = _response_decoder.decode(reply.response)
    except msgspec.MsgspecError as exc:
        raise ProtocolError(f"undecodable response in a worker reply: {exc}") from exc
    result = response.result
    if reply.rebuild == KEEP or result is None or result.structured_content is None:
        return response
    content = result.structured_content
    response.structured_result = content if reply.rebuild == FROM_CONTENT else content["result"]
    return response


def reply_value(
    reply: Reply, type_: Any, *, tool: str, output_schema: Mapping[str, Any] | None
) -> Any:
    """The reply's value as ``type_`` (not ``object``/``Any``), decoded in one pass.

    Raises:
        ToolError, UnwrapError, ProtocolError: as `nativemcp.protocol.unwrap`.
    """
    if reply.rebuild == VALUE:
        return unwrap(unpack_reply(reply), type_, tool=tool, output_schema=output_schema)
    return unwrap(
        bytes(reply.response),
        type_,
        tool=tool,
        output_schema=output_schema,
        format="msgpack",
    )


class ValueReader:
    """`reply_value` for one type, its decoder made once (one per typed tool method): a
    `VALUE` reply is decoded straight into the type, as a bare pipe would decode it."""

    __slots__ = ("_decoder", "output_schema", "type")

    def __init__(self, type_: Any, output_schema: Mapping[str, Any] | None = None) -> None:
        self.type = type_
        self.output_schema = output_schema
        self._decoder: msgspec.msgpack.Decoder[Any] | None
        try:
            self._decoder = msgspec.msgpack.Decoder(type_)
        except (TypeError, NameError):  # not a type msgspec decodes: `unwrap` says why
            self._decoder = None

    def read(self, reply: Reply, tool: str) -> Any:
        """The reply's value as the type (see `reply_value`).

        Raises:
            ToolError, UnwrapError, ProtocolError: as `nativemcp.protocol.unwrap`.
        """
        decoder = self._decoder
        if reply.rebuild == VALUE and decoder is not None:
            try:
                return decoder.decode(reply.response)
            except msgspec.MsgspecError:
                pass  # the general path converts what it can, or explains what failed
        return reply_value(reply, self.type, tool=tool, output_schema=self.output_schema)


class Result(_Outcome, tag="result"):
    """The answer to a non-call request; ``error`` set when it failed."""


class Ask(msgspec.Struct, tag="ask", array_like=True):
    """A running call's request to its client (sampling, elicitation), by MCP method;
    the parent sends back an `Answer` with the same ``id``."""

    id: int
    call: int
    method: str
    params: dict[str, Any]


class Notify(msgspec.Struct, tag="notify", array_like=True):
    """Progress or a log message of a running call."""

    id: int
    notification: Notification


class Log(msgspec.Struct, tag="log", array_like=True):
    """A log record from the worker process, for the parent's ``logging``."""

    name: str
    level: int
    message: str
    trace_id: str = ""
    """The trace (32 hex digits) of the span current where it was logged ("": none)."""
    span_id: str = ""
    """That span (16 hex digits; "": none)."""


class SpanEvent(msgspec.Struct, array_like=True):
    """An event of a recorded span: name, time (ns since the epoch) and attributes."""

    name: str
    time: int
    attributes: dict[str, Any] = {}


class SpanRecord(msgspec.Struct, array_like=True):
    """One finished span recorded in a worker, as the parent re-emits it: ids as bytes
    (16 for the trace, 8 for a span; ``parent_id`` empty for a root), kind and status
    code as OpenTelemetry's enum values, times in ns since the epoch."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes
    name: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any] = {}
    status: int = 0
    description: str | None = None
    events: list[SpanEvent] = []
    scope: str = ""
    scope_version: str | None = None
    flags: int = 1
    trace_state: str = ""


class Spans(msgspec.Struct, tag="spans", array_like=True):
    """Spans a worker finished, sent before the reply of the call they belong to, for the
    parent's tracer provider (the worker exports nothing itself)."""

    spans: list[SpanRecord]


FromWorker = Ready | StartFailed | Reply | Result | Notify | Ask | Log | Spans

_encoder: Final = msgspec.msgpack.Encoder()
_response_decoder: Final = msgspec.msgpack.Decoder(NativeMCPResponse[Any])


def encode_frame(message: ToWorker | FromWorker) -> bytes:
    """The frame bytes of ``message`` (length prefix included)."""
    payload = _encoder.encode(message)
    return _HEADER.pack(len(payload)) + payload
