"""What a first call's trace shows beside its client and server spans: the worker
setting up its recorder, a server's lazy setup (the content store opening its
storage), a wait for a worker that is restarting. Real worker processes; the later
calls' traces hold only their client and server spans."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from _telemetry import Recorded
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from nativemcp.proxy import RestartPolicy, ServerCrashed, WorkerPool
from nativemcp.workers.telemetry import TRACING_SETUP

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

STORE = "builtin_content-store"


def _traces(recorded: Recorded, name: str) -> list[list[ReadableSpan]]:
    """The spans of each trace whose client span is ``name``, in call order."""
    clients = sorted(
        (s for s in recorded.spans if s.name == name and s.kind == SpanKind.CLIENT),
        key=lambda s: s.start_time or 0,
    )
    return [
        [
            s
            for s in recorded.spans
            if s.context and c.context and s.context.trace_id == c.context.trace_id
        ]
        for c in clients
    ]


def _one(spans: Sequence[ReadableSpan], name: str, kind: SpanKind) -> ReadableSpan:
    found = [s for s in spans if s.name == name and s.kind == kind]
    assert len(found) == 1, [(s.name, s.kind) for s in spans]
    return found[0]


def _is_child(child: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        child.parent is not None
        and parent.context is not None
        and child.parent.span_id == parent.context.span_id
    )


async def test_a_first_call_shows_the_workers_tracing_setup_and_the_stores_opening(
    recorded: Recorded, tmp_path: Path
) -> None:
    async with WorkerPool(data_dir=tmp_path, builtins=["content-store"], in_process=()) as pool:
        for _ in range(2):
            response = await pool.call_tool(f"{STORE}__list_stores", {})
            assert not response.is_error
    first, second = _traces(recorded, "tools/call list_stores")
    client = _one(first, "tools/call list_stores", SpanKind.CLIENT)
    server = _one(first, "tools/call list_stores", SpanKind.SERVER)
    setup = _one(first, TRACING_SETUP, SpanKind.INTERNAL)
    opening = _one(first, "content-store open storage", SpanKind.INTERNAL)
    # The setup comes before the server span, beside it under the client span; the
    # storage opens inside the call, under its server span.
    assert _is_child(setup, client) and _is_child(server, client)
    # Named for its server as the worker's server span is.
    named = [dict(span.attributes or {})["nativemcp.server.name"] for span in (setup, server)]
    assert named == ["content-store", "content-store"]
    assert (setup.end_time or 0) <= (server.start_time or 0)
    assert _is_child(opening, server)
    assert (server.start_time or 0) <= (opening.start_time or 0)
    assert (opening.end_time or 0) <= (server.end_time or 0)
    # Set up once: the second call is its client and server spans alone.
    assert sorted((s.name, s.kind.name) for s in second) == [
        ("tools/call list_stores", "CLIENT"),
        ("tools/call list_stores", "SERVER"),
    ]


async def test_a_call_that_comes_while_its_worker_restarts_shows_the_wait(
    recorded: Recorded,
) -> None:
    policy = RestartPolicy(backoff=0.05)
    async with WorkerPool(["_traced_server:server"], timeout=20, restart=policy) as pool:
        traced = pool.server("traced")
        assert await traced.add(a=1, b=1) == 2
        with pytest.raises(ServerCrashed):
            await traced.crash()
        # The crash is seen before the crashed call fails: this call waits for the restart.
        assert await traced.add(a=2, b=2) == 4
    _, after = _traces(recorded, "tools/call add")
    client = _one(after, "tools/call add", SpanKind.CLIENT)
    wait = _one(after, "wait for traced", SpanKind.INTERNAL)
    server = _one(after, "tools/call add", SpanKind.SERVER)
    assert _is_child(wait, client) and _is_child(server, client)
    assert (wait.end_time or 0) <= (server.start_time or 0)
    assert dict(wait.attributes or {})["nativemcp.server.name"] == "traced"
    # A new worker process: it sets its recorder up again, in this call's trace.
    assert _is_child(_one(after, TRACING_SETUP, SpanKind.INTERNAL), client)
