"""MCP Apps through ``nativemcp serve``, with the official ``mcp`` client: the extension is
advertised, UI metadata goes only to clients that declared it (at the handshake or in each
request's envelope), and two servers' ``ui://app.html`` stay apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import HEADERS, INIT, serving
from _task_client import create_task, task_result
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

APP_SERVERS = ["_app_servers:alpha", "_app_servers:beta"]
EXPORT_APP = "ui://nativemcp/export-card.html"
RAW = Path(__file__).parents[2] / "_raw_mcp_server.py"


def _apps() -> Any:
    return advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


def _ui(tool: types.Tool) -> Any:
    return (tool.meta or {}).get("ui")


def _named(tools: list[types.Tool], suffix: str) -> types.Tool:
    (found,) = [tool for tool in tools if tool.name.endswith(suffix)]
    return found


async def test_ui_metadata_goes_only_to_clients_that_declared_mcp_apps_on_2026() -> None:
    # 2026-07-28: the official client declares the extension in each request's envelope.
    pool = WorkerPool(APP_SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", extensions=[_apps()]) as host:
                assert host.protocol_version == "2026-07-28"
                advertised = host.server_capabilities.extensions or {}
                shown = (await host.list_tools()).tools
                called = await host.call_tool(_named(shown, "refresh").name, {})
            async with Client(f"{base}/mcp") as bare:
                plain = (await bare.list_tools()).tools
                with pytest.raises(MCPError, match="unknown tool"):
                    await bare.call_tool(_named(shown, "refresh").name, {})
    assert EXTENSION_ID in advertised
    # Namespaced per server: the two apps' ui://app.html do not collide.
    assert _ui(_named(shown, "show")) == {"resourceUri": "ui://alpha/app.html"}
    assert _ui(_named(shown, "show_beta")) == {"resourceUri": "ui://beta/app.html"}
    assert _ui(_named(shown, "refresh"))["visibility"] == ["app"]
    assert _ui(_named(shown, "plain")) is None
    assert not called.is_error
    # A client that shows no apps: no UI metadata, and no tool only an app may call.
    assert all(_ui(tool) is None for tool in plain)
    assert sorted(tool.name.rsplit("__", 1)[1] for tool in plain) == ["plain", "show", "show_beta"]
    assert (_named(plain, "show").meta or {}).get("io.github.nativemcp/service") is not None


async def _legacy_session(http: httpx2.AsyncClient, url: str, extensions: Any) -> list[Any]:
    """A 2025-11-25 session over raw HTTP whose initialize declares ``extensions``; the
    initialize result's capabilities, then the tools it lists."""
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"extensions": extensions}}}
    opened = await http.post(url, json=init, headers=HEADERS)
    session = {
        **HEADERS,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=done, headers=session)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    tools = await http.post(url, json=listing, headers=session)
    return [_sse(opened.text)["result"]["capabilities"], _sse(tools.text)["result"]["tools"]]


def _sse(text: str) -> Any:
    (data,) = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data)


async def test_ui_metadata_goes_only_to_clients_that_declared_mcp_apps_on_2025() -> None:
    # 2025-11-25: hosts declare it in initialize's capabilities.extensions (the SDK's
    # types for that version have no such field, so the official client cannot).
    apps = {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}
    pool = WorkerPool(APP_SERVERS, timeout=20)
    async with serving(http_app(pool)) as base, httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(60):
            capabilities, shown = await _legacy_session(http, f"{base}/mcp", apps)
            _, bare = await _legacy_session(http, f"{base}/mcp", {})
            # A MIME type that only contains the app's is not the app's.
            near = {EXTENSION_ID: {"mimeTypes": "x" + APP_MIME_TYPE}}
            _, wrong = await _legacy_session(http, f"{base}/mcp", near)
    assert capabilities["extensions"] == {EXTENSION_ID: {}}
    uis = {tool["name"]: tool.get("_meta", {}).get("ui") for tool in shown}
    assert {name: ui["resourceUri"] for name, ui in uis.items() if ui} == {
        "alpha__show": "ui://alpha/app.html",
        "alpha__refresh": "ui://alpha/app.html",
        "beta__show_beta": "ui://beta/app.html",
    }
    for tools in (bare, wrong):
        assert [tool["name"] for tool in tools] == [
            "alpha__show",
            "alpha__plain",
            "beta__show_beta",
        ]
        assert all("ui" not in tool.get("_meta", {}) for tool in tools)


async def test_stateless_ui_metadata_needs_a_declaration_in_each_request() -> None:
    # A declaration at a 2025-11-25 initialize is lost to a stateless server: that client
    # shows no apps. One in each request's envelope counts, in either era.
    apps = {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}
    pool = WorkerPool(APP_SERVERS, timeout=20)
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"extensions": apps}}}
    listing: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    legacy = {**HEADERS, "mcp-protocol-version": "2025-11-25"}

    def enveloped(extensions: Any) -> dict[str, Any]:
        meta = {"io.modelcontextprotocol/clientCapabilities": {"extensions": extensions}}
        return {**listing, "params": {"_meta": meta}}

    near = {EXTENSION_ID: {"mimeTypes": ["x" + APP_MIME_TYPE]}}
    async with (
        serving(http_app(pool, stateless=True)) as base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        with anyio.fail_after(60):
            opened = await http.post(f"{base}/mcp", json=init, headers=HEADERS)
            tools = _sse((await http.post(f"{base}/mcp", json=listing, headers=legacy)).text)
            answers = [
                await http.post(f"{base}/mcp", json=enveloped(extensions), headers=legacy)
                for extensions in (apps, near)
            ]
            declared, wrong = (_sse(answer.text)["result"]["tools"] for answer in answers)
            async with Client(f"{base}/mcp", extensions=[_apps()]) as host:
                assert host.protocol_version == "2026-07-28"
                shown = (await host.list_tools()).tools
    assert _sse(opened.text)["result"]["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    listed = tools["result"]["tools"]
    assert [tool["name"] for tool in listed] == ["alpha__show", "alpha__plain", "beta__show_beta"]
    assert all("ui" not in tool.get("_meta", {}) for tool in listed)
    assert wrong == listed
    assert [tool["name"] for tool in declared] == [
        "alpha__show",
        "alpha__refresh",
        "alpha__plain",
        "beta__show_beta",
    ]
    assert declared[1]["_meta"]["ui"] == {
        "resourceUri": "ui://alpha/app.html",
        "visibility": ["app"],
    }
    assert _ui(_named(shown, "refresh")) == {
        "resourceUri": "ui://alpha/app.html",
        "visibility": ["app"],
    }


async def test_each_servers_app_is_listed_and_read_under_its_own_namespace() -> None:
    pool = WorkerPool(APP_SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", extensions=[_apps()]) as host:
                listed = {str(item.uri): item for item in (await host.list_resources()).resources}
                templates = (await host.list_resource_templates()).resource_templates
                (view,) = (await host.read_resource("ui://alpha/views/x")).contents
                alpha = (await host.read_resource("ui://alpha/app.html")).contents
                beta = (await host.read_resource("ui://beta/app.html")).contents
                problems = []
                for uri in ("ui://app.html", "ui://alph/app.html", "ui://alphax/app.html"):
                    with pytest.raises(MCPError) as refused:
                        await host.read_resource(uri)
                    problems.append(str(refused.value))
    assert set(listed) == {"ui://alpha/app.html", "ui://beta/app.html"}
    assert [template.uri_template for template in templates] == ["ui://alpha/views/{name}"]
    assert isinstance(view, types.TextResourceContents)
    assert (str(view.uri), view.text) == (
        "ui://alpha/views/x",
        "<!DOCTYPE html><p>alpha view x</p>",
    )
    assert listed["ui://alpha/app.html"].mime_type == APP_MIME_TYPE
    (alpha_page,) = alpha
    (beta_page,) = beta
    assert isinstance(alpha_page, types.TextResourceContents)
    assert isinstance(beta_page, types.TextResourceContents)
    assert (alpha_page.text, beta_page.text) == (
        "<!DOCTYPE html><p>alpha</p>",
        "<!DOCTYPE html><p>beta</p>",
    )
    assert (str(alpha_page.uri), alpha_page.mime_type) == ("ui://alpha/app.html", APP_MIME_TYPE)
    assert alpha_page.meta == {"ui": {"prefersBorder": True}}
    assert all("ui:// resources are named by server here" in text for text in problems)
    assert "servers: alpha, beta" in problems[0]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_namespaced_ui_uri_is_subscribed_and_completed_at_its_own_server() -> None:
    updated: list[str] = []
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            heard.set()

    pool = WorkerPool(["_app_servers:gamma", "_app_servers:beta"], timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            # Subscriptions are the handshake era's (2026-07-28 has subscriptions/listen).
            async with Client(f"{base}/mcp", mode="legacy", message_handler=on_message) as c:
                with pytest.raises(MCPError, match="named by server here"):
                    await c.subscribe_resource("ui://gammax/app.html")
                await c.subscribe_resource("ui://gamma/app.html")
                await c.call_tool("gamma__touch", {"uri": "ui://other.html"})  # not subscribed
                await c.call_tool("gamma__touch", {"uri": "ui://app.html"})
                await heard.wait()
                template = types.ResourceTemplateReference(
                    type="ref/resource", uri="ui://gamma/views/{name}"
                )
                completed = await c.complete(template, {"name": "name", "value": "c"})
                with pytest.raises(MCPError, match="named by server here"):
                    wrong = types.ResourceTemplateReference(
                        type="ref/resource", uri="ui://gam/views/{name}"
                    )
                    await c.complete(wrong, {"name": "name", "value": "c"})
    # Under the name the client subscribed by; gamma's hook saw its own template.
    assert updated == ["ui://gamma/app.html"]
    assert completed.completion.values == ["chart"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_export_shows_its_app_to_an_apps_host_and_the_card_to_other_clients(
    mode: Literal["legacy", "auto"], tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n")
    pool = WorkerPool(
        builtins=["workspace"], workspace_root=root, data_dir=tmp_path / "data", timeout=20
    )
    async with serving(http_app(pool, ["workspace"])) as base:
        url = f"{base}/mcp/workspace"
        with anyio.fail_after(60):
            async with Client(url, mode=mode, extensions=[_apps()]) as host:
                tool = _named((await host.list_tools()).tools, "export_file")
                page = (await host.read_resource(EXPORT_APP)).contents
                shown = await host.call_tool("export_file", {"path": "notes.md"})
            async with Client(url, mode=mode) as bare:
                plain = await bare.call_tool("export_file", {"path": "notes.md"})
    assert _ui(tool) == {"resourceUri": EXPORT_APP}
    (contents,) = page
    assert contents.mime_type == APP_MIME_TYPE
    assert contents.meta == {"ui": {"csp": {}, "prefersBorder": True}}
    # The host shows the app from the structured content: no embedded card beside it.
    assert [block.type for block in shown.content] == ["text"]
    assert shown.structured_content is not None and "exportPath" in shown.structured_content
    assert [block.type for block in plain.content] == ["text", "resource"]
    card = plain.content[1]
    assert isinstance(card, types.EmbeddedResource)
    assert str(card.resource.uri).startswith("ui://nativemcp/export/file/")


async def _app_only_call(client: Client, path: str) -> str:
    """What calling the app-only ``alpha__refresh`` on ``path`` answers: its text, or
    ``refused: …`` (a JSON-RPC error's message, or ``call_tool``'s tool error)."""
    name, arguments = "alpha__refresh", {}
    if path != "direct":
        name, arguments = "call_tool", {"name": "alpha__refresh", "arguments": {}}
    try:
        if path == "call_tool task":
            created = types.CreateTaskResult.model_validate(
                await create_task(client, name, arguments)
            )
            result = await task_result(client, created.task.task_id)
        else:
            result = await client.call_tool(name, arguments)
    except MCPError as exc:
        return f"refused: {exc.error.message}"
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return f"refused: {block.text}" if result.is_error else block.text


@pytest.mark.parametrize(
    ("mode", "path"),
    [
        ("legacy", "direct"),
        ("legacy", "call_tool"),
        ("legacy", "call_tool task"),
        ("auto", "direct"),
        ("auto", "call_tool"),
    ],
)
async def test_a_tool_only_an_app_calls_is_unknown_on_every_path_to_a_client_without_apps(
    mode: Literal["legacy", "auto"], path: str
) -> None:
    pool = WorkerPool(APP_SERVERS, timeout=20)
    search = path != "direct"
    async with serving(http_app(pool, profile=ToolProfile(search=search))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", mode=mode) as bare:
                answer = await _app_only_call(bare, path)
                if search:
                    found = await bare.call_tool("search_tools", {"query": "refresh plain"})
                    names = [m["name"] for m in (found.structured_content or {})["matches"]]
                    assert "alpha__refresh" not in names and "alpha__plain" in names
            # A host that shows apps (it declares them in each 2026-07-28 request) calls it.
            async with Client(f"{base}/mcp", extensions=[_apps()]) as host:
                hosted = await _app_only_call(host, "direct" if path == "direct" else "call_tool")
    assert answer.startswith("refused: ") and "'alpha__refresh'" in answer, answer
    # Nor is the refused name offered as the one meant.
    assert answer.count("alpha__refresh") == 1, answer
    assert hosted == "alpha refreshed"


async def test_the_older_flat_ui_key_is_namespaced_for_hosts_and_removed_for_other_clients() -> (
    None
):
    # A server that names its app in the extension's older flat key, `ui/resourceUri`.
    clock = {
        "name": "clock",
        "inputSchema": {"type": "object"},
        "_meta": {"ui/resourceUri": "ui://clock.html", "keep": 1},
    }
    raw = {"command": sys.executable, "args": [str(RAW), json.dumps({"tools": [clock]})]}
    pool = WorkerPool(["_app_servers:alpha"], mcp_servers={"old": raw}, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", extensions=[_apps()]) as host:
                shown = _named((await host.list_tools()).tools, "clock")
            async with Client(f"{base}/mcp", mode="legacy") as bare:
                plain = _named((await bare.list_tools()).tools, "clock")
    assert (shown.meta or {})["ui/resourceUri"] == "ui://old/clock.html"
    assert "ui/resourceUri" not in (plain.meta or {})
    assert (plain.meta or {})["keep"] == 1
