"""The console's "Authorize" button, in-process: a pool with a remote server that needs
authorization (a real loopback issuer, ``_oauth_server``), the console app over httpx's
ASGI transport, and a "browser" that follows the authorization address back to the
pool's loopback callback (the Chromium test clicks the real button)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2 as httpx
import pytest
from _oauth_server import Issuer, follow

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.console._app import create_console_app
from nativemcp.proxy.console._catalog import ConsoleCatalog

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

TOKEN: Final = "t0ken-for-the-tests-0123456789"
BASE: Final = f"http://127.0.0.1/{TOKEN}/"


@pytest.fixture
async def client(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    _, url = oauth_issuer
    servers = {"remote": {"url": url, "oauth": {}}}
    async with (
        WorkerPool(data_dir=tmp_path, builtins=[], mcp_servers=servers) as pool,
        anyio.create_task_group() as flows,
    ):
        app = create_console_app(await ConsoleCatalog.load(pool), TOKEN, flows)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            yield http
        flows.cancel_scope.cancel()


async def listed(client: httpx.AsyncClient) -> dict[str, Any]:
    (remote,) = (await client.get("api/tools")).json()["servers"]
    assert remote["name"] == "remote"
    return {
        "tools": sorted(tool["name"] for tool in remote["tools"]),
        "needs": remote["needsAuthorization"],
    }


async def browse(address: str) -> None:
    """The new tab: the issuer sends it on to the pool's loopback callback."""
    async with httpx.AsyncClient(follow_redirects=True) as tab:
        page = await tab.get(address)
    assert "You can close this window" in page.text


async def test_authorize_hands_the_address_to_the_page_and_lists_the_tools_once_signed_in(
    oauth_issuer: tuple[Issuer, str], client: httpx.AsyncClient
) -> None:
    issuer, _ = oauth_issuer
    assert await listed(client) == {
        "tools": ["remote__needs_authorization"],
        "needs": "no authorization is kept for it",
    }
    with anyio.fail_after(30):
        started = await client.post("api/servers/remote/authorize", json={})
        assert started.status_code == 200, started.text
        address = started.json()["url"]
        assert address.startswith(f"{issuer.base}/authorize?") and not started.json()["done"]
        await browse(address)
        outcome = (await client.get("api/servers/remote/authorization")).json()
    assert outcome == {"server": "remote", "url": address, "done": True, "authorized": True}
    assert await listed(client) == {"tools": ["remote__admin", "remote__whoami"], "needs": None}
    assert issuer.authorizations == 1
    # Authorized now: the button has nothing to start.
    again = await client.post("api/servers/remote/authorize", json={})
    assert again.status_code == 404 and "needs no authorization" in again.text


async def test_a_grant_kept_meanwhile_shows_at_the_next_listing_without_the_button(
    oauth_issuer: tuple[Issuer, str], client: httpx.AsyncClient, tmp_path: Path
) -> None:
    _, url = oauth_issuer
    assert (await listed(client))["needs"] is not None
    servers = {"remote": {"url": url, "oauth": {}}}
    with anyio.fail_after(30):
        async with WorkerPool(  # `auth login` elsewhere, as far as the files tell
            data_dir=tmp_path, builtins=[], mcp_servers=servers, oauth_redirect=follow
        ):
            pass
        assert await listed(client) == {
            "tools": ["remote__admin", "remote__whoami"],
            "needs": None,
        }


async def test_the_button_refuses_other_origins_unknown_servers_and_unstarted_outcomes(
    client: httpx.AsyncClient,
) -> None:
    framed = await client.post("api/servers/remote/authorize", json={}, headers={"Origin": "null"})
    assert framed.status_code == 403  # a UI frame (opaque origin) cannot start a sign-in
    unknown = await client.post("api/servers/remot/authorize", json={})
    assert unknown.status_code == 404 and "'remot' needs no authorization" in unknown.text
    never = await client.get("api/servers/remote/authorization")
    assert never.status_code == 404 and "no authorization of 'remote'" in never.text
    assert (await listed(client))["needs"] is not None
