"""`nativemcp serve` runs task-augmented tool calls (MCP 2025-11-25 tasks, receiver side).

npm's ``@modelcontextprotocol/server-everything`` (from `.ci/node`) behind
``nativemcp serve``, and the official SDK client in front, over stdio and Streamable
HTTP: its ``simulate-research-query`` (``taskSupport: "required"`` at the source) is
served with ``taskSupport: "optional"``; a ``tools/call`` with ``task`` creates a task
the client polls (``tasks/get``), waits on (``tasks/result``), lists and cancels; a
tool without task support refuses a task with -32601, as the specification asks.

The requests of the task's requestor are in tests/_task_client.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _node import everything_server
from _process import free_port, stop, wait_listening
from _scripts import venv_script
from _task_client import cancel_task, create_task, get_task, list_tasks, poll_task, task_result
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

RESEARCH = "everything__simulate-research-query"
RELATED_TASK = "io.modelcontextprotocol/related-task"


def _config(tmp_path: Path) -> list[str]:
    config = tmp_path / "mcp.json"
    servers = {"everything": everything_server()}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return ["workspace", "--data-dir", str(tmp_path / "data"), "--mcp-config", str(config)]


@contextmanager
def _http(tmp_path: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [venv_script("nativemcp"), "serve", *_config(tmp_path), *extra,
         "--transport", "http", "--port", str(port)]
    )  # fmt: skip
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process, signal.SIGTERM)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _creates_polls_and_gets_the_result(client: Client) -> str:
    """The whole life of one task; its id."""
    capabilities = client.session.server_capabilities
    assert capabilities is not None and capabilities.tasks is not None
    assert capabilities.tasks.requests is not None
    assert capabilities.tasks.requests.tools is not None
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    research = tools[RESEARCH].execution
    assert research is not None and research.task_support == "optional"
    assert tools["everything__echo"].execution is None  # forbidden, as at the source
    created = types.CreateTaskResult.model_validate(
        await create_task(client, RESEARCH, {"topic": "cats"})
    )
    task_id = created.task.task_id
    assert created.task.status == "working" and created.task.ttl == 60_000
    assert (await get_task(client, task_id)).status in {"working", "completed"}
    result = await task_result(client, task_id)
    assert not result.is_error and "Research Report: cats" in _text(result)
    assert result.meta is not None and result.meta[RELATED_TASK] == {"taskId": task_id}
    done = await get_task(client, task_id)
    # The source's status messages reach the task's statusMessage.
    assert done.status == "completed" and done.status_message, done
    assert task_id in {task.task_id for task in await list_tasks(client)}
    return task_id


async def test_a_stdio_client_runs_a_tool_as_a_task_and_is_asked_for_input_on_its_result(
    tmp_path: Path,
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"interpretation": "historical"})

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "nativemcp.proxy.cli", "serve", *_config(tmp_path)]
    )
    with anyio.fail_after(90):
        async with Client(server, mode="legacy", elicitation_callback=elicitation) as client:
            await _creates_polls_and_gets_the_result(client)
            # A tool without task support refuses a task (-32601) and still works.
            with pytest.raises(MCPError) as refused:
                await create_task(client, "everything__echo", {"message": "hi"})
            assert refused.value.code == -32601 and "taskSupport" in refused.value.message
            echoed = await client.call_tool("everything__echo", {"message": "hi"})
            assert "hi" in _text(echoed)
            # An ambiguous query asks the client: the task waits in input_required
            # until a tasks/result carries the elicitation, which is answered.
            created = await create_task(client, RESEARCH, {"topic": "tea", "ambiguous": True})
            task_id = created["task"]["taskId"]
            await poll_task(client, task_id, until={"input_required"})
            assert not asked
            result = await task_result(client, task_id)
            # Cancel: the task ends cancelled, has no result, and cannot be cancelled again.
            slow = (await create_task(client, RESEARCH, {"topic": "slow"}))["task"]["taskId"]
            cancelled = await cancel_task(client, slow)
            assert cancelled.status == "cancelled"
            assert (await get_task(client, slow)).status == "cancelled"
            with pytest.raises(MCPError) as no_result:
                await task_result(client, slow)
            with pytest.raises(MCPError) as again:
                await cancel_task(client, slow)
            with pytest.raises(MCPError) as unknown:
                await get_task(client, "no-such-task")
    assert len(asked) == 1
    meta: dict[str, Any] = dict(asked[0].meta or {})
    assert meta[RELATED_TASK] == {"taskId": task_id}
    assert "Research Report: tea (historical)" in _text(result)
    assert no_result.value.code == -32602 and "cancelled" in no_result.value.message
    assert again.value.code == -32602 and "already cancelled" in again.value.message
    assert unknown.value.code == -32602 and "no-such-task" in unknown.value.message


async def test_an_http_session_runs_tasks_that_other_sessions_cannot_see(tmp_path: Path) -> None:
    async def never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("no tasks/result carried the request: it cannot reach us")

    with _http(tmp_path, "--input-timeout", "1") as url, anyio.fail_after(90):
        async with (
            Client(url, mode="legacy", elicitation_callback=never_asked) as client,
            Client(url, mode="legacy") as other,
        ):
            task_id = await _creates_polls_and_gets_the_result(client)
            with pytest.raises(MCPError) as foreign:
                await get_task(other, task_id)
            assert await list_tasks(other) == []
            # Nobody calls tasks/result while the task asks for input: after the input
            # timeout the source's elicitation fails, and it goes on with a default.
            created = await create_task(client, RESEARCH, {"topic": "tea", "ambiguous": True})
            waited = await _result_after_the_end(client, created["task"]["taskId"])
        # Tasks are a 2025-11-25 feature: a 2026-07-28 client is offered none.
        async with Client(url, mode="auto") as modern:
            tools = {tool.name: tool for tool in (await modern.list_tools()).tools}
    assert foreign.value.code == -32602
    assert "elicitation unavailable" in _text(waited)
    assert tools[RESEARCH].execution is None


async def _result_after_the_end(client: Client, task_id: str) -> types.CallToolResult:
    seen = await poll_task(client, task_id, until={"completed", "failed"})
    assert "input_required" in seen
    return await task_result(client, task_id)


async def test_stateless_serve_offers_no_tasks_and_runs_a_task_request_as_a_call(
    tmp_path: Path,
) -> None:
    """A stateless replica cannot keep a task for the next request (it may reach another
    process): no capability, no ``execution``, and ``task`` is ignored."""
    with _http(tmp_path, "--stateless") as url, anyio.fail_after(90):
        async with Client(url, mode="legacy") as client:
            capabilities = client.session.server_capabilities
            assert capabilities is not None and capabilities.tasks is None
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools[RESEARCH].execution is None
            answered = await create_task(client, RESEARCH, {"topic": "owls"})
    assert "Research Report: owls" in answered["content"][0]["text"]
