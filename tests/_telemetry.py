"""What the telemetry tests record: OpenTelemetry configured as an app does (global SDK
providers, the SDK's in-memory span exporter and metric reader) for one test, then unset again
(OpenTelemetry allows one global provider per process; its own test utilities reset
the same two names)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence

import anyio.to_thread
from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
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


class _Notify(SpanProcessor):
    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded

    def on_end(self, span: ReadableSpan) -> None:
        with self.recorded.changed:
            self.recorded.changed.notify_all()


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
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(_Notify(recorded))
    if traces:
        trace.set_tracer_provider(provider)
    meter_provider = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(meter_provider)
    try:
        yield recorded
    finally:
        provider.shutdown()
        meter_provider.shutdown()
        _unset_global_providers()
