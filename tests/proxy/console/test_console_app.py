"""The console's web app and catalog, in-process: the workspace server and httpx's ASGI
transport on the test's own event loop (the browser tests drive the real thing)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2 as httpx
import pytest

from nativemcp.protocol import TextContent, unwrap
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.console._app import create_console_app
from nativemcp.proxy.console._catalog import (
    SERVICE_META_KEY,
    ConsoleCatalog,
)
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


TOKEN: Final = "t0ken-for-the-tests-0123456789"
BASE: Final = f"http://127.0.0.1/{TOKEN}/"
JSON: Final = {"Content-Type": "application/json"}


@pytest.fixture
async def catalog(tmp_path: Path) -> AsyncIterator[ConsoleCatalog]:
    (tmp_path / "notes.txt").write_text("hello from the workspace\n")
    async with WorkerPool(
        data_dir=tmp_path / "data",
        workspace_root=tmp_path,
        builtins=["workspace"],
        in_process=("workspace",),
    ) as pool:
        yield await ConsoleCatalog.load(pool)


@pytest.fixture
async def client(catalog: ConsoleCatalog) -> AsyncIterator[httpx.AsyncClient]:
    async with anyio.create_task_group() as calls:
        app = create_console_app(catalog, TOKEN, calls)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            yield http
        calls.cancel_scope.cancel()


async def _call(client: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    started = await client.post("api/calls", json={"tool": tool, "arguments": arguments})
    assert started.status_code == 202, started.text
    return await _result(client, started.json()["id"])


async def _result(client: httpx.AsyncClient, call_id: int) -> dict[str, Any]:
    with anyio.fail_after(10):
        stream = await client.get(f"api/calls/{call_id}/events")
    event = ""
    for line in stream.text.splitlines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "result":
            view: dict[str, Any] = json.loads(line[6:])
            return view
    raise AssertionError(stream.text)


async def test_every_path_outside_the_token_answers_401(client: httpx.AsyncClient) -> None:
    for url in ["/", "/api/tools", "/console.js", f"/{TOKEN[:-1]}/api/tools", f"/x{TOKEN}/"]:
        response = await client.get("http://127.0.0.1" + url)
        assert response.status_code == 401, url
    assert (await client.get(f"http://127.0.0.1/{TOKEN}")).status_code == 307
    page = await client.get("")
    assert page.status_code == 200 and "<title>nativemcp console</title>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]


async def test_the_tool_list_has_full_names_with_their_service(client: httpx.AsyncClient) -> None:
    servers = (await client.get("api/tools")).json()["servers"]
    assert [server["name"] for server in servers] == ["workspace"]
    assert servers[0]["backend"] == "BuiltInNative"
    tools = {tool["name"]: tool for tool in servers[0]["tools"]}
    export = tools["builtin_workspace__export_file"]
    assert export["_meta"][SERVICE_META_KEY] == {
        "serverName": "workspace",
        "toolName": "export_file",
        "backendType": "BuiltInNative",
    }
    assert "path" in export["inputSchema"]["properties"]


async def test_a_call_shows_both_readers_with_their_cost(client: httpx.AsyncClient) -> None:
    view = await _call(client, "builtin_workspace__read_file", {"path": "notes.txt"})
    assert view["status"] == "ok"
    assert "hello from the workspace" in view["text"]
    assert view["textBytes"] == len(view["text"].encode())
    assert view["textTokens"] >= 1
    assert view["value"]["content"] == "hello from the workspace\n"
    assert view["valueBytes"] > 0 and view["elapsedMs"] >= 0
    assert view["service"]["toolName"] == "read_file"
    history = (await client.get("api/calls")).json()["calls"]
    assert [(call["tool"], call["status"]) for call in history] == [
        ("builtin_workspace__read_file", "ok")
    ]


async def test_a_tool_error_is_shown_as_an_error_result(client: httpx.AsyncClient) -> None:
    view = await _call(client, "builtin_workspace__read_file", {"path": "missing.txt"})
    assert view["status"] == "error"
    assert "missing.txt" in view["text"]


async def test_an_export_card_is_served_sandboxed_and_its_action_downloads_the_bytes(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    view = await _call(client, "builtin_workspace__export_file", {"path": "notes.txt"})
    (card,) = [block for block in view["blocks"] if block["type"] == "ui"]
    assert card["uri"].startswith("ui://nativemcp/export/file/")
    assert TOKEN not in card["frame"]
    refused = await client.post(card["frame"], json={}, headers={"Origin": "null"})
    assert refused.status_code == 403  # a frame (opaque origin) may not ask for one
    granted = (await client.post(card["frame"], json={})).json()["src"]
    assert granted.startswith("/ui/") and TOKEN not in granted
    document = await client.get("http://127.0.0.1" + granted)
    assert document.status_code == 200 and "<button" in document.text
    assert TOKEN not in document.text
    # One load per capability: what the frame's script reads from its URL is spent.
    again = await client.get("http://127.0.0.1" + granted)
    assert again.status_code == 404 and "used or has expired" in again.text
    policy = document.headers["content-security-policy"]
    assert policy.startswith("sandbox allow-scripts;") and "connect-src" not in policy
    assert "default-src 'none'" in policy
    path = view["value"]["exportPath"]
    action = {"type": "tool", "payload": {"toolName": "download_file", "params": {"path": path}}}
    reply = await client.post(
        f"api/calls/{view['id']}/ui-actions", json={"block": card["index"], "action": action}
    )
    assert reply.status_code == 202, reply.text
    started = reply.json()["call"]
    assert started["tool"] == "builtin_workspace__download_file"
    assert started["origin"] == f"ui:{view['id']}"
    download = await _result(client, started["id"])
    (blob,) = [block for block in download["blocks"] if block["type"] == "blob"]
    data = await client.get(blob["href"])
    assert data.content == b"hello from the workspace\n"
    assert data.headers["content-type"] == "application/octet-stream"
    assert data.headers["content-disposition"] == f'attachment; filename="{blob["filename"]}"'


async def test_host_actions_are_recorded_not_run(client: httpx.AsyncClient) -> None:
    view = await _call(client, "builtin_workspace__list_directory", {})
    url = f"api/calls/{view['id']}/ui-actions"
    reply = await client.post(url, json={"action": {"type": "link", "payload": {"url": "x"}}})
    assert reply.json() == {"kind": "host", "type": "link", "payload": {"url": "x"}}
    bad = await client.post(url, json={"action": {"type": "launch", "payload": {}}})
    assert bad.status_code == 400 and "unknown UI action type 'launch'" in bad.json()["error"]
    assert len((await client.get("api/calls")).json()["calls"]) == 1
    again = await _result(client, view["id"])
    assert [action["type"] for action in again["hostActions"]] == ["link", "error"]


async def test_requests_that_could_come_from_a_ui_frame_are_refused(
    client: httpx.AsyncClient,
) -> None:
    body = json.dumps({"tool": "builtin_workspace__list_directory", "arguments": {}})
    null_origin = await client.post("api/calls", content=body, headers={**JSON, "Origin": "null"})
    assert null_origin.status_code == 403
    plain = await client.post("api/calls", content=body, headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415
    unknown = await client.post("api/calls", json={"tool": "nope__x", "arguments": {}})
    assert unknown.status_code == 404
    assert (await client.get("api/calls/99/events")).status_code == 404
    assert (await client.get("api/calls")).json()["calls"] == []


async def test_resolve_ui_action_takes_the_server_from_the_content(
    catalog: ConsoleCatalog,
) -> None:
    response = await catalog.call_tool("builtin_workspace__list_directory", {})
    assert response.result is not None
    content = response.result.content
    assert all((block.meta or {}).get(SERVICE_META_KEY) for block in content)  # type: ignore[union-attr]
    action = {"type": "tool", "payload": {"toolName": "read_file", "params": {"path": "a"}}}
    target = catalog.resolve_ui_action(action, content)
    assert (target.tool_name, target.arguments) == ("builtin_workspace__read_file", {"path": "a"})
    full = {"type": "tool", "payload": {"toolName": "builtin_workspace__grep"}}
    assert catalog.resolve_ui_action(full, []).tool_name == "builtin_workspace__grep"
    notify = catalog.resolve_ui_action({"type": "notify", "payload": {"message": "hi"}}, content)
    assert (notify.tool_name, notify.arguments) == (None, {"message": "hi"})
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "tool", "payload": {"toolName": "read_file"}}, "no service"),
        ({"type": "tool", "payload": {}}, "needs payload.toolName"),
        ({"type": "tool", "payload": {"toolName": "grep", "params": [1]}}, "must be an object"),
        ({"type": 3}, "unknown UI action type 3"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            catalog.resolve_ui_action(bad, [TextContent(text="no service here")])


async def test_a_foreign_host_gets_421_and_a_foreign_origin_403_on_every_path(
    catalog: ConsoleCatalog,
) -> None:
    async with anyio.create_task_group() as calls:
        app = create_console_app(
            catalog, TOKEN, calls, allowed_hosts=["console.internal:*"], allowed_origins=[]
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            for path in ["", "api/tools", "api/calls", "/", "/ui/anything"]:
                # Each check alone: one must not hide behind the other.
                bad_host = await http.get(path, headers={"Host": "attacker.example:8765"})
                assert bad_host.status_code == 421, path
                # The SDK reads `127.0.0.1:*` as a prefix: what follows the port is refused.
                for odd in ["127.0.0.1:1; x", "127.0.0.1:1/evil", "localhost:80 evil", "a b"]:
                    odd_host = await http.get(path, headers={"Host": odd})
                    assert odd_host.status_code == 421, (path, odd)
                bad_origin = await http.get(path, headers={"Origin": "http://attacker.example"})
                assert bad_origin.status_code == 403, path
            # DNS rebinding with the token in hand: the Host gives it away.
            call = {"tool": "builtin_workspace__list_directory", "arguments": {}}
            rebound = {"Host": "attacker.example:8765", "Origin": "http://attacker.example:8765"}
            assert (await http.post("api/calls", json=call, headers=rebound)).status_code == 421
            assert (await http.get("api/calls")).json()["calls"] == []
            # The allow-list and the local names pass.
            for host in ["console.internal:8765", "localhost:8765", "127.0.0.1:1"]:
                assert (await http.get("api/tools", headers={"Host": host})).status_code == 200
        calls.cancel_scope.cancel()


def _plain() -> Server:
    plain = Server("plain", description="Tools that answer plain text")

    @plain.tool
    def shout(word: str) -> str:
        """The word in capitals."""
        return word.upper()

    @plain.tool
    def untyped(word: str):  # type: ignore[no-untyped-def]
        """No return annotation: the model's text is all there is."""
        return f"heard {word}"

    return plain


async def test_what_the_app_gets_is_what_unwrap_gives_for_a_plain_str_tool(
    tmp_path: Path,
) -> None:
    # "What the app gets" showed null for a tool that returns a plain str.
    async with WorkerPool([_plain()], in_process=["plain"], data_dir=tmp_path) as pool:
        catalog = await ConsoleCatalog.load(pool)
        async with anyio.create_task_group() as calls:
            app = create_console_app(catalog, TOKEN, calls)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
                shouted = await _call(http, "plain__shout", {"word": "hey"})
                heard = await _call(http, "plain__untyped", {"word": "hey"})
            calls.cancel_scope.cancel()
        direct = await pool.server("plain").call_tool("shout", {"word": "hey"})
    assert shouted["status"] == "ok" and shouted["value"] == unwrap(direct) == "HEY"
    assert heard["value"] == "heard hey" and heard["valueBytes"] == len('"heard hey"')


async def test_the_page_names_no_icon_so_the_browser_asks_for_nothing_outside_the_token(
    client: httpx.AsyncClient,
) -> None:
    # A browser asks for /favicon.ico, outside the token (401 on every page load),
    # unless the page names an icon of its own.
    page = await client.get("")
    assert '<link rel="icon" href="data:,">' in page.text


async def test_the_code_endpoint_runs_a_program_and_refuses_what_a_ui_frame_could_send(
    client: httpx.AsyncClient,
) -> None:
    program = (
        "listing = await builtin_workspace__list_directory(path='.')\n"
        "print(sorted(e['name'] for e in listing['entries']))\n"
        "await builtin_workspace__read_file(path='missing.txt')"
    )
    ran = await client.post("api/code", json={"code": program})
    assert ran.status_code == 200
    view = ran.json()
    assert view["status"] == "error" and view["error"].startswith("CodeError: ")
    assert "data" in view["output"] and "notes.txt" in view["output"]
    assert [c["name"] for c in view["calls"]] == [
        "builtin_workspace__list_directory",
        "builtin_workspace__read_file",
    ]
    assert view["calls"][0]["error"] is None and view["calls"][1]["error"]
    assert view["calls"][1]["tool"] == "builtin_workspace__read_file"
    assert view["recording"] is False and view["spans"] == []  # no ConsoleSpans here

    stubs = await client.get("api/code/stubs", params={"names": "builtin_workspace__read_file"})
    assert stubs.json()["stubs"].startswith("# await tool(k=v)")
    assert (await client.get("api/code/stubs", params={"names": "nope"})).status_code == 404
    assert (await client.post("api/code", json={"code": " "})).status_code == 400
    body = json.dumps({"code": "print(1)"})
    null_origin = await client.post("api/code", content=body, headers={**JSON, "Origin": "null"})
    assert null_origin.status_code == 403
