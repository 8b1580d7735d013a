"""Two MCP 2025-11-25 tasks of one session through `nativemcp serve` (over Streamable
HTTP, the official SDK's client): one task's waiting ``tasks/result`` holds up nothing
of the other's; the second task's request for input is seen (``input_required``) and
answered on its own ``tasks/result``."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _mcp_http import serving
from _task_client import cancel_task, create_task, get_task, poll_task, task_result
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


@asynccontextmanager
async def _served(transport: str) -> AsyncIterator[Any]:
    """What a client connects to: serve's URL (HTTP, in this process), or serve as a
    subprocess speaking stdio."""
    if transport == "stdio":
        command = ["-m", "nativemcp.proxy.cli", "serve", "conformance_server:server"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
        yield StdioServerParameters(command=sys.executable, args=command, env=env)
        return
    pool = WorkerPool(["conformance_server:server"], timeout=20)
    async with serving(http_app(pool)) as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_second_task_asks_for_input_while_the_firsts_result_is_awaited(
    transport: str,
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with _served(transport) as server:
        with anyio.fail_after(60):
            async with Client(server, mode="legacy", elicitation_callback=elicitation) as client:
                slow = await create_task(client, "slow_compute", {"seconds": 60})
                slow_id = slow["task"]["taskId"]
                ended: list[MCPError] = []
                async with anyio.create_task_group() as group:

                    async def wait_for_slow() -> None:
                        with pytest.raises(MCPError) as cancelled:
                            await task_result(client, slow_id)
                        ended.append(cancelled.value)

                    group.start_soon(wait_for_slow)
                    confirm = await create_task(client, "confirm_delete", {"filename": "a.txt"})
                    confirm_id = confirm["task"]["taskId"]
                    # The first task's tasks/result is waiting; the second shows its ask.
                    seen = await poll_task(client, confirm_id, until={"input_required"})
                    assert seen <= {"working"}
                    assert not asked
                    result = await task_result(client, confirm_id)
                    assert (await get_task(client, slow_id)).status == "working"
                    await cancel_task(client, slow_id)
    assert len(asked) == 1
    assert "Delete a.txt?" in asked[0].message
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert 'delete a.txt: action=accept, content={"confirm": true}' in text
    # The first task's waiting tasks/result ends with its cancellation.
    assert [error.code for error in ended] == [-32602]
    assert "cancelled" in ended[0].message
