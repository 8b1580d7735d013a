"""An OTLP/HTTP trace receiver on loopback: what a collector (Jaeger, Tempo, the
OpenTelemetry Collector) is to an app, with each export decoded by the official
``opentelemetry-proto`` package, so the test reads what a backend would."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, with the service and instrumentation scope it came under."""

    service: str
    scope: str
    span: Span


class Received:
    """Every span exported so far, and a way to wait for more."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.content_types: set[str] = set()
        self.changed = threading.Condition()

    def add(self, request: ExportTraceServiceRequest, content_type: str) -> None:
        with self.changed:
            self.content_types.add(content_type)
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(ReceivedSpan(service, scope_spans.scope.name, span))
            self.changed.notify_all()

    def wait_for(self, ready: Callable[[list[ReceivedSpan]], bool], timeout: float) -> bool:
        """Whether ``ready`` held of the spans within ``timeout`` seconds (blocks)."""
        with self.changed:
            return self.changed.wait_for(lambda: ready(self.spans), timeout=timeout)


def _handler(received: Received) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            received.add(
                ExportTraceServiceRequest.FromString(body),
                self.headers.get("Content-Type", ""),
            )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test reads the spans, not an access log

    return Handler


@contextlib.contextmanager
def receiving() -> Iterator[tuple[str, Received]]:
    """The receiver's base URL (for ``OTEL_EXPORTER_OTLP_ENDPOINT``) and what it got."""
    received = Received()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
