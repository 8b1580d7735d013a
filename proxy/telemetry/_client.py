"""Client spans: one around each operation the pool sends to a server.

The span is current while the handle runs the operation, so what the handle does nests
under it: a worker call carries it (`wire_context`), an in-process server's span is its
child, and the official SDK's own client span for an external server (which injects
``params._meta.traceparent``) nests under it too.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeVar

from nativemcp.protocol import NativeMCPResponse
from nativemcp.workers.telemetry import (
    ERROR_TYPE,
    JSONRPC_REQUEST_ID,
    MCP_METHOD_NAME,
    MCP_SESSION_ID,
    METRIC_ATTRIBUTES,
    SERVER_NAME,
    error_type,
    mark_error,
    mark_response,
    operation,
    server_span,
)

from ._state import TRACING

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "current_call_span",
    "local_server_span",
    "log_ids",
    "metric_attributes",
    "record_duration",
    "record_restart",
    "traced",
    "traced_sync",
    "waiting_span",
    "wire_context",
]

T = TypeVar("T")

_CALL_SPAN: Final[contextvars.ContextVar[Span | None]] = contextvars.ContextVar(
    "nativemcp_call_span", default=None
)
"""The client span of the operation running in this context (a handle reads it)."""


class _Outcome:
    """The ``error.type`` an operation ended with (None: it succeeded)."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: str | None = None


@contextlib.contextmanager
def _client_span(
    tracer: Tracer,
    server: str,
    method: str,
    target: str | None,
    uri: str | None,
    session_id: str | None,
) -> Iterator[tuple[Span, _Outcome]]:
    from opentelemetry.trace import SpanKind

    name, attributes = operation(method, target, server, uri=uri)
    metric = metric_attributes(attributes)
    if session_id is not None:
        attributes[MCP_SESSION_ID] = session_id
    outcome = _Outcome()
    active = TRACING.active_requests
    in_flight = {MCP_METHOD_NAME: method, SERVER_NAME: server}
    if active is not None:
        active.add(1, in_flight)
    started = time.perf_counter()
    try:
        with tracer.start_as_current_span(
            name,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            token = _CALL_SPAN.set(span)
            try:
                yield span, outcome
            except BaseException as exc:
                outcome.error = error_type(exc)
                mark_error(span, outcome.error, _description(exc))
                raise
            finally:
                _CALL_SPAN.reset(token)
    finally:
        record_duration(
            TRACING.client_duration, time.perf_counter() - started, metric, outcome.error
        )
        if active is not None:
            active.add(-1, in_flight)


def record_restart(server: str) -> None:
    """Count a restart of ``server`` (nothing without metrics)."""
    restarts = TRACING.restarts
    if restarts is not None:
        restarts.add(1, {SERVER_NAME: server})


def metric_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a span that its duration metric carries (`METRIC_ATTRIBUTES`)."""
    return {key: value for key, value in attributes.items() if key in METRIC_ATTRIBUTES}


def record_duration(
    histogram: Histogram | None, seconds: float, attributes: dict[str, Any], error: str | None
) -> None:
    """Record one operation's duration (nothing without the histogram: no metrics)."""
    if histogram is None:
        return
    if error is not None:
        attributes = {**attributes, ERROR_TYPE: error}
    histogram.record(seconds, attributes)


@contextlib.contextmanager
def local_server_span(
    tracer: Tracer,
    tool: str | None,
    server: str,
    *,
    request_id: int,
    session_id: str | None,
    method: str = "tools/call",
    uri: str | None = None,
) -> Iterator[tuple[Span, _Outcome]]:
    """The server span of an operation of an in-process server (the current client
    span's child; a tool call by default, as in `server_span`), and its
    ``mcp.server.operation.duration``; the caller sets the outcome of a response
    (`mark_response`) on the `_Outcome` it gets."""
    metric = metric_attributes(operation(method, tool, server)[1])
    outcome = _Outcome()
    started = time.perf_counter()
    try:
        with server_span(
            tracer,
            tool,
            server,
            request_id=request_id,
            session_id=session_id,
            method=method,
            uri=uri,
        ) as span:
            try:
                yield span, outcome
            except BaseException as exc:
                outcome.error = error_type(exc)
                raise
    finally:
        record_duration(
            TRACING.server_duration, time.perf_counter() - started, metric, outcome.error
        )


def _description(exc: BaseException) -> str | None:
    kind = error_type(exc)
    return None if kind == "cancelled" else str(exc) or type(exc).__name__


async def traced(
    server: str,
    method: str,
    target: str | None,
    run: Callable[[], Awaitable[T]],
    *,
    uri: str | None = None,
    session_id: str | None = None,
) -> T:
    """``await run()`` under a client span for ``method`` (on ``target``, a tool or
    prompt name) to ``server``: a raised error, or a response that is a JSON-RPC error
    or an ``isError`` result, sets ``error.type`` and status ERROR. Without a tracer
    (`TRACING`), just ``await run()``."""
    tracer = TRACING.tracer
    if tracer is None:
        return await run()
    with _client_span(tracer, server, method, target, uri, session_id) as (span, outcome):
        result = await run()
        if isinstance(result, NativeMCPResponse):
            outcome.error = mark_response(span, result)
        return result


def traced_sync(
    server: str,
    method: str,
    target: str | None,
    run: Callable[[], T],
    *,
    session_id: str | None = None,
) -> T:
    """`traced` for a blocking operation (the `SyncWorkerPool`'s)."""
    tracer = TRACING.tracer
    if tracer is None:
        return run()
    with _client_span(tracer, server, method, target, None, session_id) as (span, outcome):
        result = run()
        if isinstance(result, NativeMCPResponse):
            outcome.error = mark_response(span, result)
        return result


def waiting_span(server: str) -> contextlib.AbstractContextManager[Any]:
    """A span over the time an operation waits for ``server`` to be live: its worker
    (re)started, or its MCP server (re)connected and its tools listed. The child of the
    operation's client span; nothing outside one."""
    tracer = TRACING.tracer
    if tracer is None or _CALL_SPAN.get() is None:
        return contextlib.nullcontext()
    return tracer.start_as_current_span(f"wait for {server}", attributes={SERVER_NAME: server})


def current_call_span() -> Span | None:
    """The client span of the operation running here (None: untraced), for a handle to
    add what only it knows (an external server's negotiated MCP version)."""
    return _CALL_SPAN.get()


def log_ids(span: Span) -> dict[str, str]:
    """The trace and span ids of ``span`` as a log record's extra attributes, named as
    OpenTelemetry's logging instrumentation names them (``%(otelTraceID)s``,
    ``%(otelSpanID)s`` in a format; see `mark_log_record`); none for a span that
    records nothing (metrics alone)."""
    context = span.get_span_context()
    if not context.is_valid:
        return {}
    return {
        "otelTraceID": format(context.trace_id, "032x"),
        "otelSpanID": format(context.span_id, "016x"),
    }


def wire_context(request_id: int) -> dict[str, str] | None:
    """The trace context a worker call carries (None: send none): the running
    operation's client span, which gets the call's ``jsonrpc.request.id``. None outside
    a client span, or when worker spans could not be re-emitted here."""
    span = _CALL_SPAN.get()
    if span is None or TRACING.sink is None:
        return None
    from opentelemetry import propagate

    span.set_attribute(JSONRPC_REQUEST_ID, str(request_id))
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier
