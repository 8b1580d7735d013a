"""The console's second origin for MCP Apps, in-process (httpx's ASGI transport names
the port a request reached, as uvicorn does): the sandbox port serves one-time proxy
pages under the app's policy and nothing of the console, the console's port serves no
proxy page, and what an app tells its host is checked and kept with the call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2 as httpx
import pytest

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.cli._console import _with_sandbox_port
from nativemcp.proxy.console._app import create_console_app
from nativemcp.proxy.console._catalog import ConsoleCatalog
from nativemcp.proxy.console._sandbox import origins_of

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

TOKEN: Final = "t0ken-for-the-tests-0123456789"
CONSOLE: Final = "http://127.0.0.1:8765"
SANDBOX_PORT: Final = 8766
SANDBOX: Final = f"http://127.0.0.1:{SANDBOX_PORT}"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        WorkerPool(
            ["_app_servers:gamma", "_app_servers:beta"],
            data_dir=tmp_path / "data",
            builtins=[],
            in_process=("gamma", "beta"),
            apps=True,
        ) as pool,
        anyio.create_task_group() as calls,
    ):
        app = create_console_app(
            await ConsoleCatalog.load(pool), TOKEN, calls, sandbox_port=SANDBOX_PORT
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"{CONSOLE}/{TOKEN}/") as http:
            yield http
        calls.cancel_scope.cancel()


async def _app_call(client: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> int:
    started = await client.post("api/calls", json={"tool": tool, "arguments": arguments})
    call_id: int = started.json()["id"]
    with anyio.fail_after(10):
        stream = await client.get(f"api/calls/{call_id}/events")
    assert "event: result" in stream.text, stream.text
    return call_id


async def _frame(client: httpx.AsyncClient, call_id: int) -> dict[str, Any]:
    granted = await client.post(f"api/calls/{call_id}/app-frame", json={})
    assert granted.status_code == 200, granted.text
    frame: dict[str, Any] = granted.json()
    return frame


def _directives(policy: str) -> dict[str, str]:
    parts = (item.strip().split(" ", 1) for item in policy.split(";"))
    return {part[0]: (part[1] if len(part) > 1 else "") for part in parts}


async def test_an_app_frame_is_a_one_time_proxy_page_on_the_sandbox_port(
    client: httpx.AsyncClient,
) -> None:
    call_id = await _app_call(client, "gamma__greet", {"name": "Ada"})
    frame = await _frame(client, call_id)
    assert frame["src"].startswith(f"{SANDBOX}/sandbox/") and TOKEN not in frame["src"]
    assert "speaks the MCP Apps bridge" not in frame["html"]  # the page, not the server
    assert frame["html"].startswith("<!DOCTYPE html>")
    assert frame["csp"] == {"connectDomains": ["http://127.0.0.1:9"]}
    assert frame["permissions"] == {"geolocation": {}}
    assert frame["allow"] == ["geolocation"]
    # The console's port never serves the proxy page (nor spends its capability).
    path = frame["src"].removeprefix(SANDBOX)
    assert (await client.get(CONSOLE + path)).status_code == 401
    proxy = await client.get(frame["src"])
    assert proxy.status_code == 200
    assert 'data-host="http://127.0.0.1:8765"' in proxy.text
    policy = _directives(proxy.headers["content-security-policy"])
    assert policy["frame-ancestors"] == CONSOLE
    assert policy["connect-src"] == "http://127.0.0.1:9"
    assert policy["sandbox"] == "allow-scripts allow-same-origin"
    assert proxy.headers["cache-control"] == "no-store"
    # Once only.
    assert (await client.get(frame["src"])).status_code == 404
    # Nor does the console's UI-frame path serve an app's page (its own origin).
    again = await _frame(client, call_id)
    capability = again["src"].rsplit("/", 1)[1]
    assert (await client.get(f"{CONSOLE}/ui/{capability}")).status_code == 404
    script = await client.get(f"{SANDBOX}/sandbox.js")
    assert script.status_code == 200 and "proxy-ready" in script.text


async def test_the_sandbox_port_serves_nothing_of_the_console(client: httpx.AsyncClient) -> None:
    for path in [f"/{TOKEN}/", f"/{TOKEN}/api/tools", f"/{TOKEN}/console.js", "/", "/ui/x"]:
        assert (await client.get(SANDBOX + path)).status_code == 404, path
    # A UI resource's capability (or a made-up one) is no proxy page.
    assert (await client.get(f"{SANDBOX}/sandbox/anything")).status_code == 404


async def test_the_page_may_frame_the_sandbox_origin_by_the_name_it_was_reached_by(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("")
    policy = _directives(page.headers["content-security-policy"])
    assert policy["frame-src"] == f"'self' {SANDBOX}"
    local = await client.get(f"http://localhost:8765/{TOKEN}/")
    assert _directives(local.headers["content-security-policy"])["frame-src"] == (
        "'self' http://localhost:8766"
    )
    call_id = await _app_call(client, "gamma__greet", {"name": "Bo"})
    granted = await client.post(
        f"http://localhost:8765/{TOKEN}/api/calls/{call_id}/app-frame", json={}
    )
    assert granted.json()["src"].startswith("http://localhost:8766/sandbox/")
    proxy = await client.get(granted.json()["src"])
    assert _directives(proxy.headers["content-security-policy"])["frame-ancestors"] == (
        "http://localhost:8765"
    )


async def test_an_apps_message_and_model_context_are_kept_with_its_call(
    client: httpx.AsyncClient,
) -> None:
    call_id = await _app_call(client, "gamma__greet", {"name": "Cy"})

    async def tell(method: str, params: Any) -> dict[str, Any]:
        answer = await client.post(
            f"api/calls/{call_id}/app-requests", json={"method": method, "params": params}
        )
        reply: dict[str, Any] = answer.json()
        return reply

    text = [{"type": "text", "text": "explain the chart"}]
    assert await tell("ui/message", {"role": "user", "content": text}) == {"result": {}}
    refused = await tell("ui/message", {"role": "assistant", "content": text})
    assert "role: 'user'" in refused["error"]["message"]
    refused = await tell("ui/message", {"role": "user", "content": ["not a block"]})
    assert "content blocks" in refused["error"]["message"]
    for words in ["first", "second"]:
        context = {"content": [{"type": "text", "text": words}], "structuredContent": {"n": 1}}
        assert await tell("ui/update-model-context", context) == {"result": {}}
    refused = await tell("ui/update-model-context", {"structuredContent": [1]})
    assert "an object" in refused["error"]["message"]
    view = (await client.get(f"api/calls/{call_id}")).json()
    assert view["hostActions"] == [
        {"type": "message", "payload": {"role": "user", "content": text}},
        {
            "type": "model-context",
            "payload": {
                "content": [{"type": "text", "text": "second"}],
                "structuredContent": {"n": 1},
            },
        },
    ]
    # Not a way around the tool rules: a note is no call.
    assert json.dumps(view).count("explain the chart") == 1


def test_an_allowed_host_reaches_the_sandbox_port_under_the_same_name() -> None:
    assert _with_sandbox_port(["devbox:8765", "tunnel:*", "plain", "[::1]:80"], 9000) == [
        "devbox:8765",
        "tunnel:*",
        "plain",
        "[::1]:80",
        "devbox:9000",
        "[::1]:9000",
    ]


async def test_a_host_that_is_no_plain_name_gets_no_page_and_no_sandbox_origin(
    client: httpx.AsyncClient,
) -> None:
    # The SDK's 127.0.0.1:* check lets any text follow the colon; the guard refuses it
    # before the page, and origins_of would make no origin of it either.
    call_id = await _app_call(client, "gamma__greet", {"name": "Di"})
    for host in ["127.0.0.1:8765; script-src *", '127.0.0.1:8765" x', "127.0.0.1:"]:
        headers = {"host": host}
        assert (await client.get("", headers=headers)).status_code == 421
        refused = await client.post(f"api/calls/{call_id}/app-frame", json={}, headers=headers)
        assert refused.status_code == 421
        assert origins_of(host, 9) is None
    assert origins_of("[::1]:8765", 9) == ("http://[::1]:8765", "http://[::1]:9")
    assert origins_of("localhost", 9) == ("http://localhost", "http://localhost:9")
    assert origins_of("127.0.0.1:8765", None) is None
