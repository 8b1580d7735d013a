"""The telemetry pieces without a worker process: the wire field, the worker's recorder
and the parent's re-emission, the outcome of each kind of failure, and nothing done
while OpenTelemetry is not set up."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _telemetry import Recorded, recording
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from nativemcp.protocol import (
    CallTimeout,
    FeatureError,
    NativeMCPResponse,
    ServerCrashed,
    ToolError,
    error_response,
    text_response,
    tool_error_response,
)
from nativemcp.protocol.wire import Call, FromWorker, Spans
from nativemcp.proxy.telemetry import TRACING, emit_worker_spans, refresh, traced, wire_context
from nativemcp.workers.telemetry import WorkerTracing, error_type

TESTS = Path(__file__).parents[2]


class _OlderReader(msgspec.Struct, tag="call", array_like=True):
    """A receiver that reads fewer of `Call`'s fields (as one that predates ``trace``)."""

    id: int
    tool: str


def test_a_call_frame_with_or_without_a_trace_context_reads_at_either_end() -> None:
    carrier = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    new = msgspec.msgpack.encode(Call(id=7, tool="add", arguments={"a": 1}, trace=carrier))
    # What a sender that predates ``trace`` wrote: every field up to ``value_only``.
    old = msgspec.msgpack.encode(["call", 7, "add", {"a": 1}, False, None, None, False])
    assert msgspec.msgpack.decode(new, type=Call).trace == carrier
    assert msgspec.msgpack.decode(old, type=Call).trace is None
    assert msgspec.msgpack.decode(new, type=_OlderReader).tool == "add"
    # Absent, the field costs one byte.
    plain = msgspec.msgpack.encode(Call(id=7, tool="add", arguments={"a": 1}))
    assert len(plain) == len(old) + 1


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (CallTimeout(server="s", tool="t", timeout=1.0), "timeout"),
        (TimeoutError(), "timeout"),
        (asyncio.CancelledError(), "cancelled"),
        (ToolError("no"), "tool_error"),
        (FeatureError("no such prompt", code=-32602), "-32602"),
        (ServerCrashed(server="s", exitcode=3, pid=1, tool="t"), "ServerCrashed"),
        (RuntimeError("x"), "RuntimeError"),
        (msgspec.ValidationError("x"), "msgspec.ValidationError"),
    ],
)
def test_each_kind_of_failure_has_its_error_type(error: BaseException, kind: str) -> None:
    assert error_type(error) == kind


def _worker_call(
    recorded: Recorded, response: NativeMCPResponse[Any]
) -> tuple[trace.Span, list[bytes]]:
    """One call through a worker's recorder in this process, under a client span."""
    refresh()
    tracing = WorkerTracing()
    with trace.get_tracer("tests").start_as_current_span("client", kind=SpanKind.CLIENT) as client:
        carrier: dict[str, str] = {}
        from opentelemetry import propagate

        propagate.inject(carrier)
        call = Call(id=4, tool="add", arguments={}, session_id="sess", trace=carrier)
        answered, frame = tracing.run(call, "srv", lambda: response)
    assert answered is response
    return client, [frame]


def test_a_workers_span_is_re_emitted_with_its_own_ids_under_the_callers_span(
    recorded: Recorded,
) -> None:
    client, sent = _worker_call(recorded, text_response("5"))
    assert len(sent) == 1
    message = msgspec.msgpack.decode(sent[0][4:], type=FromWorker)
    assert isinstance(message, Spans) and len(message.spans) == 1
    record = message.spans[0]
    assert not [s for s in recorded.spans if s.kind == SpanKind.SERVER]
    emit_worker_spans(message)
    server = recorded.named("tools/call add", SpanKind.SERVER)
    assert server.context is not None and server.parent is not None
    assert server.context.span_id == int.from_bytes(record.span_id, "big")
    assert server.context.trace_id == client.get_span_context().trace_id
    assert server.parent.span_id == client.get_span_context().span_id
    assert server.parent.is_remote
    assert server.status.status_code == StatusCode.UNSET
    attributes = dict(server.attributes or {})
    assert attributes["jsonrpc.request.id"] == "4"
    assert attributes["mcp.session.id"] == "sess"
    assert attributes["nativemcp.server.name"] == "srv"


@pytest.mark.parametrize(
    ("response", "kind", "code"),
    [
        (tool_error_response("bad"), "tool_error", None),
        (error_response("no such tool", code=-32602), "-32602", "-32602"),
    ],
)
def test_an_error_response_fails_the_workers_span(
    recorded: Recorded, response: NativeMCPResponse[Any], kind: str, code: str | None
) -> None:
    _, sent = _worker_call(recorded, response)
    emit_worker_spans(msgspec.msgpack.decode(sent[0][4:], type=Spans))
    server = recorded.named("tools/call add", SpanKind.SERVER)
    assert server.status.status_code == StatusCode.ERROR
    attributes = dict(server.attributes or {})
    assert attributes["error.type"] == kind
    assert attributes.get("rpc.response.status_code") == code


@pytest.mark.anyio
async def test_a_call_sends_a_trace_context_only_inside_a_client_span(recorded: Recorded) -> None:
    refresh()
    assert TRACING.tracer is not None
    assert wire_context(1) is None

    async def run() -> dict[str, str] | None:
        return wire_context(9)

    carrier = await traced("srv", "tools/call", "add", run)
    assert carrier is not None and carrier["traceparent"].startswith("00-")
    client = recorded.named("tools/call add", SpanKind.CLIENT)
    assert dict(client.attributes or {})["jsonrpc.request.id"] == "9"
    assert format(client.context.span_id, "016x") in carrier["traceparent"]


@pytest.mark.anyio
async def test_without_a_configured_provider_nothing_is_traced() -> None:
    refresh()
    assert TRACING.tracer is None and TRACING.sink is None

    async def run() -> dict[str, str] | None:
        return wire_context(1)

    assert await traced("srv", "tools/call", "add", run) is None


@pytest.mark.real_process
def test_a_pool_call_imports_no_opentelemetry_when_the_app_does_not() -> None:
    script = textwrap.dedent(
        """
        import sys
        import anyio
        from nativemcp.proxy import WorkerPool

        async def main():
            async with WorkerPool(["_traced_server:server"], timeout=20) as pool:
                assert await pool.server("traced").add(a=1, b=2) == 3
            loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
            assert not loaded, loaded

        if __name__ == "__main__":
            anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.anyio
async def test_metrics_alone_record_durations_without_spans_or_a_trace_context() -> None:
    with recording(traces=False) as recorded:
        refresh()
        assert TRACING.tracer is not None and TRACING.sink is None

        async def run() -> dict[str, str] | None:
            return wire_context(3)

        assert await traced("srv", "tools/call", "add", run) is None
        with pytest.raises(CallTimeout):
            await traced("srv", "tools/call", "slow", _time_out)
        points = recorded.points("mcp.client.operation.duration")
    assert not recorded.spans
    errors = {(p.attributes or {})["gen_ai.tool.name"]: p.attributes for p in points}
    assert "error.type" not in (errors["add"] or {})
    assert (errors["slow"] or {})["error.type"] == "timeout"
    refresh()
    assert TRACING.tracer is None and TRACING.client_duration is None


async def _time_out() -> None:
    raise CallTimeout(server="srv", tool="slow", timeout=1.0)


def test_a_span_the_wire_cannot_carry_is_dropped_and_the_reply_goes_out(
    recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    tracing = WorkerTracing()
    carrier = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    response = text_response("5")

    def run() -> NativeMCPResponse[Any]:
        trace.get_current_span().set_attribute("huge", 2**70)  # past msgpack's ints
        return response

    answered, frame = tracing.run(Call(id=1, tool="add", arguments={}, trace=carrier), "s", run)
    assert answered is response and frame == b""
    assert "dropped 1 spans" in caplog.text
    _, fine = tracing.run(
        Call(id=2, tool="add", arguments={}, trace=carrier), "s", lambda: response
    )
    assert fine  # the next call's spans go out again


class _Failing:
    def on_end(self, span: Any) -> None:
        raise RuntimeError("exporter broke")


def test_a_failing_span_processor_never_stops_the_reading_of_worker_frames(
    recorded: Recorded, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, sent = _worker_call(recorded, text_response("5"))
    assert TRACING.sink is not None
    monkeypatch.setattr(TRACING, "sink", (_Failing(), TRACING.sink[1]))
    emit_worker_spans(msgspec.msgpack.decode(sent[0][4:], type=Spans))
    assert "could not re-emit 1 spans of a worker" in caplog.text
    assert "exporter broke" in caplog.text
