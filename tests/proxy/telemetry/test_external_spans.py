"""An external MCP server through the official SDK's client: the SDK's own client span
(which injects ``params._meta.traceparent``) nests under the pool's client span."""

from __future__ import annotations

import sys
from pathlib import Path

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
