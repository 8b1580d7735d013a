"""Whether this process records nativemcp's spans and metrics: decided when a pool starts.

The hot path reads one attribute (`TRACING.tracer`); `refresh`, called as a pool starts,
does the looking. OpenTelemetry is configured by the app, so it is configured only if
the app imported it: `refresh` never imports ``opentelemetry.trace`` or
``opentelemetry.metrics``, and reads a global provider only when its module is loaded.
A tracer provider that is still the API's proxy (none set) or its no-op records
nothing; a meter provider records when it is the SDK's. Set them up before starting
the pool.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import TYPE_CHECKING, Any, Final

from nativemcp.workers.telemetry import SCOPE

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, UpDownCounter
    from opentelemetry.trace import Tracer

__all__ = ["ACTIVE_REQUESTS", "DURATION_BUCKETS", "RESTARTS", "TRACING", "Tracing", "refresh"]


DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
"""The MCP conventions' advised bucket boundaries (seconds) for operation durations."""

ACTIVE_REQUESTS: Final = "nativemcp.client.active_requests"
"""nativemcp's own metric (an up-down counter): the requests the pool has sent and not
yet seen answered, by ``mcp.method.name`` and ``nativemcp.server.name``."""

RESTARTS: Final = "nativemcp.server.restarts"
"""nativemcp's own metric (a counter): restarts of a pool's server after its worker
process crashed or its external server stopped, by ``nativemcp.server.name``."""


class Tracing:
    """The process's telemetry state: ``tracer`` (None: record nothing; a no-op tracer
    when only metrics are configured), ``sink``, the app's span processor and resource
    (an SDK provider's), which worker spans are re-emitted through (None: workers are
    not asked to record), the two duration histograms, the requests in flight and the
    restarts (None: no metrics)."""

    __slots__ = (
        "active_requests",
        "client_duration",
        "providers",
        "restarts",
        "server_duration",
        "sink",
        "tracer",
    )

    def __init__(self) -> None:
        self.providers: tuple[object, object] | None = None
        self.tracer: Tracer | None = None
        self.sink: tuple[Any, Any] | None = None
        self.client_duration: Histogram | None = None
        self.server_duration: Histogram | None = None
        self.active_requests: UpDownCounter | None = None
        self.restarts: Counter | None = None


TRACING: Final = Tracing()
"""The one `Tracing` of this process."""


def refresh() -> None:
    """Look at the app's tracer and meter providers again (cheap when nothing changed)."""
    trace_api = sys.modules.get("opentelemetry.trace")
    metrics_api = sys.modules.get("opentelemetry.metrics")
    tracer_provider = trace_api.get_tracer_provider() if trace_api is not None else None
    meter_provider = metrics_api.get_meter_provider() if metrics_api is not None else None
    providers = (tracer_provider, meter_provider)
    if TRACING.providers is not None and all(
        a is b for a, b in zip(providers, TRACING.providers, strict=True)
    ):
        return
    TRACING.providers = providers
    TRACING.tracer = TRACING.sink = None
    TRACING.client_duration = TRACING.server_duration = None
    TRACING.active_requests = TRACING.restarts = None
    if trace_api is not None:
        _adopt_tracer(trace_api, tracer_provider)
    if meter_provider is not None:
        _adopt_meter(meter_provider)
    if TRACING.tracer is None and TRACING.client_duration is not None:
        # Metrics alone: the calls take the same path, with spans that record nothing.
        from opentelemetry.trace import NoOpTracer

        TRACING.tracer = NoOpTracer()


def _adopt_tracer(api: Any, provider: Any) -> None:
    if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
        return
    tracer = provider.get_tracer(SCOPE, _version())
    if isinstance(tracer, api.NoOpTracer):  # e.g. OTEL_SDK_DISABLED
        return
    TRACING.tracer = tracer
    # An SDK tracer holds its provider's processors and resource (public attributes).
    processor = getattr(tracer, "span_processor", None)
    resource = getattr(tracer, "resource", None)
    if processor is not None and resource is not None:
        TRACING.sink = (processor, resource)
        # Worker calls carry their trace context (`wire_context`): the propagator is
        # loaded now, as the pool starts, not inside the first call's client span (tens
        # of ms, which no span of that call would explain).
        import opentelemetry.propagate  # noqa: F401


def _adopt_meter(provider: Any) -> None:
    sdk = sys.modules.get("opentelemetry.sdk.metrics")
    # The API's own providers (the proxy before one is set, the no-op) record nothing;
    # only the SDK's is taken as configured.
    if sdk is None or not isinstance(provider, sdk.MeterProvider):
        return
    meter = provider.get_meter(SCOPE, _version())
    TRACING.client_duration = meter.create_histogram(
        "mcp.client.operation.duration",
        unit="s",
        description="The duration of the MCP request or notification as observed by the sender",
        explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
    )
    TRACING.server_duration = meter.create_histogram(
        "mcp.server.operation.duration",
        unit="s",
        description="MCP request or notification duration as observed by the receiver",
        explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
    )
    TRACING.active_requests = meter.create_up_down_counter(
        ACTIVE_REQUESTS,
        unit="{request}",
        description="MCP requests the pool has sent and not yet seen answered",
    )
    TRACING.restarts = meter.create_counter(
        RESTARTS,
        unit="{restart}",
        description="Restarts of a pool's server (a crashed worker, a stopped MCP server)",
    )


def _version() -> str | None:
    try:
        return importlib.metadata.version("nativemcp")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        return None
