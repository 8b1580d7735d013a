"""The served app takes its endpoint's POSTs before Starlette's routing: they pass the
app's own middleware (the token, the canonical Host, one added by the host app) and
reach the right route, while everything else goes through Starlette as before."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from _mcp_http import serving
from starlette.types import ASGIApp, Receive, Scope, Send

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/list",
    "authorization": "Bearer s3cret",
}
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
)


class _Seen:
    """Middleware a host app adds: records each request's method and path in ``seen``."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


async def test_endpoint_posts_skip_starlettes_stack_but_pass_the_apps_middleware() -> None:
    pool = WorkerPool(["_serve_servers:server", "_serve_servers:other"], timeout=20)
    app = http_app(pool, token="s3cret", stateless=True)
    seen: list[tuple[str, str]] = []
    app.add_middleware(_Seen, seen=seen)
    through_starlette: list[str] = []
    async with pool, serving(app) as base, httpx2.AsyncClient(timeout=20) as http:
        # Answered by Starlette (a 404 of its router), so its stack is built.
        assert (await http.get(f"{base}/elsewhere", headers=HEADERS)).status_code == 404
        stack = app.middleware_stack
        assert stack is not None

        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            through_starlette.append(scope.get("path", scope["type"]))
            await stack(scope, receive, send)

        app.middleware_stack = counted
        with anyio.fail_after(60):
            listed = await http.post(f"{base}/mcp", headers=HEADERS, content=BODY)
            assert listed.status_code == 200
            names = {tool["name"] for tool in listed.json()["result"]["tools"]}
            assert "other__ping_other" in names
            one = await http.post(f"{base}/mcp/other", headers=HEADERS, content=BODY)
            assert {tool["name"] for tool in one.json()["result"]["tools"]} == {"ping_other"}
            unknown = await http.post(f"{base}/mcp/nobody", headers=HEADERS, content=BODY)
            assert unknown.status_code == 404 and "servers: " in unknown.text
            tokenless = {k: v for k, v in HEADERS.items() if k != "authorization"}
            refused = await http.post(f"{base}/mcp", headers=tokenless, content=BODY)
            assert refused.status_code == 401
            rebound = await http.post(
                f"{base}/mcp", headers={**HEADERS, "host": "evil.example"}, content=BODY
            )
            assert rebound.status_code == 421
            assert through_starlette == []  # every POST to the endpoint skipped it
            elsewhere = await http.post(f"{base}/mcpx", headers=HEADERS, content=BODY)
            assert elsewhere.status_code == 404
            deleted = await http.delete(f"{base}/mcp", headers=HEADERS)
            assert deleted.status_code == 405  # the SDK's answer, through Starlette
    assert through_starlette == ["/mcpx", "/mcp"]
    posts: list[Any] = [path for method, path in seen if method == "POST"]
    assert posts == ["/mcp", "/mcp/other", "/mcp/nobody", "/mcp", "/mcp", "/mcpx"]
