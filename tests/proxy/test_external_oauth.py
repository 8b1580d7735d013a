"""OAuth 2.1 to a remote MCP server through the pool: a real authorization server and a
real protected MCP server on loopback (``_oauth_server``), the SDK's client provider,
the grant files on disk. No Node: the official client suite runs in ``.ci/conformance``.
"""

from __future__ import annotations

import logging
import re
import stat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from _grants import expire, stored
from _mcp_http import serving
from _oauth_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    Following,
    Issuer,
    follow,
    log_in_elsewhere,
    whoami,
)
from _process import free_port
from mcp import Client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from nativemcp.protocol import ToolError, UnknownTool
from nativemcp.proxy import ServerStartError, UnknownServer, WorkerPool, http_app
from nativemcp.proxy.external import (
    GRANTS_DB,
    GRANTS_FOLDER,
    GrantStore,
    NeedsAuthorization,
    revoke,
)

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"


def pool(url: str, data_dir: Path | None, **extra: Any) -> WorkerPool:
    oauth = extra.pop("oauth", {})
    return WorkerPool(
        data_dir=data_dir,
        builtins=[],
        mcp_servers={NAME: {"type": "http", "url": url, "oauth": oauth}},
        **extra,
    )


async def authorize(url: str, data_dir: Path) -> None:
    """Authorize once, as ``nativemcp auth login`` would, and keep the grant."""
    with anyio.fail_after(20):
        async with pool(url, data_dir, oauth_redirect=follow):
            pass


async def test_the_authorization_code_flow_with_pkce_reaches_the_server_and_keeps_the_grant(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    hook = Following()
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth_redirect=hook) as first:
            assert await whoami(first) == "authorized"
            assert first.needs_authorization == {}
    assert len(hook.seen) == 1 and "code_challenge_method=S256" in hook.seen[0]
    assert server.authorizations == 1 and server.grants == ["authorization_code"]
    path = tmp_path / GRANTS_FOLDER / GRANTS_DB
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = stored(tmp_path)
    assert data["issuer"] == server.base
    assert data["client"]["client_id"].startswith("client-")  # registered dynamically
    assert data["resources"][url]["access_token"] in server.access

    # A second pool, with nobody to ask, uses the kept grant: no new authorization.
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as second:
            assert await whoami(second) == "authorized"
    assert server.authorizations == 1 and server.grants == ["authorization_code"]


async def test_a_pre_registered_client_is_used_as_configured_and_its_grant_is_its_own(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    port = free_port()
    server.clients["pre"] = {
        "client_id": "pre",
        "redirect_uris": [f"http://localhost:{port}/callback"],
    }
    oauth = {"clientId": "pre", "callbackPort": port}
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth=oauth, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    data = stored(tmp_path)
    assert data["client"]["client_id"] == "pre" and len(server.clients) == 2  # no registration
    # Another configured client does not take this client's grant.
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth={"clientId": "other"}) as other:
            assert NAME in other.needs_authorization
        async with pool(url, tmp_path, oauth=oauth) as same:
            assert await whoami(same) == "authorized"
    assert server.authorizations == 1


async def test_a_browser_that_comes_back_to_the_loopback_callback_completes_the_flow(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    async with anyio.create_task_group() as browsers:

        def hook(authorization_url: str) -> None:
            async def browse() -> None:
                # The browser follows the issuer's redirect to the pool's listener.
                async with httpx2.AsyncClient(follow_redirects=True) as http:
                    page = await http.get(authorization_url)
                assert "You can close this window" in page.text

            browsers.start_soon(browse)

        with anyio.fail_after(20):
            async with pool(url, tmp_path, oauth_redirect=hook) as first:
                assert await whoami(first) == "authorized"
    assert server.authorizations == 1


async def test_the_start_timeout_does_not_count_the_time_a_person_takes_to_sign_in(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    start_timeout = 2.0

    async def slow_person(authorization_url: str) -> str:
        await anyio.sleep(start_timeout * 1.5)  # a person reading the page, not a wait on us
        return await follow(authorization_url)

    with anyio.fail_after(20):
        async with pool(
            url, tmp_path, oauth_redirect=slow_person, start_timeout=start_timeout
        ) as p:
            assert await whoami(p) == "authorized"
    assert server.authorizations == 1


async def test_an_expired_token_is_refreshed_before_it_is_sent(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    expire(tmp_path, url)  # the server would still take it: only a refresh shows
    old = stored(tmp_path)["resources"][url]
    server.grants.clear()
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as second:
            assert await whoami(second) == "authorized"
    assert server.grants == ["refresh_token"] and server.authorizations == 1
    new = stored(tmp_path)["resources"][url]
    assert new["access_token"] != old["access_token"]
    assert new["refresh_token"] != old["refresh_token"]  # the rotated one is kept


async def test_a_token_the_server_stopped_taking_is_refreshed_on_the_401(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    await authorize(url, tmp_path)
    server.access.clear()  # revoked early: the kept token has not expired for the client
    server.grants.clear()
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as second:
            assert await whoami(second) == "authorized"
            assert second.needs_authorization == {}
    assert server.grants == ["refresh_token"] and server.authorizations == 1


async def test_invalid_grant_on_refresh_drops_the_grant_once_and_the_pool_still_starts(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    await authorize(url, tmp_path)
    expire(tmp_path, url)
    server.refuse_refresh = True
    server.grants.clear()
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as second:
            reason = second.needs_authorization[NAME]
            assert "refused or has expired" in reason
            (tool,) = await second.list_tools()
            assert "run: nativemcp auth login remote" in (tool.description or "")
            response = await second.call_tool(tool.name, {})
            assert response.result is not None and response.result.is_error
            text = response.result.content[0].text  # type: ignore[union-attr]
            assert "run: nativemcp auth login remote" in text
            # Any call to the server says the same, and asks the issuer nothing.
            other = await second.server(NAME).call_tool("whoami", {})
            assert other.result is not None and other.result.is_error
    assert server.grants == ["refresh_token"]  # one refresh, no loop
    assert stored(tmp_path)["resources"][url] == {}  # the refused grant is gone
    # The next pool does not try the dropped grant again.
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as third:
            assert NAME in third.needs_authorization
    assert server.grants == ["refresh_token"]


async def test_a_server_never_authorized_waits_without_stopping_the_other_servers(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as nobody:
            assert nobody.needs_authorization == {NAME: "no authorization is kept for it"}
    assert server.authorizations == 0 and server.grants == []
    # Waiting for a person is no error: the SDK's flow does not log it as one.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records


async def test_a_server_waiting_for_authorization_says_so_on_every_call_path(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    hint = "needs authorization (no authorization is kept for it); run: nativemcp auth login"
    with anyio.fail_after(20):
        async with pool(url, tmp_path) as running:
            # Its tools are not listed, yet a call by name says why, as the placeholder does.
            answer = await running.call_tool(f"{NAME}__whoami", {})
            assert answer.result is not None and answer.result.is_error
            assert hint in answer.result.content[0].text  # type: ignore[union-attr]
            with pytest.raises(ToolError, match=re.escape(hint)):
                await running.server(NAME).whoami()
            with pytest.raises(ToolError, match=re.escape(hint)):
                await running.server(NAME).tool("whoami")()
            with pytest.raises(UnknownTool, match="'elsewhere__whoami'"):
                await running.call_tool("elsewhere__whoami", {})
    assert server.authorizations == 0 and server.grants == []


async def test_client_credentials_get_a_token_without_a_person_and_keep_it_not_the_secret(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    oauth = {"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}
    oauth["grantType"] = "client_credentials"
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth=oauth) as machine:
            assert await whoami(machine) == "authorized"
        async with pool(url, tmp_path, oauth=oauth) as again:
            assert await whoami(again) == "authorized"
    assert server.grants == ["client_credentials"] and server.authorizations == 0
    path = tmp_path / GRANTS_FOLDER / GRANTS_DB
    assert CLIENT_SECRET.encode() not in path.read_bytes()  # it stays in the configuration
    assert stored(tmp_path)["client"]["client_id"] == CLIENT_ID


async def test_client_credentials_with_a_wrong_secret_fail_to_start_naming_the_server(
    oauth_issuer: tuple[Issuer, str],
) -> None:
    _, url = oauth_issuer
    oauth = {"clientId": CLIENT_ID, "clientSecret": "wrong", "grantType": "client_credentials"}
    with anyio.fail_after(20), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, None, oauth=oauth):
            pass
    assert "invalid_client" in str(caught.value) and "wrong" not in str(caught.value)


async def test_without_a_data_folder_the_grant_lives_in_memory_only(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = oauth_issuer
    monkeypatch.chdir(tmp_path)
    hook = Following()
    with anyio.fail_after(20):
        async with pool(url, None, oauth_redirect=hook) as memory:
            assert await whoami(memory) == "authorized"
            assert await whoami(memory) == "authorized"
    assert len(hook.seen) == 1
    assert [path async for path in anyio.Path(tmp_path).iterdir()] == []


async def test_a_served_hub_answers_its_clients_itself_while_upstream_needs_authorization(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer
    served = pool(url, tmp_path)
    with anyio.fail_after(30):
        async with serving(http_app(served)) as base, Client(f"{base}/mcp") as client:
            # The upstream 401 is the hub's business: its client is served, not refused.
            listed = await client.list_tools()
            (tool,) = listed.tools
            answer = await client.call_tool(tool.name, {})
    assert tool.name.endswith("needs_authorization")
    assert answer.is_error
    text = answer.content[0].text  # type: ignore[union-attr]
    assert "run: nativemcp auth login remote" in text


@pytest.mark.parametrize(("secret", "outcome"), [(CLIENT_SECRET, "revoked"), ("wrong", "refused")])
async def test_revoking_a_confidential_clients_token_authenticates_the_client(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, secret: str, outcome: str
) -> None:
    server, url = oauth_issuer
    server.access["kept-token"] = CLIENT_ID
    store = GrantStore(tmp_path, url)
    await store.set_client_info(
        OAuthClientInformationFull(
            client_id=CLIENT_ID,
            client_secret=secret,
            token_endpoint_auth_method="client_secret_basic",
            redirect_uris=None,
            issuer=server.base,
        )
    )
    await store.set_tokens(OAuthToken(access_token="kept-token"))
    with anyio.fail_after(10):
        said = await revoke(store, url)
    assert said.startswith(f"{outcome} ") or said.startswith(f"the issuer {outcome}"), said
    assert ("kept-token" in server.access) is (outcome == "refused")


async def test_a_step_up_asks_for_the_wider_scope_through_the_redirect_hook(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer
    await authorize(url, tmp_path)  # the first grant: scope mcp
    hook = Following()
    with anyio.fail_after(30):
        async with pool(url, tmp_path, oauth_redirect=hook) as p:
            answer = await p.call_tool(f"{NAME}__admin", {})
    assert answer.result is not None and not answer.result.is_error, answer
    assert len(hook.seen) == 1 and "scope=mcp+admin" in hook.seen[0]
    assert stored(tmp_path)["resources"][url]["scope"] == "mcp admin"


async def test_a_step_up_without_a_person_keeps_the_grant_for_the_other_tools(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer
    await authorize(url, tmp_path)
    kept = stored(tmp_path)["resources"][url]["access_token"]
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as p:
            answer = await p.call_tool(f"{NAME}__admin", {})
            assert await whoami(p) == "authorized"  # the connection and the grant stand
    assert answer.result is not None and answer.result.is_error, answer
    text = answer.result.content[0].text  # type: ignore[union-attr]
    asked = "asks for scope 'mcp admin' to call 'admin'; the grant has 'mcp', without 'admin'"
    assert asked in text
    assert 'add \'admin\' to the entry\'s "oauth" "scopes"' in text
    assert "run: nativemcp auth login remote" in text
    assert stored(tmp_path)["resources"][url]["access_token"] == kept


@pytest.mark.parametrize(("scopes", "asked"), [(["mcp"], "mcp"), ([], "admin")])
async def test_the_entrys_scopes_win_over_the_scope_the_servers_challenge_names(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, scopes: list[str], asked: str
) -> None:
    server, url = oauth_issuer
    server.challenge_scope = "admin"
    hook = Following()
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth={"scopes": scopes}, oauth_redirect=hook) as p:
            assert await whoami(p) == "authorized"
    (address,) = hook.seen
    assert parse_qs(urlsplit(address).query)["scope"] == [asked]
    (registered,) = [c for c in server.clients.values() if c["client_id"].startswith("client-")]
    assert registered["scope"] == asked  # registered for what it asks, too
    assert stored(tmp_path)["resources"][url]["scope"] == asked


# -- back without a restart: a grant kept since, or `pool.authorize` ---------------------


async def test_a_grant_kept_by_auth_login_in_another_process_is_used_at_the_next_call(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with pool(url, tmp_path) as running:
            assert NAME in running.needs_authorization
            await log_in_elsewhere(NAME, url, tmp_path)
            # A tool that was not listed is found once the server is back.
            assert await whoami(running) == "authorized"
            assert running.needs_authorization == {}
    assert server.authorizations == 1 and server.grants == ["authorization_code"]


async def granted_meanwhile(running: WorkerPool, url: str, data_dir: Path) -> str:
    """Authorize ``running``'s waiting server from another pool, as ``auth login`` would
    (the grant file is written); the name of the placeholder tool listed before."""
    (placeholder,) = await running.list_tools()
    await authorize(url, data_dir)
    return placeholder.name


async def test_a_listing_notices_a_grant_kept_since_and_lists_the_servers_tools(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as running:
            placeholder = await granted_meanwhile(running, url, tmp_path)
            names = {tool.name for tool in await running.list_tools()}
    assert names == {f"{NAME}__whoami", f"{NAME}__admin"}
    assert placeholder == f"{NAME}__needs_authorization"


async def test_the_placeholder_called_after_a_grant_came_says_the_server_is_back(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as running:
            back = await running.call_tool(await granted_meanwhile(running, url, tmp_path), {})
            assert await whoami(running) == "authorized"
    assert back.result is not None and not back.result.is_error
    assert "is authorized" in back.result.content[0].text  # type: ignore[union-attr]


async def test_uses_without_a_new_grant_ask_nobody_and_try_nothing_again(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, url = oauth_issuer
    caplog.set_level(logging.WARNING, "nativemcp.external")
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as running:
            for _ in range(3):
                (tool,) = await running.list_tools()
                answer = await running.call_tool(tool.name, {})
                assert answer.result is not None and answer.result.is_error
    gave_up = [r for r in caplog.records if "needs authorization" in r.getMessage()]
    assert len(gave_up) == 1  # one attempt, at start: no reconnect per use
    assert server.authorizations == 0 and server.grants == []


async def test_pool_authorize_asks_through_the_hook_and_brings_the_tools_back(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    hook = Following()
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as running:
            await running.authorize(NAME, hook)
            assert running.needs_authorization == {}
            assert await whoami(running) == "authorized"
            await running.authorize(NAME, hook)  # authorized already: nothing asked
    assert len(hook.seen) == 1 and server.authorizations == 1
    assert stored(tmp_path)["resources"][url]["access_token"] in server.access


async def test_pool_authorize_without_a_hook_or_a_grant_raises_and_the_server_still_waits(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as running:
            with pytest.raises(NeedsAuthorization, match="no oauth_redirect") as caught:
                await running.authorize(NAME)
            assert "run: nativemcp auth login remote" in str(caught.value)
            with pytest.raises(UnknownServer, match="'elsewhere'"):
                await running.authorize("elsewhere")
            assert NAME in running.needs_authorization
            # A request that needs the connection says why at once (no time limit hit).
            with pytest.raises(ServerStartError, match="run: nativemcp auth login remote"):
                await running.server(NAME).ping()
    assert server.authorizations == 0
