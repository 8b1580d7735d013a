"""The spans of each console call, for the page's waterfall.

The console is an app of its own: as an app sets up OpenTelemetry, `ConsoleSpans.install`
(before the pool starts) sets up a tracer provider, or joins the one already set, with a
processor that keeps the spans of the traces the console started. Each call runs under
a root span of its own (`ConsoleSpans.root`), so the pool's client span, the worker's
server span (re-emitted here), a tool's own spans and the official SDK's client span
for an external server all land in that call's trace; `ConsoleSpans.waterfall` lays
them out. Without the OpenTelemetry SDK (the ``otel`` extra) there is nothing to keep.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Tracer

__all__ = ["KEPT_TRACES", "ROOT_SCOPE", "ConsoleSpans", "waterfall"]

KEPT_TRACES: Final = 500
"""Traces kept (one per call, as many as the console's history); older ones go."""
ROOT_SCOPE: Final = "nativemcp.console"
"""The instrumentation scope of a call's root span."""
_ERROR_TYPE: Final = "error.type"
_SERVER_NAME: Final = "nativemcp.server.name"

_logger = logging.getLogger("nativemcp.console")


class ConsoleSpans:
    """The spans of the console's calls, kept by trace (see the module's docstring)."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        self._traces: collections.OrderedDict[int, list[ReadableSpan]] = collections.OrderedDict()

    @classmethod
    def install(cls) -> ConsoleSpans | None:
        """Record the spans of the calls to come: a tracer provider of the SDK's, set
        as the process's (or the one already set, when it is the SDK's). None when the
        SDK is not installed, or another kind of provider is set."""
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        except ImportError:
            return None
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            provider = current
        elif isinstance(current, trace.ProxyTracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        else:
            _logger.warning("the tracer provider set is not the SDK's: no span waterfall")
            return None
        tracer = provider.get_tracer(ROOT_SCOPE)
        if isinstance(tracer, trace.NoOpTracer):  # OTEL_SDK_DISABLED: nothing recorded
            return None
        spans = cls(tracer)

        class _Keep(SpanProcessor):
            def on_end(self, span: ReadableSpan) -> None:
                spans.keep(span)

        provider.add_span_processor(_Keep())
        return spans

    @contextlib.contextmanager
    def root(self, tool: str) -> Iterator[int]:
        """The root span of one call of ``tool``, current inside; yields its trace id.
        A failure that escapes fails it."""
        from opentelemetry.trace import SpanKind

        with self._tracer.start_as_current_span(
            f"console call {tool}", kind=SpanKind.INTERNAL, attributes={"gen_ai.tool.name": tool}
        ) as span:
            trace_id = span.get_span_context().trace_id
            self._traces[trace_id] = []
            while len(self._traces) > KEPT_TRACES:
                self._traces.popitem(last=False)
            yield trace_id

    def keep(self, span: ReadableSpan) -> None:
        """Keep ``span`` if it belongs to the trace of a console call (any thread)."""
        context = span.context
        kept = self._traces.get(context.trace_id) if context is not None else None
        if kept is not None:
            kept.append(span)

    def waterfall(self, trace_id: int) -> list[dict[str, Any]]:
        """The spans of trace ``trace_id`` as the page draws them (see `waterfall`)."""
        return waterfall(self._traces.get(trace_id, []))


def waterfall(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    """``spans`` as rows of a waterfall: each under its parent (depth first, siblings by
    start time), with its start and duration in ms from the earliest start, and its
    error (``error.type``, else the status description) when it failed. A span whose
    parent is not among them (the trace's root, or one whose parent is in another
    process) is a top row."""
    from opentelemetry.trace import StatusCode

    if not spans:
        return []
    ids = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    origin = min(span.start_time or 0 for span in spans)
    rows: list[dict[str, Any]] = []

    def visit(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            start, end = span.start_time or 0, span.end_time or span.start_time or 0
            attributes = span.attributes or {}
            failed = span.status.status_code == StatusCode.ERROR
            error = attributes.get(_ERROR_TYPE) or span.status.description or "error"
            scope = span.instrumentation_scope
            rows.append(
                {
                    "name": span.name,
                    "kind": span.kind.name.lower(),
                    "depth": depth,
                    "startMs": round((start - origin) / 1e6, 3),
                    "durationMs": round((end - start) / 1e6, 3),
                    "error": str(error) if failed else None,
                    "server": attributes.get(_SERVER_NAME),
                    "scope": scope.name if scope is not None else "",
                }
            )
            assert span.context is not None
            visit(span.context.span_id, depth + 1)

    visit(None, 0)
    return rows
