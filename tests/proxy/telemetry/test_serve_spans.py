"""``serve`` continues an MCP client's trace: the official SDK's server span (from the
request's ``params._meta.traceparent``) is current while the pool calls the tool, so the
pool's client span and the worker's server span nest under it, in the client's trace."""

from __future__ import annotations

import anyio
import pytest
from _mcp_http import serving
from _telemetry import Recorded
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


def _parent_is(child: ReadableSpan, parent: ReadableSpan) -> bool:
    assert child.parent is not None and parent.context is not None
    return bool(child.parent.span_id == parent.context.span_id)


async def test_a_call_through_serve_is_one_trace_from_the_client_to_the_worker(
    recorded: Recorded,
) -> None:
    pool = WorkerPool(["_traced_server:server"], timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp/traced") as client:
                with trace.get_tracer("tests.client").start_as_current_span("agent"):
                    result = await client.call_tool("add", {"a": 2, "b": 2})
    assert not result.is_error
    agent = recorded.named("agent", SpanKind.INTERNAL)
    sdk_client = recorded.named("MCP send tools/call add", SpanKind.CLIENT)
    served = [s for s in recorded.spans if s.name == "tools/call add"]
    by_scope = {
        (s.instrumentation_scope.name if s.instrumentation_scope else "", s.kind): s for s in served
    }
    sdk_server = by_scope[("mcp-python-sdk", SpanKind.SERVER)]
    pool_client = by_scope[("nativemcp", SpanKind.CLIENT)]
    worker = by_scope[("nativemcp", SpanKind.SERVER)]
    assert len(served) == 3
    assert _parent_is(sdk_client, agent)
    assert _parent_is(sdk_server, sdk_client)
    assert _parent_is(pool_client, sdk_server)
    assert _parent_is(worker, pool_client)
    assert len({s.context.trace_id for s in (agent, worker) if s.context is not None}) == 1
