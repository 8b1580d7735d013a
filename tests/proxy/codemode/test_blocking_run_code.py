"""Code mode without asyncio: `SyncWorkerPool.run_code`, and `WorkerPool.run_code` on
trio, both on the blocking sandbox (Monty driven step by step, each inner call on a
thread of the sandbox's own, or brought back to trio's event loop)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from _telemetry import Recorded
from opentelemetry.trace import SpanKind

from nativemcp.protocol import CodeError, CodeLimitExceeded, UnknownTool
from nativemcp.proxy import SyncWorkerPool, WorkerPool
from nativemcp.proxy.codemode import CodeLimits
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = pytest.mark.real_process

GATHER = (
    "import asyncio\n"
    "counts = await asyncio.gather(*[testing__crowd(seconds=0.3, index=i) for i in range(3)])\n"
    "seen = await testing__crowd_seen()\n"
    "seen['most']"
)
CAUGHT = (
    "try:\n"
    "    await testing__refuse(store_id='s1')\n"
    "except RuntimeError as exc:\n"
    "    print(exc)\n"
    "(await testing__listing(count=2))['total']"
)


@pytest.fixture(scope="module")
def sync_pool() -> Iterator[SyncWorkerPool]:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


def test_a_blocking_pool_runs_a_program_with_its_tools(sync_pool: SyncWorkerPool) -> None:
    result = sync_pool.run_code(CAUGHT)
    assert result.output == "testing__refuse: Store 's1' not found\n"
    assert result.value == 2
    assert [(c.name, c.ok) for c in result.calls] == [
        ("testing__refuse", False),
        ("testing__listing", True),
    ]


def test_a_blocking_pool_runs_gathered_calls_at_once(sync_pool: SyncWorkerPool) -> None:
    sync_pool.call_tool("testing__crowd_seen")
    assert sync_pool.run_code(GATHER).value == 3


def test_a_blocking_pool_keeps_the_profile_and_the_limits(sync_pool: SyncWorkerPool) -> None:
    profile = ToolProfile.of(["testing__echo"])
    assert sync_pool.run_code("await testing__echo(text='x')", profile=profile).value == "x"
    with pytest.raises(CodeError, match="NameError"):
        sync_pool.run_code("await testing__pid()", profile=profile)
    with pytest.raises(UnknownTool):
        sync_pool.describe_tools(["testing__pid"], profile=profile)
    assert "async def testing__echo(text:str)" in sync_pool.describe_tools(["testing__echo"])
    limits = CodeLimits(duration=1.0, calls=3)
    for code, limit in [
        ("while True:\n    pass", "duration"),
        ("for i in range(9):\n    await testing__echo(text='x')", "calls"),
        ("await testing__sleepy(key='blocking-slow', seconds=5)", "duration"),
    ]:
        with pytest.raises(CodeLimitExceeded) as caught:
            sync_pool.run_code(code, limits=limits)
        assert caught.value.limit == limit
    assert sync_pool.run_code("await testing__echo(text='on')").value == "on"


@pytest.fixture(scope="module")
async def trio_pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


@pytest.mark.anyio
@pytest.mark.anyio_backends("trio")
async def test_on_trio_a_program_runs_on_the_blocking_sandbox(trio_pool: WorkerPool) -> None:
    result = await trio_pool.run_code(CAUGHT)
    assert (result.output, result.value) == ("testing__refuse: Store 's1' not found\n", 2)
    await trio_pool.call_tool("testing__crowd_seen")
    assert (await trio_pool.run_code(GATHER)).value == 3
    with pytest.raises(CodeLimitExceeded) as caught:
        await trio_pool.run_code("while True:\n    pass", limits=CodeLimits(duration=1.0))
    assert caught.value.limit == "duration"


def test_a_blocking_pools_inner_calls_are_child_spans_of_its_run_code_span(
    recorded: Recorded,
) -> None:
    with SyncWorkerPool(["_servers:server"], timeout=10) as pool:
        pool.run_code(
            "import asyncio\nawait asyncio.gather(testing__echo(text='a'), testing__pid())"
        )
    (run,) = [s for s in recorded.spans if s.name == "run_code"]
    calls = [s for s in recorded.spans if s.kind == SpanKind.CLIENT]
    assert sorted(s.name for s in calls) == ["tools/call echo", "tools/call pid"]
    assert run.context is not None
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in calls)
