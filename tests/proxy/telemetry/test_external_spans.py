"""An external MCP server through the official SDK's client: the SDK's own client span
(which injects ``params._meta.traceparent``) nests under the pool's client span."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _telemetry import Recorded
from opentelemetry.trace import SpanKind, StatusCode

from nativemcp.proxy import WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

TESTS = Path(__file__).parents[2]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_sdks_client_span_nests_under_the_pools_client_span(
    recorded: Recorded, tmp_path: Path
) -> None:
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    async with WorkerPool(mcp_servers={"ext": entry}, timeout=30) as pool:
        ext = pool.server("ext")
        response = await ext.call_tool("echo", {"text": "hi"})
        failed = await ext.call_tool("fail", {"message": "no"})
    assert not response.is_error and failed.is_error
    ours = [s for s in recorded.spans if s.name == "tools/call echo"]
    sdk = [s for s in recorded.spans if s.name == "MCP send tools/call echo"]
    assert len(ours) == 1 and len(sdk) == 1
    assert ours[0].kind == sdk[0].kind == SpanKind.CLIENT
    assert ours[0].context is not None and sdk[0].parent is not None
    assert sdk[0].parent.span_id == ours[0].context.span_id
    assert (ours[0].attributes or {})["nativemcp.server.name"] == "ext"
    # The version the SDK client negotiated with the server (a dated MCP revision).
    version = str((ours[0].attributes or {})["mcp.protocol.version"])
    assert len(version) == 10 and version[:2] == "20", version
    fail = recorded.named("tools/call fail", SpanKind.CLIENT)
    assert (fail.attributes or {})["error.type"] == "tool_error"
    assert fail.status.status_code == StatusCode.ERROR


async def _chatty_log(tmp_path: Path, caplog: pytest.LogCaptureFixture, *, beside: bool) -> Any:
    """The log record of an external server's one log message, sent during a call
    (``beside``: while another call is in flight too)."""
    caplog.set_level(logging.INFO, logger="nativemcp.external.ext")
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    async with WorkerPool(mcp_servers={"ext": entry}, timeout=30) as pool:
        ext = pool.server("ext")
        async with anyio.create_task_group() as tg:
            if beside:
                # In flight from its first step, which runs before chatty's first await ends.
                tg.start_soon(ext.call_tool, "hang", {"key": "k"})
            assert not (await ext.call_tool("chatty", {"steps": 1})).is_error
            tg.cancel_scope.cancel()
    [record] = [r for r in caplog.records if r.getMessage() == "did step 1"]
    return record


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_external_servers_log_message_carries_the_ids_of_the_call_it_came_in(
    recorded: Recorded, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=False)
    call = recorded.named("tools/call chatty", SpanKind.CLIENT)
    assert call.context is not None
    assert getattr(record, "otelTraceID", None) == format(call.context.trace_id, "032x")
    assert getattr(record, "otelSpanID", None) == format(call.context.span_id, "016x")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_untraced_external_log_message_carries_no_ids(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=False)
    assert not hasattr(record, "otelTraceID")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_log_message_while_two_calls_are_in_flight_is_given_to_neither(
    recorded: Recorded, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = await _chatty_log(tmp_path, caplog, beside=True)
    assert recorded.named("tools/call chatty", SpanKind.CLIENT)
    assert not hasattr(record, "otelTraceID")
