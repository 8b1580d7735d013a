"""OpenTelemetry spans per the MCP semantic conventions: what both ends of a call share,
and the worker's side (its server span, recorded here and sent to the parent).

Both ends name an operation alike (`operation`), and read an outcome alike
(`error_type`, `mark_error`, `mark_response`): a tool's ``isError`` result is
``error.type = "tool_error"``, a JSON-RPC error its code, a time limit ``timeout``, a
cancellation ``cancelled``, any other failure the exception's class name; each sets the
span's status to ERROR (the conventions' "Recording errors").

Why a worker records its spans and sends them to the parent (`WorkerTracing`), rather
than exporting them itself or only reporting timings: the app configures OpenTelemetry
once, in its own process (a ``TracerProvider`` and its exporters, or the ``OTEL_*``
variables); a worker process is never configured. Recorded here and re-emitted through
the app's provider (``nativemcp.proxy.telemetry``), the worker's spans reach the app's
exporter with their own ids, so a tool's own spans nest under the server span, and a
request the tool sends on carries a ``traceparent`` that names a span the backend does
receive; the worker's sampler follows the caller's sampled flag. Had the worker only
reported timings for the parent to build the server span, a tool's own spans would be
lost and its outgoing requests would name a parent no backend ever sees.

Nothing here imports OpenTelemetry until a call carries a trace context (`Call.trace`),
and a call without one costs one ``is None`` test.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from nativemcp.protocol import CallTimeout, FeatureError, NativeMCPResponse, ToolError
from nativemcp.protocol.wire import (
    Call,
    FeatureRequest,
    SpanEvent,
    SpanRecord,
    Spans,
    encode_frame,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "CANCELLED",
    "ERROR_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_PROMPT_NAME",
    "GEN_AI_TOOL_NAME",
    "JSONRPC_REQUEST_ID",
    "MCP_METHOD_NAME",
    "MCP_PROTOCOL_VERSION",
    "MCP_RESOURCE_URI",
    "MCP_SESSION_ID",
    "METRIC_ATTRIBUTES",
    "RPC_RESPONSE_STATUS_CODE",
    "SCOPE",
    "SERVER_NAME",
    "TIMEOUT",
    "TOOL_ERROR",
    "TRACING_SETUP",
    "WorkerTracing",
    "current_ids",
    "error_type",
    "feature_target",
    "mark_error",
    "mark_log_record",
    "mark_response",
    "operation",
    "server_span",
    "setup_span",
    "worker_tracing",
]

MCP_METHOD_NAME: Final = "mcp.method.name"
"""The MCP method of the operation (``tools/call``, ``resources/read``, ...)."""
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
"""The tool a ``tools/call`` runs."""
GEN_AI_PROMPT_NAME: Final = "gen_ai.prompt.name"
"""The prompt a ``prompts/get`` fills in."""
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""``execute_tool`` on a tool call (and only there)."""
MCP_RESOURCE_URI: Final = "mcp.resource.uri"
"""The resource a ``resources/read`` (or a subscription) names."""
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
"""The request's id on its wire, as a string."""
MCP_SESSION_ID: Final = "mcp.session.id"
"""The MCP session the request belongs to, where there is one."""
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
"""The MCP version the peers negotiated, where there is one."""
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"
"""The JSON-RPC error code of an error response, as a string."""
ERROR_TYPE: Final = "error.type"
"""The class of error an operation ended with (set if and only if it failed)."""
SERVER_NAME: Final = "nativemcp.server.name"
"""nativemcp's own attribute: the name of the pool's server that answered."""

TOOL_ERROR: Final = "tool_error"
"""``error.type`` of a tool result with ``isError`` (the conventions' value)."""
TIMEOUT: Final = "timeout"
"""``error.type`` of a call that ran past its time limit."""
CANCELLED: Final = "cancelled"
"""``error.type`` of a call its caller cancelled."""

TRACING_SETUP: Final = "nativemcp tracing setup"
"""The span of a worker's first traced request: the time it took to set up its
recorder (OpenTelemetry's SDK imported, a provider made), before the request's server
span starts; the child of the caller's span, a sibling of that server span."""
SCOPE: Final = "nativemcp"
"""The instrumentation scope of nativemcp's spans and metrics."""


def operation(
    method: str, target: str | None, server: str, *, uri: str | None = None
) -> tuple[str, dict[str, Any]]:
    """``(span name, attributes)`` of one MCP operation on ``server``: the name is
    ``"{method} {target}"`` (a tool or prompt name; a URI never, it is not low
    cardinality) or the bare method."""
    attributes: dict[str, Any] = {MCP_METHOD_NAME: method, SERVER_NAME: server}
    if target is not None:
        if method == "tools/call":
            attributes[GEN_AI_TOOL_NAME] = target
            attributes[GEN_AI_OPERATION_NAME] = "execute_tool"
        elif method == "prompts/get":
            attributes[GEN_AI_PROMPT_NAME] = target
    if uri is not None:
        attributes[MCP_RESOURCE_URI] = uri
    return (f"{method} {target}" if target is not None else method), attributes


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, asyncio.CancelledError):
        return True
    trio = sys.modules.get("trio")  # never imported here: only if the caller runs it
    return trio is not None and isinstance(exc, trio.Cancelled)


def error_type(exc: BaseException) -> str:
    """The ``error.type`` of an operation that raised ``exc``: ``timeout``,
    ``cancelled``, ``tool_error``, a JSON-RPC code, else the exception's class name
    (qualified by its module outside nativemcp and the standard exceptions)."""
    if isinstance(exc, CallTimeout | TimeoutError):
        return TIMEOUT
    if _is_cancellation(exc):
        return CANCELLED
    if isinstance(exc, ToolError):
        return TOOL_ERROR
    if isinstance(exc, FeatureError) and exc.code is not None:
        return str(exc.code)
    kind = type(exc)
    module = kind.__module__
    if module == "builtins" or module.startswith("nativemcp."):
        return kind.__qualname__
    return f"{module}.{kind.__qualname__}"


def mark_error(span: Span, kind: str, description: str | None = None) -> None:
    """Record on ``span`` that its operation failed: ``error.type`` and status ERROR."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute(ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, description))


def mark_response(span: Span, response: NativeMCPResponse[Any]) -> str | None:
    """Record a tool call's outcome on ``span``: a JSON-RPC error (its code and message)
    or an ``isError`` result (``tool_error``) fail it; a success leaves it unset.
    Returns the ``error.type`` it set (None: none)."""
    error = response.error
    if error is not None:
        span.set_attribute(RPC_RESPONSE_STATUS_CODE, str(error.code))
        mark_error(span, str(error.code), error.message)
        return str(error.code)
    if response.result is not None and response.result.is_error:
        mark_error(span, TOOL_ERROR)
        return TOOL_ERROR
    return None


METRIC_ATTRIBUTES: Final = frozenset(
    {
        MCP_METHOD_NAME,
        GEN_AI_TOOL_NAME,
        GEN_AI_PROMPT_NAME,
        GEN_AI_OPERATION_NAME,
        MCP_PROTOCOL_VERSION,
        RPC_RESPONSE_STATUS_CODE,
        ERROR_TYPE,
        SERVER_NAME,
    }
)
"""The span attributes the operation-duration metrics carry too (none of high
cardinality: no request id, URI or session)."""


@contextlib.contextmanager
def server_span(
    tracer: Tracer,
    tool: str | None,
    server: str,
    *,
    request_id: int,
    session_id: str | None = None,
    carrier: dict[str, str] | None = None,
    method: str = "tools/call",
    uri: str | None = None,
) -> Iterator[Span]:
    """The server span of one operation (a tool call by default; ``tool`` is then the
    tool, else the prompt of a ``prompts/get`` or None), current while it runs (so a
    tool's own spans nest under it): the child of the span in ``carrier`` (a worker's
    caller), or of the current span (an in-process server). An exception ends it as
    failed (a cancellation as ``cancelled``) and goes on; the caller records a tool
    call's response with `mark_response`."""
    from opentelemetry.trace import SpanKind

    context = None
    if carrier is not None:
        from opentelemetry import propagate

        context = propagate.extract(carrier)
    name, attributes = operation(method, tool, server, uri=uri)
    attributes[JSONRPC_REQUEST_ID] = str(request_id)
    if session_id is not None:
        attributes[MCP_SESSION_ID] = session_id
    with tracer.start_as_current_span(
        name,
        context=context,
        kind=SpanKind.SERVER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            mark_error(span, error_type(exc), _description(exc))
            raise


def feature_target(method: str, params: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(target, uri)`` of a resources/prompts/completion request, for `operation`:
    the prompt a ``prompts/get`` fills in, the resource a ``resources/read`` (or a
    subscription) names; None where there is none."""
    if method == "prompts/get":
        name = params.get("name")
        return (name if isinstance(name, str) else None), None
    if method.startswith("resources/") and isinstance(params.get("uri"), str):
        return None, params["uri"]
    return None, None


def _description(exc: BaseException) -> str | None:
    return None if _is_cancellation(exc) else str(exc) or type(exc).__name__


def current_ids() -> tuple[str, str]:
    """``(trace id, span id)`` in hex of the span current here, for a log record
    (``("", "")`` when none, or when OpenTelemetry was never imported: nothing is)."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return "", ""
    context = api.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def mark_log_record(record: logging.LogRecord, trace_id: str, span_id: str) -> None:
    """Give ``record`` the trace and span ids of its call, under the attribute names of
    OpenTelemetry's logging instrumentation (``%(otelTraceID)s``, ``%(otelSpanID)s``
    in a format)."""
    record.otelTraceID = trace_id
    record.otelSpanID = span_id


class WorkerTracing:
    """The worker's recorder: its own tracer provider (the default sampler follows the
    caller's sampled flag), whose finished spans wait here until `spans_frame` sends
    them to the parent. Made by `worker_tracing` on the first traced call."""

    def __init__(self) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

        finished: collections.deque[ReadableSpan] = collections.deque()

        class _Keep(SpanProcessor):
            def on_end(self, span: ReadableSpan) -> None:
                finished.append(span)  # deque.append: safe from any tool thread

        # Loaded now, not in the first request's server span (it reads the caller's
        # context with it): setting up is then one span of its own (`TRACING_SETUP`).
        from opentelemetry import propagate  # noqa: F401

        provider = TracerProvider()
        provider.add_span_processor(_Keep())
        self._finished = finished
        self.tracer: Tracer = provider.get_tracer(SCOPE)
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            # A tool's own spans (trace.get_tracer(...)) are recorded and sent too.
            trace.set_tracer_provider(provider)

    def record_setup(self, started: int, carrier: Mapping[str, str], server: str) -> None:
        """Record `TRACING_SETUP` of ``server``'s worker, from ``started`` (ns since the
        epoch) to now, as the child of the span in ``carrier``; it goes out with that
        request's spans."""
        from opentelemetry import propagate

        span = self.tracer.start_span(
            TRACING_SETUP,
            context=propagate.extract(carrier),
            attributes={SERVER_NAME: server},
            start_time=started,
        )
        span.end()

    def server_span(self, call: Call, server: str) -> contextlib.AbstractContextManager[Span]:
        """The server span of ``call`` (see `server_span`), child of the caller's span."""
        return server_span(
            self.tracer,
            call.tool,
            server,
            request_id=call.id,
            session_id=call.session_id,
            carrier=call.trace or {},
        )

    def run(
        self, call: Call, server: str, run: Callable[[], NativeMCPResponse[Any]]
    ) -> tuple[NativeMCPResponse[Any], bytes]:
        """Run a sync tool under its server span: ``(response, the spans frame)``, the
        frame to go out just before the reply, in the same write (one wake-up for the
        parent, not two)."""
        with self.server_span(call, server) as span:
            response = run()
            mark_response(span, response)
        return response, self.spans_frame()

    async def run_async(
        self,
        call: Call,
        server: str,
        run: Callable[[], Awaitable[NativeMCPResponse[Any]]],
        send: Callable[[bytes], object],
    ) -> tuple[NativeMCPResponse[Any], bytes]:
        """`run` for an async tool; a call that ends without a reply (cancelled) sends
        its spans to ``send`` on their own."""
        try:
            with self.server_span(call, server) as span:
                response = await run()
                mark_response(span, response)
        except BaseException:
            frame = self.spans_frame()
            if frame:
                send(frame)
            raise
        return response, self.spans_frame()

    async def run_feature(
        self,
        request: FeatureRequest,
        server: str,
        run: Callable[[], Awaitable[Any]],
        send: Callable[[bytes], object],
    ) -> Any:
        """Answer a resources/prompts/completion request under its server span (a
        refusal, raised, ends it with the error's code); the spans wait for the caller's
        `spans_frame`, but for a request that ends without an answer (cancelled): its
        spans go to ``send`` on their own."""
        tool, uri = feature_target(request.method, request.params)
        try:
            with server_span(
                self.tracer,
                tool,
                server,
                request_id=request.id,
                carrier=request.trace or {},
                method=request.method,
                uri=uri,
            ):
                return await run()
        except BaseException as exc:
            if _is_cancellation(exc):
                frame = self.spans_frame()
                if frame:
                    send(frame)
            raise

    def spans_frame(self) -> bytes:
        """The frame of every span finished since the last one (b"" when none)."""
        finished = self._finished
        records: list[SpanRecord] = []
        while finished:
            records.append(_record(finished.popleft()))
        if not records:
            return b""
        try:
            return encode_frame(Spans(spans=records))
        except (TypeError, ValueError, OverflowError) as exc:
            # A tool's span with a value msgpack has no form for (an int past 64 bits):
            # the spans are lost, never the reply they would have gone out with.
            logging.getLogger("nativemcp.worker").warning(
                "dropped %d spans that cannot be sent to the parent: %s", len(records), exc
            )
            return b""


def _record(span: ReadableSpan) -> SpanRecord:
    """``span`` as the wire carries it (links are not carried)."""
    context = span.context
    assert context is not None  # a finished SDK span always has one
    parent = span.parent
    scope = span.instrumentation_scope
    return SpanRecord(
        trace_id=context.trace_id.to_bytes(16, "big"),
        span_id=context.span_id.to_bytes(8, "big"),
        parent_id=parent.span_id.to_bytes(8, "big") if parent is not None else b"",
        name=span.name,
        kind=span.kind.value,
        start=span.start_time or 0,
        end=span.end_time or 0,
        attributes=dict(span.attributes or {}),
        status=span.status.status_code.value,
        description=span.status.description,
        events=[
            SpanEvent(
                name=event.name, time=event.timestamp, attributes=dict(event.attributes or {})
            )
            for event in span.events
        ],
        scope=scope.name if scope is not None else "",
        scope_version=scope.version if scope is not None else None,
        flags=int(context.trace_flags),
        trace_state=context.trace_state.to_header(),
    )


class _Recorder:
    """The process's one `WorkerTracing`, made on first use (None: no SDK here)."""

    made = False
    tracing: WorkerTracing | None = None


def worker_tracing(carrier: Mapping[str, str] | None, server: str) -> WorkerTracing | None:
    """This worker's recorder for a request whose trace context is ``carrier`` (None:
    the request is untraced, and so is None here; also None when the OpenTelemetry SDK
    is not installed). Made on the first traced request (to ``server``); that takes a
    while (the SDK is imported), which is a span of its own, `TRACING_SETUP`, in that
    request's trace."""
    if carrier is None:
        return None
    if not _Recorder.made:
        _Recorder.made = True
        started = time.time_ns()
        try:
            tracing = _Recorder.tracing = WorkerTracing()
        except ImportError:
            logging.getLogger("nativemcp.worker").warning(
                "a call carries a trace context but opentelemetry-sdk is not installed "
                "in the worker: its spans are not recorded (pip install 'nativemcp[otel]')"
            )
        else:
            tracing.record_setup(started, carrier, server)
    return _Recorder.tracing


@contextlib.contextmanager
def setup_span(name: str, **attributes: str | int) -> Iterator[None]:
    """A span around a server's lazy setup (its storage opened on first use, a browser
    launched), so that the first call's trace shows where its time went: the child of
    the span current here (a call's server span, when the setup runs inside a tool).
    Nothing is recorded outside a traced call, or in a worker that records no spans.

    Example (inside a tool, or code a tool runs)::

        with setup_span("content-store open storage"):
            storage = open_storage(folder)
    """
    tracing = _Recorder.tracing
    api = sys.modules.get("opentelemetry.trace")
    if tracing is None or api is None or not api.get_current_span().is_recording():
        yield
        return
    with tracing.tracer.start_as_current_span(name, attributes=attributes):
        yield
