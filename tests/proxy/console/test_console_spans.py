"""The console's span waterfall, in-process: `waterfall` lays out a trace's spans, and
``GET api/calls/<id>/spans`` gives a call's spans through a real worker (the console's
root span, the pool's client span, the worker's server span, the tool's own span)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Final

import anyio
import httpx2 as httpx
import pytest
from _telemetry import Recorded
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.console._app import create_console_app
from nativemcp.proxy.console._catalog import ConsoleCatalog
from nativemcp.proxy.console._spans import ConsoleSpans, waterfall
from nativemcp.workers.telemetry import TRACING_SETUP

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

TOKEN: Final = "t0ken-for-the-tests-0123456789"
BASE: Final = f"http://127.0.0.1/{TOKEN}/"


@pytest.fixture
def local_spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A tracer of a provider of the test's own (never the process's) and its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("tests"), exporter
    provider.shutdown()


def _made(local_spans: tuple[Any, InMemorySpanExporter]) -> list[ReadableSpan]:
    tracer, exporter = local_spans
    with tracer.start_as_current_span("root", start_time=1_000_000_000):
        with tracer.start_as_current_span(
            "second", kind=SpanKind.CLIENT, start_time=1_003_000_000
        ) as late:
            late.set_attribute("error.type", "tool_error")
            late.set_status(Status(StatusCode.ERROR, "no"))
        with tracer.start_as_current_span(
            "first", kind=SpanKind.CLIENT, start_time=1_001_000_000
        ) as early:
            early.set_attribute("nativemcp.server.name", "traced")
            with tracer.start_as_current_span(
                "inner", kind=SpanKind.SERVER, start_time=1_001_500_000
            ) as inner:
                inner.set_status(Status(StatusCode.ERROR, "it broke"))
    return list(exporter.get_finished_spans())


def test_the_waterfall_puts_each_span_under_its_parent_in_start_order(
    local_spans: tuple[Any, InMemorySpanExporter],
) -> None:
    rows = waterfall(_made(local_spans))
    assert [(r["name"], r["depth"]) for r in rows] == [
        ("root", 0),
        ("first", 1),
        ("inner", 2),
        ("second", 1),
    ]
    root, first, inner, second = rows
    assert root["startMs"] == 0 and first["startMs"] == 1.0 and inner["startMs"] == 1.5
    assert root["durationMs"] >= first["durationMs"] >= inner["durationMs"] >= 0
    assert first["kind"] == "client" and inner["kind"] == "server" and root["kind"] == "internal"
    assert first["server"] == "traced" and root["server"] is None
    # A failure shows its error.type, else its status's description; a success none.
    assert second["error"] == "tool_error" and inner["error"] == "it broke"
    assert root["error"] is None and first["error"] is None


def test_a_span_whose_parent_is_elsewhere_is_a_top_row(
    local_spans: tuple[Any, InMemorySpanExporter],
) -> None:
    spans = [s for s in _made(local_spans) if s.name != "root"]
    assert [(r["name"], r["depth"]) for r in waterfall(spans)] == [
        ("first", 0),
        ("inner", 1),
        ("second", 0),
    ]
    assert waterfall([]) == []


async def _spans_of(http: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> Any:
    started = await http.post("api/calls", json={"tool": tool, "arguments": arguments})
    assert started.status_code == 202, started.text
    call = started.json()["id"]
    with anyio.fail_after(20):
        events = await http.get(f"api/calls/{call}/events")  # ends with the result
    assert "event: result" in events.text
    return json.loads((await http.get(f"api/calls/{call}/spans")).text)


@pytest.mark.real_process
async def test_a_calls_spans_are_its_waterfall_from_the_console_to_the_tool(
    recorded: Recorded,
) -> None:
    spans = ConsoleSpans.install()  # joins the provider the app (here, the test) set
    assert spans is not None
    async with (
        WorkerPool(["_traced_server:server"], timeout=20) as pool,
        anyio.create_task_group() as calls,
    ):
        app = create_console_app(await ConsoleCatalog.load(pool), TOKEN, calls, spans=spans)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            nested = await _spans_of(http, "traced__nested", {"label": "x"})
            refused = await _spans_of(http, "traced__refuse", {"store_id": "s"})
        calls.cancel_scope.cancel()
    assert nested["recording"] is True
    # The worker's first traced call: it set up its recorder first (a span of its own).
    assert [(r["name"], r["kind"], r["depth"]) for r in nested["spans"]] == [
        ("console call traced__nested", "internal", 0),
        ("tools/call nested", "client", 1),
        (TRACING_SETUP, "internal", 2),
        ("tools/call nested", "server", 2),
        ("inner x", "internal", 3),
    ]
    # Each call's own trace only: the second call's waterfall holds none of the first's.
    assert [(r["name"], r["error"]) for r in refused["spans"]] == [
        ("console call traced__refuse", None),
        ("tools/call refuse", "tool_error"),
        ("tools/call refuse", "tool_error"),
    ]


@pytest.mark.real_process
async def test_without_recorded_spans_the_page_is_told_so() -> None:
    async with (
        WorkerPool(["_traced_server:server"], timeout=20) as pool,
        anyio.create_task_group() as calls,
    ):
        app = create_console_app(await ConsoleCatalog.load(pool), TOKEN, calls)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            answer = await _spans_of(http, "traced__add", {"a": 1, "b": 2})
            missing = await http.get("api/calls/99/spans")
        calls.cancel_scope.cancel()
    assert answer == {"recording": False, "spans": []}
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("disabled", "printed"), [("false", "recording TracerProvider"), ("true", "not recording")]
)
def test_the_console_sets_up_a_provider_unless_the_sdk_is_disabled(
    disabled: str, printed: str
) -> None:
    script = (
        "from opentelemetry import trace\n"
        "from nativemcp.proxy.console._spans import ConsoleSpans\n"
        "spans = ConsoleSpans.install()\n"
        "provider = type(trace.get_tracer_provider()).__name__\n"
        "print('recording' if spans else 'not recording', provider)\n"
    )
    env = {**os.environ, "OTEL_SDK_DISABLED": disabled}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith(printed), done.stdout
