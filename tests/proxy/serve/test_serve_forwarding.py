"""`nativemcp serve --mcp-config` passes an external server's requests to its MCP client.

npm's ``@modelcontextprotocol/server-everything`` (from `.ci/node`) behind
``nativemcp serve`` over stdio, and the official SDK client in front: the server's
sampling and elicitation (form and URL mode) reach the client that made the call, when
that client declared them, on the handshake protocol and on 2026-07-28; otherwise the
server gets an error it shows. Roots come from ``--root``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from _node import everything_server
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


def _serve(tmp_path: Path) -> StdioServerParameters:
    config = tmp_path / "mcp.json"
    servers = {"everything": everything_server()}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "nativemcp.proxy.cli", "serve", "workspace"),
            *("--data-dir", str(tmp_path / "data"), "--mcp-config", str(config)),
            *("--root", str(tmp_path)),
        ],
    )


def _text(result: types.CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_external_servers_requests_reach_the_calling_client(
    tmp_path: Path, mode: Literal["legacy", "auto"]
) -> None:
    asked: list[tuple[str, Any]] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append(("sampling", params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="from the host"),
            model="m",
        )

    async def elicitation(context: Any, params: Any) -> Any:
        asked.append((getattr(params, "mode", None) or "form", params))
        return types.ElicitResult(action="decline")

    with anyio.fail_after(90):
        async with Client(
            _serve(tmp_path),
            mode=mode,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
        ) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {
                "everything__trigger-sampling-request",
                "everything__trigger-elicitation-request",
                "everything__trigger-url-elicitation",
                "everything__get-roots-list",
            } <= names
            sampled = await client.call_tool(
                "everything__trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}
            )
            form = await client.call_tool("everything__trigger-elicitation-request", {})
            url = await client.call_tool(
                "everything__trigger-url-elicitation", {"url": "https://example.com/auth"}
            )
            roots = await client.call_tool("everything__get-roots-list", {})
    assert "from the host" in _text(sampled)
    assert not form.is_error and "decline" in _text(form).lower()
    assert "decline" in _text(url).lower()
    assert [kind for kind, _ in asked] == ["sampling", "form", "url"]
    assert asked[2][1].url == "https://example.com/auth"
    assert tmp_path.as_uri() in _text(roots)  # --root: everything asks at connect time


async def test_a_client_without_sampling_gives_the_server_an_error_it_shows(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(90):
        async with Client(_serve(tmp_path), mode="legacy") as client:
            sampled = await client.call_tool(
                "everything__trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}
            )
            # A tool that runs only as a task is served as an ordinary tool that works.
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            research = tools["everything__simulate-research-query"]
            assert research.execution is None or research.execution.task_support != "required"
            report = await client.call_tool("everything__simulate-research-query", {"topic": "x"})
    text = _text(sampled)
    assert "does not support sampling/createMessage" in text and "'sampling'" in text, text
    assert not report.is_error and "Research Report: x" in _text(report)
