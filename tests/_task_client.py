"""The requestor side of MCP 2025-11-25 tasks, on the official SDK's client.

The SDK's client has no public call for a task-augmented ``tools/call`` (it checks the
answer as a ``CallToolResult``): `create_task` sends that one request through its
dispatcher, as `nativemcp.proxy`'s own task client does; the rest are typed requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client


async def create_task(
    client: Client, name: str, arguments: dict[str, Any], ttl: int | None = 60_000
) -> dict[str, Any]:
    """``tools/call`` with ``task``: the wire answer (a ``CreateTaskResult``, or a
    ``CallToolResult`` from a server that ignores ``task``)."""
    task = {} if ttl is None else {"ttl": ttl}
    wire: dict[str, Any] = await client.session._dispatcher.send_raw_request(
        "tools/call", {"name": name, "arguments": arguments, "task": task}, {}
    )
    return wire


async def get_task(client: Client, task_id: str) -> types.GetTaskResult:
    """``tasks/get``."""
    params = types.GetTaskRequestParams(task_id=task_id)
    return await client.session.send_request(
        types.GetTaskRequest(params=params), types.GetTaskResult
    )


async def task_result(client: Client, task_id: str) -> types.CallToolResult:
    """``tasks/result``: waits for the task's end."""
    params = types.GetTaskPayloadRequestParams(task_id=task_id)
    return await client.session.send_request(
        types.GetTaskPayloadRequest(params=params), types.CallToolResult
    )


async def cancel_task(client: Client, task_id: str) -> types.CancelTaskResult:
    """``tasks/cancel``."""
    params = types.CancelTaskRequestParams(task_id=task_id)
    return await client.session.send_request(
        types.CancelTaskRequest(params=params), types.CancelTaskResult
    )


async def list_tasks(client: Client, cursor: str | None = None) -> list[types.Task]:
    """``tasks/list`` (one page)."""
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    listed = await client.session.send_request(
        types.ListTasksRequest(params=params), types.ListTasksResult
    )
    return listed.tasks


async def poll_task(client: Client, task_id: str, until: set[str]) -> set[str]:
    """Poll ``tasks/get`` (the spec's way: there is no event to wait on) until the task's
    status is one of ``until``; the statuses seen before."""
    seen: set[str] = set()
    while (status := (await get_task(client, task_id)).status) not in until:
        seen.add(status)
        await anyio.sleep(0.05)
    return seen


def forever(cancelled: list[anyio.Event]) -> Callable[[Any], Awaitable[types.CallToolResult]]:
    """A task's work that runs until cancelled; each run's end sets the next event of
    ``cancelled`` (for the receiver-side tests of either era's tasks)."""

    async def work(task: Any) -> types.CallToolResult:
        ended = anyio.Event()
        cancelled.append(ended)
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()
        raise AssertionError("unreachable")

    return work
