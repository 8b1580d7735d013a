"""End to end, as a backend sees it: an app configured by the standard ``OTEL_*``
variables exports over OTLP/HTTP to a receiver that decodes with the official
``opentelemetry-proto``; one call through a worker and one through an external SDK
server make one trace, every span under the one before it, the worker's spans sent
by the app's exporter (no worker is configured)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _otlp_receiver import ReceivedSpan, receiving
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from nativemcp.workers.telemetry import TRACING_SETUP

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

TESTS = Path(__file__).parents[2]

_EXPECTED = 8
"""The spans of the agent's trace: agent; our client span, the worker's setting up of
its recorder (its first traced call), the worker's server span and the tool's own span
for the worker call; our client span, the SDK client's span and the
SDK server's span for the external one. (Starting the external server's connection
makes traces of its own: its discovery, listing and listening.)"""


def _traced(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The spans in the trace of the span named ``agent`` (none before it arrives)."""
    roots = {s.span.trace_id for s in spans if s.span.name == "agent"}
    return [s for s in spans if s.span.trace_id in roots]


def _one(spans: list[ReceivedSpan], name: str, kind: int, scope: str) -> ReceivedSpan:
    found = [s for s in spans if s.span.name == name and s.span.kind == kind and s.scope == scope]
    assert len(found) == 1, [(s.span.name, s.span.kind, s.scope) for s in spans]
    return found[0]


def _under(child: ReceivedSpan, parent: ReceivedSpan) -> bool:
    return child.span.parent_span_id == parent.span.span_id


async def test_one_call_through_a_worker_and_an_external_server_is_one_exported_trace(
    tmp_path: Path,
) -> None:
    with receiving() as (endpoint, received):
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "otlp-app",
            "PYTHONPATH": str(TESTS),
        }
        with anyio.fail_after(90):
            done = await anyio.run_process(
                [sys.executable, str(TESTS / "_otlp_app.py"), str(tmp_path)],
                env=env,
                check=False,
            )
            assert done.returncode == 0, done.stderr.decode()
            arrived = await anyio.to_thread.run_sync(
                lambda: received.wait_for(lambda spans: len(_traced(spans)) >= _EXPECTED, 10)
            )
    spans = _traced(received.spans)
    assert arrived, [s.span.name for s in received.spans]
    assert len(spans) == _EXPECTED, [s.span.name for s in spans]
    assert received.content_types == {"application/x-protobuf"}

    client, server, internal = Span.SPAN_KIND_CLIENT, Span.SPAN_KIND_SERVER, Span.SPAN_KIND_INTERNAL
    agent = _one(spans, "agent", internal, "tests.otlp_app")
    assert agent.span.parent_span_id == b""
    # The worker call: the worker's spans come through the app's own exporter.
    ours = _one(spans, "tools/call nested", client, "nativemcp")
    worker = _one(spans, "tools/call nested", server, "nativemcp")
    tool = _one(spans, "inner deep", internal, "tests.tool")
    assert _under(ours, agent) and _under(worker, ours) and _under(tool, worker)
    assert _under(_one(spans, TRACING_SETUP, internal, "nativemcp"), ours)
    assert {ours.service, worker.service, tool.service} == {"otlp-app"}
    # The external call: our client span, the SDK client's under it, the server's under that.
    ext = _one(spans, "tools/call echo", client, "nativemcp")
    sdk_client = _one(spans, "MCP send tools/call echo", client, "mcp-python-sdk")
    sdk_server = _one(spans, "tools/call echo", server, "mcp-python-sdk")
    assert _under(ext, agent) and _under(sdk_client, ext) and _under(sdk_server, sdk_client)
    assert sdk_server.service == "otlp-external" and sdk_client.service == "otlp-app"
    attributes = {a.key: a.value.string_value for a in worker.span.attributes}
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "nested"
    assert attributes["nativemcp.server.name"] == "traced"
