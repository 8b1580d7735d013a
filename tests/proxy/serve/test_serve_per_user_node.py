"""serve acting for each user with npm's ``oauth2-mock-server`` as serve's issuer (a
third-party authorization server: its own RS256 keys, OpenID discovery, the password
grant for the users' logins) and a second issuer for the upstream (`_user_upstream`):
two users side by side, in both protocol eras, each calling the upstream with the grant
they consented to, none of serve's tokens upstream. Skipped without Node (fails under
``CI=true``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import serving
from _user_upstream import upstream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_serve_oauth_node import AUDIENCE, _login, _mock_server
from test_serve_per_user import Browser, Mode, _nothing_of

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.external import grant_place, user_grants, user_key
from nativemcp.proxy.serve import Authorization

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_users_of_a_third_party_issuer_each_call_the_upstream_as_themselves(
    mode: Mode, tmp_path: Path
) -> None:
    seen: dict[str, str] = {}
    tokens: list[str] = []
    async with _mock_server(tmp_path) as issuer, upstream(None) as (url, up, recording):
        issuer_url = issuer
        entry = {"url": url, "oauth": {}, "grantScope": "user"}
        pool = WorkerPool(builtins=[], mcp_servers={"up": entry}, timeout=30, data_dir=tmp_path)
        auth = Authorization(issuer=issuer, audience=AUDIENCE)
        async with serving(http_app(pool, auth=auth)) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(90):
                for user in ("ada", "bob"):
                    token = await _login(http, issuer, user, AUDIENCE)
                    tokens.append(token)
                    browser = Browser(f"{user}-at-upstream")
                    headers = {"authorization": f"Bearer {token}"}
                    async with httpx2.AsyncClient(headers=headers) as client_http:
                        transport = streamable_http_client(f"{base}/mcp", http_client=client_http)
                        async with Client(
                            transport, mode=mode, elicitation_callback=browser.elicit
                        ) as client:
                            if user == "ada":  # nobody has signed in: the tools are not known
                                await client.call_tool("needs_authorization", {})
                            result = await client.call_tool("whoami", {})
                            again = await client.call_tool("whoami", {})
                    block = result.content[0]
                    assert isinstance(block, types.TextContent) and not result.is_error
                    assert again.content == result.content
                    seen[user] = block.text
    assert seen == {"ada": "upstream user ada-at-upstream", "bob": "upstream user bob-at-upstream"}
    assert up.authorizations == ["ada-at-upstream", "bob-at-upstream"]
    # Each user's grant is a row of their own, under their issuer and subject.
    place = grant_place(tmp_path, None)
    for user in ("ada", "bob"):
        (grant,) = user_grants(place, user_key(issuer_url, user))
        assert grant.key.resource == url and grant.tokens["access_token"].startswith("up-")
    _nothing_of(recording, *tokens)
