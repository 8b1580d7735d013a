"""Resources and prompts are traced as tools are: a refusal fails both spans with its
JSON-RPC code, an in-process server's span is the client span's child, and ``serve``
forwards a client's read or prompt under the pool's client span, in the client's trace."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _mcp_http import serving
from _telemetry import Recorded
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from nativemcp.protocol import INVALID_PARAMS, FeatureError
from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

SERVER = "_traced_server:server"


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _parent_is(child: ReadableSpan, parent: ReadableSpan) -> bool:
    assert child.parent is not None and parent.context is not None
    return bool(child.parent.span_id == parent.context.span_id)


def _by_scope(recorded: Recorded, name: str) -> dict[tuple[str, SpanKind], ReadableSpan]:
    spans = [s for s in recorded.spans if s.name == name]
    found = {
        (s.instrumentation_scope.name if s.instrumentation_scope else "", s.kind): s for s in spans
    }
    assert len(found) == len(spans), [(s.name, s.kind) for s in spans]
    return found


async def test_a_refused_prompt_fails_the_client_and_the_worker_span_with_its_code(
    recorded: Recorded,
) -> None:
    async with WorkerPool([SERVER], timeout=20) as pool:
        with pytest.raises(FeatureError) as refused:
            await pool.server("traced").get_prompt("greet", {})
    assert refused.value.code == INVALID_PARAMS
    spans = _by_scope(recorded, "prompts/get greet")
    client, server = spans[("nativemcp", SpanKind.CLIENT)], spans[("nativemcp", SpanKind.SERVER)]
    assert _parent_is(server, client)
    for span in (client, server):
        assert _attributes(span)["error.type"] == str(INVALID_PARAMS)
        assert span.status.status_code == StatusCode.ERROR


async def test_an_in_process_servers_resource_read_is_the_client_spans_child(
    recorded: Recorded,
) -> None:
    from _traced_server import server

    async with WorkerPool([server], in_process=["traced"], timeout=20) as pool:
        await pool.server("traced").read_resource("note://b")
    spans = _by_scope(recorded, "resources/read")
    client, served = spans[("nativemcp", SpanKind.CLIENT)], spans[("nativemcp", SpanKind.SERVER)]
    assert _parent_is(served, client)
    assert _attributes(served)["mcp.resource.uri"] == "note://b"
    [point] = [
        p
        for p in recorded.points("mcp.server.operation.duration")
        if (p.attributes or {}).get("mcp.method.name") == "resources/read"
    ]
    assert point.count == 1 and "mcp.resource.uri" not in (point.attributes or {})


@pytest.mark.anyio_backends("asyncio")
async def test_serve_forwards_a_read_and_a_prompt_under_the_pools_client_span(
    recorded: Recorded,
) -> None:
    pool = WorkerPool([SERVER], timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp/traced") as client:
                with trace.get_tracer("tests.client").start_as_current_span("agent"):
                    await client.read_resource("note://c")
                    await client.get_prompt("greet", {"who": "you"})
    for name in ("resources/read", "prompts/get greet"):
        spans = _by_scope(recorded, name)
        sdk_server = spans[("mcp-python-sdk", SpanKind.SERVER)]
        ours = spans[("nativemcp", SpanKind.CLIENT)]
        worker = spans[("nativemcp", SpanKind.SERVER)]
        assert _parent_is(ours, sdk_server) and _parent_is(worker, ours), name
        assert _attributes(ours)["nativemcp.server.name"] == "traced"
    read = _by_scope(recorded, "resources/read")[("nativemcp", SpanKind.CLIENT)]
    assert _attributes(read)["mcp.resource.uri"] == "note://c"
