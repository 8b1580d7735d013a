"""An app that sets up OpenTelemetry the usual way, from the standard ``OTEL_*``
variables alone (the OTLP/HTTP exporter reads ``OTEL_EXPORTER_OTLP_ENDPOINT``, the
resource ``OTEL_SERVICE_NAME``), and makes one traced call to a worker and one to an
external official-SDK server; the end-to-end telemetry test runs it in a process of its
own (one global provider per process) and reads what reaches its OTLP receiver.

``python tests/_otlp_app.py MARKER_DIR`` runs the app; ``--external MARKER_DIR`` is the
external server, set up for OTLP alike (its entry passes the variables on: an SDK stdio
client gives a server only a few of its own).
"""

from __future__ import annotations

import sys

import anyio
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from nativemcp.proxy import WorkerPool

PASSED_ON = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL")
"""The variables the external server's entry passes on (its service name is its own)."""


def configure(processor: type[SpanProcessor]) -> TracerProvider:
    """The global tracer provider, exporting over OTLP/HTTP as the environment says."""
    provider = TracerProvider()
    provider.add_span_processor(processor(OTLPSpanExporter()))  # type: ignore[call-arg]
    trace.set_tracer_provider(provider)
    return provider


async def run_app(marker_dir: str) -> None:
    external = {
        "command": sys.executable,
        "args": [__file__, "--external", marker_dir],
        "env": {
            **{name: f"${{{name}}}" for name in PASSED_ON},
            "OTEL_SERVICE_NAME": "otlp-external",
        },
    }
    tracer = trace.get_tracer("tests.otlp_app")
    async with WorkerPool(["_traced_server:server"], mcp_servers={"ext": external}) as pool:
        with tracer.start_as_current_span("agent"):
            assert await pool.server("traced").nested(label="deep") == "deep"
            echoed = await pool.server("ext").call_tool("echo", {"text": "hi"})
            assert not echoed.is_error


if __name__ == "__main__":
    if sys.argv[1] == "--external":
        # Each span exported as it ends: the pool may stop this process before a batch.
        configure(SimpleSpanProcessor)
        from _external_server import make_server

        make_server(sys.argv[2]).run("stdio")
    else:
        provider = configure(BatchSpanProcessor)
        anyio.run(run_app, sys.argv[1])
        provider.shutdown()  # flushes the batch (what atexit would do)
