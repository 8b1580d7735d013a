"""OAuth failures that explain themselves: a server that refuses the token just
granted, an issuer that offers no dynamic registration, a step-up the issuer did not
grant. Each says what happened and stops; nobody is sent to a browser twice."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import anyio
import httpx2
import pytest
from _oauth_server import Following, Issuer, follow, issuer_apart
from _oauth_server import oauth_pool as pool

from nativemcp.proxy.cli._auth import log_in
from nativemcp.proxy.external import GRANTS_FOLDER, NeedsAuthorization, load_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"
NO_AUDIENCE = "Token is missing the aud claim"


async def test_a_server_that_refuses_the_fresh_token_says_why_and_asks_nobody_again(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    server.refuse_tokens = NO_AUDIENCE
    hook = Following()
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth_redirect=hook) as running:
            reason = running.needs_authorization[NAME]
    assert f"invalid_token: {NO_AUDIENCE}" in reason
    assert "refused the token the authorization server had just granted" in reason
    assert len(hook.seen) == 1 and server.authorizations == 1


async def test_auth_login_against_a_server_that_refuses_the_fresh_token_stops_with_its_words(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    server.refuse_tokens = NO_AUDIENCE
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {NAME: {"url": url, "oauth": {}}}}))
    (spec,) = load_mcp_servers(config)
    out = io.StringIO()
    opened: list[str] = []

    async def browse(address: str) -> None:
        # The issuer answers at once; the browser comes back to the login's listener.
        async with httpx2.AsyncClient(follow_redirects=True) as http:
            await http.get(address)

    async with anyio.create_task_group() as browsers:

        def open_url(address: str) -> None:
            opened.append(address)
            browsers.start_soon(browse, address)

        with anyio.fail_after(20), pytest.raises(NeedsAuthorization) as caught:
            await log_in(spec, tmp_path / GRANTS_FOLDER, open_url, out)
    assert f"invalid_token: {NO_AUDIENCE}" in caught.value.reason
    assert len(opened) == 1 and out.getvalue().count("/authorize?") == 1


async def test_an_issuer_without_registration_is_named_and_nothing_registers_at_the_mcp_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = Issuer()
    server.offer_registration = False
    hook = Following()
    async with issuer_apart(server) as (url, recording):
        with anyio.fail_after(20):
            async with pool(url, tmp_path, oauth_redirect=hook) as running:
                reason = running.needs_authorization[NAME]
    assert f"the authorization server {server.base}" in reason
    assert "offers no dynamic registration" in reason and '"clientId"' in reason
    assert hook.seen == [] and server.authorizations == 0
    assert [r.path for r in recording.received if r.method == "POST" and "register" in r.path] == []
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_step_up_the_issuer_did_not_grant_says_what_was_asked_and_granted(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    server.grantable = {"mcp"}  # the entry asks for admin; the issuer does not give it
    oauth = {"scopes": ["mcp", "admin"]}
    with anyio.fail_after(30):
        async with pool(url, tmp_path, oauth, oauth_redirect=follow):
            pass
        async with pool(url, tmp_path, oauth) as running:
            answer = await running.call_tool(f"{NAME}__admin", {})
    assert answer.result is not None and answer.result.is_error
    text = answer.result.content[0].text  # type: ignore[union-attr]
    asked = "asks for scope 'mcp admin' to call 'admin'; the grant has 'mcp', without 'admin'"
    assert asked in text
    assert "the entry asks for 'mcp admin' and the authorization server did not grant it" in text
    assert "add 'admin'" not in text
