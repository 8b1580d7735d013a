"""One catalog over every source: built-in servers in workers and in this process, full
names, service tags on results, UI actions resolved from the content that showed them."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from nativemcp.protocol import (
    BackendType,
    EmbeddedResource,
    ServiceInfo,
    ToolNameError,
    service_info,
)
from nativemcp.proxy import PROXY_NAMES, ToolNameClash, UnknownTool, WorkerPool
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio]


@pytest.mark.real_process
async def test_builtin_tools_are_listed_under_full_names_with_their_backend(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(60):
        async with WorkerPool(data_dir=tmp_path, builtins=["planning", "workspace"]) as pool:
            tools = {tool.name: tool for tool in await pool.list_tools()}
            planning = [n for n in tools if n.startswith("builtin_planning__")]
            assert planning
            web = service_info(tools[planning[0]])
            native = service_info(tools["builtin_workspace__write_file"])
            assert web is not None and web.backend_type is BackendType.BUILTIN_WEB
            assert native is not None and native.backend_type is BackendType.BUILTIN_NATIVE
            response = await pool.call_tool(
                "builtin_workspace__write_file", {"path": "a.txt", "content": "hi\n"}
            )
            assert response.result is not None and not response.result.is_error
            for block in response.result.content:
                assert service_info(block) == native


async def test_the_export_cards_download_button_resolves_and_its_call_succeeds(
    tmp_path: Path,
) -> None:
    async with WorkerPool(data_dir=tmp_path, builtins=["workspace"]) as pool:
        await pool.call_tool("builtin_workspace__write_file", {"path": "r.txt", "content": "x\n"})
        exported = await pool.call_tool("builtin_workspace__export_file", {"path": "r.txt"})
        assert exported.result is not None
        card = next(b for b in exported.result.content if isinstance(b, EmbeddedResource))
        html = card.resource.text or ""
        tool = re.search(r'data-tool="([^"]+)"', html)
        path = re.search(r'data-path="([^"]+)"', html)
        assert tool is not None and path is not None
        action = {"type": "tool", "payload": {"toolName": tool[1], "params": {"path": path[1]}}}
        resolved = pool.resolve_ui_action(action, card)
        assert resolved.tool_name == "builtin_workspace__download_file"
        assert resolved.arguments == {"path": path[1]}
        # A full name passes unchanged, whatever content comes with it.
        again = pool.resolve_ui_action(
            {"type": "tool", "payload": {"toolName": resolved.tool_name, "params": {}}}, None
        )
        assert again.tool_name == resolved.tool_name
        download = await pool.call_tool(resolved.tool_name, resolved.arguments)
        assert download.result is not None and not download.result.is_error


async def test_host_actions_resolve_to_no_tool_and_bad_actions_are_errors(
    tmp_path: Path,
) -> None:
    async with WorkerPool(data_dir=tmp_path, builtins=["workspace"]) as pool:
        for kind in ("intent", "prompt", "notify", "link"):
            action = {"type": kind, "payload": {"url": "https://example.com"}}
            resolved = pool.resolve_ui_action(action, None)
            assert resolved.tool_name is None and resolved.action == action
        with pytest.raises(ValueError, match="no service"):
            pool.resolve_ui_action({"type": "tool", "payload": {"toolName": "x"}}, None)
        with pytest.raises(ValueError, match="unknown UI action type"):
            pool.resolve_ui_action({"type": "teleport"}, None)
        response = await pool.call_tool(
            "builtin_workspace__write_file", {"path": "a.txt", "content": ""}
        )
        with pytest.raises(UnknownTool, match="builtin_workspace__nope"):
            pool.resolve_ui_action({"type": "tool", "payload": {"toolName": "nope"}}, response)


def _server(name: str, *tools: str) -> Server:
    server = Server(name)
    for tool in tools:

        def body() -> str:
            return "ok"

        server.tool(name=tool)(body)
    return server


async def test_a_worker_and_an_in_process_server_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="two servers are named 'dup'"):
        async with WorkerPool([_server("dup", "a"), _server("dup", "b")], in_process=["dup"]):
            pass


async def test_a_builtin_server_name_that_breaks_the_rules_is_an_error_at_start() -> None:
    with pytest.raises(ToolNameError, match="'bad_'"):
        async with WorkerPool([_server("bad_", "a")], in_process=["bad_"]):
            pass


async def test_a_tool_named_like_a_proxy_attribute_is_an_error_that_says_how_to_call_it() -> None:
    assert "call_tool" in PROXY_NAMES and "ping" in PROXY_NAMES
    async with WorkerPool([_server("odd", "ping", "tools", "fine")], in_process=["odd"]) as pool:
        proxy = pool.server("odd")
        with pytest.raises(ToolNameClash, match=r"proxy\.tool\('ping'\)"):
            _ = proxy.ping
        with pytest.raises(ToolNameClash, match=r"proxy\.tool\('tools'\)"):
            _ = proxy.tools
        assert await proxy.tool("ping")() == "ok"
        assert await proxy.fine() == "ok"
        assert (await pool.call_tool("odd__ping")).result is not None


async def test_the_users_own_server_is_its_own_kind_not_a_builtin(tmp_path: Path) -> None:
    async with WorkerPool(
        [_server("mine", "hello")],
        data_dir=tmp_path,
        builtins=["workspace"],
        in_process=["mine", "workspace"],
    ) as pool:
        services = {tool.name: service_info(tool) for tool in await pool.list_tools()}
        assert services["mine__hello"] == ServiceInfo("mine", "hello", BackendType.USER_IN_PROCESS)
        assert not any(name.startswith("builtin_mine") for name in services)
        workspace = services["builtin_workspace__write_file"]
        assert workspace is not None and workspace.backend_type is BackendType.BUILTIN_NATIVE
        assert pool.server("mine").backend == "UserInProcess"
        response = await pool.call_tool("mine__hello")
        assert response.result is not None
        assert service_info(response.result.content[0]) == services["mine__hello"]


async def test_a_users_server_named_like_a_builtin_prefix_is_refused() -> None:
    with pytest.raises(ToolNameError, match="user server name 'builtin_x' must not"):
        async with WorkerPool([_server("builtin_x", "a")], in_process=["builtin_x"]):
            pass
