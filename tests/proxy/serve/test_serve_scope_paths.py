"""One scope rule on every path a served call can take: called directly (on 2026-07-28,
the fast path's shape), through the ``call_tool`` meta-tool (``--tool-search``), as a
task (2025-11-25's task-augmented call, 2026-07-28's Tasks extension), each directly and
through ``call_tool``, in both protocol eras. A caller whose token lacks the rule's scope
never sees the tool (``tools/list``, ``search_tools``) and is refused its call; a caller
holding it sees and calls it on the same path, so no refusal here is a broken path.

Real serve under OAuth (a loopback issuer), real worker processes and a stdio source
whose ``echo`` declares task support; the official SDK client for 2025-11-25, raw
2026-07-28 requests (`Rpc`) for the other era, shaped as the fast path answers them."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _issuer import Issuer, running_issuer
from _mcp_http import serving
from _task_client import Rpc, create_task, task_result
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.serve import Authorization
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

RAW = Path(__file__).parents[2] / "_raw_mcp_server.py"
GUARDED = "tasks__echo"
"""The tool the scope rule guards (it declares task support at its source)."""
ECHO = {"name": "echo", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
ARGUMENTS = {"text": "hello"}
SEARCH = {"query": "echo text or move a point", "limit": 50}
"""A search that finds the guarded tool and others (a caller may see some)."""
PATHS = ["direct", "call_tool", "task", "call_tool task"]


@asynccontextmanager
async def _served(search: bool) -> AsyncIterator[tuple[Issuer, str]]:
    """serve under OAuth with ``tasks__echo`` needing ``tasks:write``; the issuer and
    serve's base URL."""
    source = {"command": sys.executable, "args": [str(RAW), json.dumps({"tools": [ECHO]})]}
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], mcp_servers={"tasks": source}, timeout=20)
        auth = Authorization(
            issuer=issuer.url, audience="nativemcp-test", scopes=["tasks__echo=tasks:write"]
        )
        async with serving(http_app(pool, auth=auth, profile=ToolProfile(search=search))) as base:
            yield issuer, base


def _called(path: str) -> tuple[str, dict[str, Any]]:
    """The ``tools/call`` name and arguments that reach the guarded tool on ``path``."""
    if path.startswith("call_tool"):
        return "call_tool", {"name": GUARDED, "arguments": ARGUMENTS}
    return GUARDED, ARGUMENTS


async def _legacy(base: str, token: str, path: str) -> tuple[set[str], str]:
    """A 2025-11-25 client (the official SDK's): what it finds, and what its call of
    the guarded tool on ``path`` answers (the text, or ``refused: …``)."""
    challenges: list[str] = []  # a 403's (the SDK client words it "an error response")

    async def note(response: httpx2.Response) -> None:
        if response.status_code == 403:
            challenges.append(response.headers["www-authenticate"])

    headers = {"authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [note]}) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            found = await _legacy_found(client, path)
            name, arguments = _called(path)
            try:
                if path.endswith("task"):
                    created = types.CreateTaskResult.model_validate(
                        await create_task(client, name, arguments)
                    )
                    result = await task_result(client, created.task.task_id)
                else:
                    result = await client.call_tool(name, arguments)
            except MCPError as exc:
                return found, f"refused: {' '.join([exc.error.message, *challenges])}"
    block = result.content[0]
    assert isinstance(block, types.TextContent) and not result.is_error, result
    return found, block.text


async def _legacy_found(client: Client, path: str) -> set[str]:
    if path.startswith("call_tool"):
        found = await client.call_tool("search_tools", SEARCH)
        return {m["name"] for m in (found.structured_content or {})["matches"]}
    return {tool.name for tool in (await client.list_tools()).tools}


async def _modern(base: str, token: str, path: str) -> tuple[set[str], str]:
    """`_legacy` for a 2026-07-28 client in raw requests, declaring the Tasks extension
    on a task path only (without it, a listing is the fast path's)."""
    declare = path.endswith("task")
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
        rpc = Rpc(http, f"{base}/mcp")
        if path.startswith("call_tool"):
            query = {"name": "search_tools", "arguments": SEARCH}
            listed = await rpc.result("tools/call", query, declare=declare)
            found = {m["name"] for m in listed["structuredContent"]["matches"]}
        else:
            listed = await rpc.result("tools/list", {}, declare=declare)
            found = {tool["name"] for tool in listed["tools"]}
        name, arguments = _called(path)
        answer = await rpc("tools/call", {"name": name, "arguments": arguments}, declare=declare)
        if "result" in answer and answer["result"].get("resultType") == "task":
            assert declare, answer  # a task only for a client that declared the extension
            task = await rpc.until(answer["result"]["taskId"], "completed")
            answer = {"result": task["result"]}
    if "result" not in answer:
        error = answer["error"]  # JSON-RPC's, or the 403's body (its error_description)
        return found, f"refused: {error['message'] if isinstance(error, dict) else answer}"
    return found, str(answer["result"]["content"][0]["text"])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_tool_needing_a_scope_is_hidden_from_and_refused_to_a_caller_without_it(
    era: str, path: str
) -> None:
    client = _legacy if era == "2025-11-25" else _modern
    async with _served(search=path.startswith("call_tool")) as (issuer, base):
        with anyio.fail_after(60):
            reader = issuer.token("rita", scope="tasks:read")
            found, answer = await client(base, reader, path)
            assert GUARDED not in found and found, found
            assert answer.startswith("refused: ") and "insufficient" in answer, answer
            writer = issuer.token("wade", scope="tasks:read tasks:write")
            found, answer = await client(base, writer, path)
            assert GUARDED in found
            assert answer == "hello"
