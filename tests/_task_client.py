"""The requestor side of MCP 2025-11-25 tasks, on the official SDK's client, and of the
2026-07-28 Tasks extension in raw requests (`Rpc`: the SDK does not speak it yet).

The SDK's client has no public call for a task-augmented ``tools/call`` (it checks the
answer as a ``CallToolResult``): `create_task` sends that one request raw, through
`nativemcp.proxy`'s seam to the SDK's privates, as its own task client does; the
rest are typed requests.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client

from nativemcp.protocol import TASKS_EXTENSION
from nativemcp.proxy._sdk_seam import send_raw_request

VERSION = "2026-07-28"
"""The protocol version of `Rpc`'s requests."""


async def create_task(
    client: Client, name: str, arguments: dict[str, Any], ttl: int | None = 60_000
) -> dict[str, Any]:
    """``tools/call`` with ``task``: the wire answer (a ``CreateTaskResult``, or a
    ``CallToolResult`` from a server that ignores ``task``)."""
    task = {} if ttl is None else {"ttl": ttl}
    return await send_raw_request(
        client, "tools/call", {"name": name, "arguments": arguments, "task": task}
    )


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


class Rpc:
    """Raw 2026-07-28 requests to one server, as one user, declaring the extension or not."""

    def __init__(
        self, http: httpx2.AsyncClient, url: str, elicitation: dict[str, Any] | None = None
    ) -> None:
        self.http = http
        self.url = url
        self.elicitation = elicitation or {}
        """The client's ``elicitation`` capability (``{}``: form mode)."""

    async def __call__(
        self,
        method: str,
        params: dict[str, Any],
        *,
        declare: bool = True,
        user: str = "",
        name: str | None = None,
    ) -> dict[str, Any]:
        """The JSON-RPC answer (its ``result`` or ``error`` object, as a dict)."""
        extensions: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}} if declare else {}
        meta = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": self.elicitation,
                **extensions,
            },
            "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": VERSION,
            "mcp-method": method,
        }
        name = name or params.get("name", params.get("taskId"))
        if name is not None:
            headers["mcp-name"] = name  # the extension routes tasks/* by the task id
        if user:
            headers["x-user"] = user
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        response = await self.http.post(self.url, json=body, headers=headers)
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message: dict[str, Any] = json.loads(data[-1] if data else response.text)
        return message

    async def result(self, method: str, params: dict[str, Any], **options: Any) -> Any:
        message = await self(method, params, **options)
        assert "result" in message, message
        return message["result"]

    async def until(self, task_id: str, status: str, **options: Any) -> dict[str, Any]:
        """``tasks/get`` until the task is ``status`` (polled, as clients do)."""
        while True:
            task: dict[str, Any] = await self.result("tasks/get", {"taskId": task_id}, **options)
            if task["status"] == status:
                return task
            assert task["status"] in ("working", "input_required"), task  # ended otherwise
            await anyio.sleep(0.02)
