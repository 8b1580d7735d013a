"""Whether this process records nativemcp's spans: decided when a pool starts.

The hot path reads one attribute (`TRACING.tracer`); `refresh`, called as a pool starts,
does the looking. OpenTelemetry is configured by the app, so it is configured only if
the app imported ``opentelemetry.trace``: `refresh` never imports it, and reads the
global provider only when it is loaded. A provider that is still the API's proxy (none
set) or its no-op records nothing; set one before starting the pool.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["TRACING", "Tracing", "refresh"]

_SCOPE: Final = "nativemcp"
"""The instrumentation scope of the spans made here."""


class Tracing:
    """The process's tracing state: ``tracer`` (None: record nothing), and ``sink``,
    the app's span processor and resource (an SDK provider's), which worker spans are
    re-emitted through (None: workers are not asked to record)."""

    __slots__ = ("provider", "sink", "tracer")

    def __init__(self) -> None:
        self.provider: object | None = None
        self.tracer: Tracer | None = None
        self.sink: tuple[Any, Any] | None = None


TRACING: Final = Tracing()
"""The one `Tracing` of this process."""


def refresh() -> None:
    """Look at the app's tracer provider again (cheap when nothing changed)."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:  # never imported: nobody configured it
        TRACING.provider = TRACING.tracer = TRACING.sink = None
        return
    provider = api.get_tracer_provider()
    if provider is TRACING.provider:
        return
    TRACING.provider = provider
    TRACING.tracer = TRACING.sink = None
    if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
        return
    tracer = provider.get_tracer(_SCOPE, _version())
    if isinstance(tracer, api.NoOpTracer):  # e.g. OTEL_SDK_DISABLED
        return
    TRACING.tracer = tracer
    # An SDK tracer holds its provider's processors and resource (public attributes).
    processor = getattr(tracer, "span_processor", None)
    resource = getattr(tracer, "resource", None)
    if processor is not None and resource is not None:
        TRACING.sink = (processor, resource)


def _version() -> str | None:
    try:
        return importlib.metadata.version("nativemcp")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        return None
