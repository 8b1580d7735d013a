"""What the telemetry tests record: OpenTelemetry configured as an app does (global SDK
providers, the SDK's in-memory span exporter and metric reader) for one test, then unset again
(OpenTelemetry allows one global provider per process; its own test utilities reset
the same two names)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio.to_thread
from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


class Recorded:
    """What the app's provider exported (the SDK's in-memory exporter), and a way to
    wait, without sleeping, for a span that arrives after the call returned."""

    def __init__(self, exporter: InMemorySpanExporter, reader: InMemoryMetricReader) -> None:
        self.exporter = exporter
        self.reader = reader
        self.changed = threading.Condition()

    def points(self, metric: str) -> list[HistogramDataPoint]:
        """The histogram points of ``metric`` recorded so far (one per attribute set)."""
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for recorded in scope.metrics:
                    if recorded.name == metric:
                        found += [
                            p
                            for p in recorded.data.data_points
                            if isinstance(p, HistogramDataPoint)
                        ]
        return found

    def totals(self, metric: str) -> dict[frozenset[tuple[str, Any]], float]:
        """The value of counter ``metric`` now, by attribute set."""
        data = self.reader.get_metrics_data()
        found: dict[frozenset[tuple[str, Any]], float] = {}
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for recorded in scope.metrics:
                    if recorded.name == metric:
                        for point in recorded.data.data_points:
                            if isinstance(point, NumberDataPoint):
                                key = frozenset((point.attributes or {}).items())
                                found[key] = point.value
        return found

    @property
    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def named(self, name: str, kind: trace.SpanKind) -> ReadableSpan:
        found = [s for s in self.spans if s.name == name and s.kind == kind]
        assert len(found) == 1, [(s.name, s.kind) for s in self.spans]
        return found[0]

    async def wait_for(self, ready: Callable[[Sequence[ReadableSpan]], bool]) -> None:
        def wait() -> bool:
            with self.changed:
                return self.changed.wait_for(lambda: ready(self.spans), timeout=5)

        assert await anyio.to_thread.run_sync(wait), [s.name for s in self.spans]


class _ToCurrentTest(SpanProcessor):
    """The one tracer provider's processor: hands each span to the test recording now
    (none between tests), and wakes its waiters."""

    def __init__(self) -> None:
        self.current: Recorded | None = None

    def on_end(self, span: ReadableSpan) -> None:
        recorded = self.current
        if recorded is None:
            return
        recorded.exporter.export([span])
        with recorded.changed:
            recorded.changed.notify_all()


_TO_CURRENT_TEST = _ToCurrentTest()
_NO_OP = trace.NoOpTracer()


class _DuringATest(trace.Tracer):
    """A tracer of `_PROVIDER`: the SDK's while a test records, the no-op's between
    tests, so a library tracer that outlives the test (the official SDK's module-level
    one) writes no trace context into the requests of later tests, as if never set up."""

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer
        # What nativemcp reads of an SDK tracer, to re-emit worker spans.
        self.span_processor = tracer.span_processor
        self.resource = tracer.resource

    def _now(self) -> trace.Tracer:
        return self._tracer if _TO_CURRENT_TEST.current is not None else _NO_OP

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._now().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._now().start_as_current_span(*args, **kwargs)


class _Provider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _DuringATest(super().get_tracer(*args, **kwargs))


_PROVIDER = _Provider()
"""One tracer provider for every test, set as the global one during each: a library's
module-level tracer (the official SDK's) keeps the first provider it saw for good."""
_PROVIDER.add_span_processor(_TO_CURRENT_TEST)


def _unset_global_providers() -> None:
    # The names OpenTelemetry's test utilities reset; a test fails here if they change.
    assert isinstance(trace._TRACER_PROVIDER_SET_ONCE, Once)
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    assert isinstance(metrics_internal._METER_PROVIDER_SET_ONCE, Once)
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None


@contextlib.contextmanager
def recording(*, traces: bool = True) -> Iterator[Recorded]:
    """The app's OpenTelemetry, configured as an app does: global SDK providers (with
    ``traces=False`` the meter provider only)."""
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    recorded = Recorded(exporter, reader)
    _TO_CURRENT_TEST.current = recorded
    if traces:
        trace.set_tracer_provider(_PROVIDER)
    meter_provider = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(meter_provider)
    try:
        yield recorded
    finally:
        _TO_CURRENT_TEST.current = None
        meter_provider.shutdown()
        _unset_global_providers()
