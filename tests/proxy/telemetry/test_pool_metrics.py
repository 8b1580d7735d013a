"""nativemcp's own metrics: the requests in flight (up while a call runs, down when it
ends, however it ends) and the restarts of a crashed worker."""

from __future__ import annotations

import pytest
from _telemetry import Recorded

from nativemcp.proxy import RestartPolicy, ServerCrashed, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

SERVER = "_traced_server:server"

_CALLS = frozenset({("mcp.method.name", "tools/call"), ("nativemcp.server.name", "traced")})


async def test_a_call_counts_as_active_while_it_runs_and_not_after(recorded: Recorded) -> None:
    seen: list[float] = []

    def during(progress: float, total: float | None, message: str | None) -> None:
        seen.append(recorded.totals("nativemcp.client.active_requests")[_CALLS])

    async with WorkerPool([SERVER], timeout=20) as pool:
        traced = pool.server("traced")
        assert await traced.call_tool("step", {}, on_progress=during)
        assert (await traced.call_tool("refuse", {"store_id": "s"})).is_error
    assert seen == [1]
    assert recorded.totals("nativemcp.client.active_requests")[_CALLS] == 0


async def test_a_crashed_worker_counts_one_restart(recorded: Recorded) -> None:
    policy = RestartPolicy(backoff=0.01)
    async with WorkerPool([SERVER], timeout=20, restart=policy) as pool:
        traced = pool.server("traced")
        assert await traced.add(a=1, b=1) == 2
        assert recorded.totals("nativemcp.server.restarts") == {}
        with pytest.raises(ServerCrashed):
            await traced.crash()
        assert await traced.add(a=1, b=2) == 3  # the restarted worker's
        restarts = recorded.totals("nativemcp.server.restarts")
    assert restarts == {frozenset({("nativemcp.server.name", "traced")}): 1}
    # A crash is a failed call: it counts down too.
    assert recorded.totals("nativemcp.client.active_requests")[_CALLS] == 0
