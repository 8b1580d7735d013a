"""Worker spans re-emitted through the app's tracer provider.

A worker records its spans and sends them to the parent (`Spans`, before the reply of
their call: why, in `nativemcp.workers.telemetry`). Here each becomes an SDK
``ReadableSpan`` with the app's resource, handed to the app's span processors, so it
reaches the app's exporters with the ids the worker gave it (the SDK's docs say users
should not construct ``ReadableSpan``; its constructor is public, and
``tests/proxy/telemetry`` fail if it changes).
"""

from __future__ import annotations

import functools
import logging
import types
from typing import Any, Final

from nativemcp.protocol.wire import SpanRecord, Spans
from nativemcp.workers.telemetry import SCOPE

from ._client import metric_attributes, record_duration
from ._state import TRACING

__all__ = ["emit_worker_spans"]

_logger: Final = logging.getLogger("nativemcp.telemetry")


def emit_worker_spans(message: Spans) -> None:
    """Hand a worker's finished spans to the app's span processors (dropped when the
    app's provider is not the SDK's). Never raises: it runs where the worker's frames
    are read, which a failing exporter or processor must not stop."""
    sink = TRACING.sink
    if sink is None:
        return
    try:
        _emit(message, sink)
    except Exception:  # the app's processors are not ours: log, and read on
        _logger.exception("could not re-emit %d spans of a worker", len(message.spans))


def _emit(message: Spans, sink: tuple[Any, Any]) -> None:
    sdk = _sdk()
    processor, resource = sink
    local = {record.span_id for record in message.spans}
    histogram = TRACING.server_duration
    for record in message.spans:
        processor.on_end(_readable(sdk, record, resource, local))
        if histogram is not None and record.kind == _SERVER_KIND and record.scope == SCOPE:
            # The worker's server span is its operation: its duration is the metric's
            # (its attributes hold its error.type, if any).
            seconds = (record.end - record.start) / 1e9
            record_duration(histogram, seconds, metric_attributes(record.attributes), None)


_SERVER_KIND: Final = 1
"""``SpanKind.SERVER.value`` (were it wrong, no worker call would record its
``mcp.server.operation.duration``, which the telemetry tests read)."""


@functools.cache
def _sdk() -> types.SimpleNamespace:
    """What `_readable` uses of OpenTelemetry, imported once (not on every span: the
    import statements alone were a fifth of a re-emitted span's cost)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    from opentelemetry.trace.span import TraceState

    return types.SimpleNamespace(
        Event=Event,
        ReadableSpan=ReadableSpan,
        SpanContext=SpanContext,
        kinds={kind.value: kind for kind in SpanKind},
        Status=Status,
        codes={code.value: code for code in StatusCode},
        TraceFlags=TraceFlags,
        TraceState=TraceState,
        scope=functools.cache(InstrumentationScope),
    )


def _readable(
    sdk: types.SimpleNamespace, record: SpanRecord, resource: Any, local: set[bytes]
) -> Any:
    trace_id = int.from_bytes(record.trace_id, "big")
    flags = sdk.TraceFlags(record.flags)
    state = sdk.TraceState.from_header([record.trace_state]) if record.trace_state else None
    parent = None
    if record.parent_id:
        # A parent outside this batch is in another process: the caller's client span.
        parent = sdk.SpanContext(
            trace_id,
            int.from_bytes(record.parent_id, "big"),
            is_remote=record.parent_id not in local,
            trace_flags=flags,
            trace_state=state,
        )
    return sdk.ReadableSpan(
        name=record.name,
        context=sdk.SpanContext(
            trace_id,
            int.from_bytes(record.span_id, "big"),
            is_remote=False,
            trace_flags=flags,
            trace_state=state,
        ),
        parent=parent,
        resource=resource,
        attributes=record.attributes,
        events=[sdk.Event(e.name, e.attributes, e.time) for e in record.events],
        kind=sdk.kinds[record.kind],
        status=sdk.Status(sdk.codes[record.status], record.description),
        start_time=record.start,
        end_time=record.end,
        instrumentation_scope=sdk.scope(record.scope, record.scope_version),
    )
