"""MCP Apps through the pool: declared to external servers only when the app asked for
them, reported per server, and a tool only an app may call is never the model's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _node import basic_app_server

from nativemcp.protocol import result_text, tool_ui
from nativemcp.proxy import WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

TESTS = Path(__file__).parents[1]
APP_SERVERS = ["_app_servers:alpha", "_app_servers:beta"]


def _external() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TESTS / "_external_app_server.py")]}


@pytest.mark.parametrize("apps", [True, False])
async def test_the_pool_declares_mcp_apps_to_external_servers_only_when_asked(apps: bool) -> None:
    with anyio.fail_after(60):
        async with WorkerPool(mcp_servers={"ext": _external()}, apps=apps, timeout=30) as pool:
            answer = await pool.call_tool("ext__client_shows_apps", {})
            (tool,) = await pool.list_tools()
            offered = pool.offers_apps("ext")
            (page,) = await pool.server("ext").read_resource("ui://app.html")
    assert result_text(answer) == ("yes" if apps else "no")
    # Either way the server offers its app, and its tool names it, intact.
    assert offered
    assert tool_ui(tool.meta) == "ui://app.html"
    assert page.mime_type == "text/html;profile=mcp-app"


async def test_offers_apps_is_per_server() -> None:
    with anyio.fail_after(60):
        async with WorkerPool(["_serve_servers:server", *APP_SERVERS], timeout=30) as pool:
            offered = {name: pool.offers_apps(name) for name in pool.names}
    assert offered == {"shapes": False, "alpha": True, "beta": True}


async def test_a_tool_only_its_app_may_call_is_not_declared_to_the_model() -> None:
    with anyio.fail_after(60):
        async with WorkerPool(APP_SERVERS, timeout=30) as pool:
            declared = await pool.tool_definitions("anthropic")
            found = await pool.search_tools("alpha refreshed app", limit=10)
            listed = await pool.list_tools()
    names = sorted(item["name"] for item in declared)
    assert names == ["alpha__plain", "alpha__show", "beta__show_beta", "read_result"]
    assert "alpha__refresh" not in [match.name for match in found]
    # The app's catalog has it: the app (a host, the console) calls it for its page.
    assert "alpha__refresh" in [tool.name for tool in listed]


@pytest.mark.parametrize("apps", [True, False])
async def test_the_model_hears_that_an_app_shows_the_result_only_where_apps_are_shown(
    apps: bool,
) -> None:
    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"t-{name}", "name": name, "input": arguments}

    with anyio.fail_after(60):
        async with WorkerPool(APP_SERVERS, apps=apps, timeout=30) as pool:
            shown = await pool.run_tool_call(
                call("alpha__show", {"text": "hi"}), provider="anthropic"
            )
            plain = await pool.run_tool_call(call("alpha__plain", {}), provider="anthropic")
    note = "[The user sees this result in the tool's app (ui://app.html)"
    assert "alpha shows hi" in str(shown["content"])
    assert (note in str(shown["content"])) is apps
    assert note not in str(plain["content"]) and "plain" in str(plain["content"])


async def test_the_ext_apps_example_server_s_app_passes_through_the_pool_intact() -> None:
    entry = basic_app_server()
    with anyio.fail_after(90):
        async with WorkerPool(mcp_servers={"basic": entry}, apps=True, timeout=60) as pool:
            tools = await pool.list_tools()
            offered = pool.offers_apps("basic")
            (uri,) = {uri for tool in tools if (uri := tool_ui(tool.meta)) is not None}
            (page,) = await pool.server("basic").read_resource(uri)
            answer = await pool.call_tool(tools[0].name, {})
    assert offered and uri.startswith("ui://")
    assert page.mime_type == "text/html;profile=mcp-app"
    assert page.text is not None and len(page.text) > 10_000 and "<html" in page.text.lower()
    assert not (answer.result is not None and answer.result.is_error)
