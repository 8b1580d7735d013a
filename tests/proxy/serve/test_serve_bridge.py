"""`McpBridge` as a context manager: what it starts, it stops, also when starting
fails half-way (an in-process server, no sockets)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.serve import McpBridge

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


class _Refuses(anyio.AsyncContextManagerMixin):
    """Task runner that fails to start."""

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[_Refuses]:
        raise OSError("no room for tasks")
        yield self  # pragma: no cover


async def test_a_bridge_that_fails_to_start_its_tasks_stops_its_suspended_calls() -> None:
    async with WorkerPool(["_serve_servers:server"], in_process=["shapes"]) as pool:
        bridge = McpBridge(pool)
        with anyio.fail_after(10):
            async with bridge:
                assert bridge.suspended.running and bridge.tasks.running
            assert not bridge.suspended.running and not bridge.tasks.running
            bridge = McpBridge(pool)
            bridge.tasks = _Refuses()
            # Raised inside the suspended calls' task group, which wraps it.
            with pytest.RaisesGroup(pytest.RaisesExc(OSError, match="no room for tasks")):
                async with bridge:
                    pass
            assert not bridge.suspended.running
