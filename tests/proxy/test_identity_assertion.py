"""SEP-990 enterprise-managed authorization through the pool: the app's
``oauth_assertion`` hook gives the ID-JAG, the SDK's provider exchanges it (RFC 7523
jwt-bearer) at the entry's configured issuer, on loopback (``_oauth_server``). No Node:
the official suite's ``auth/cross-app-access-complete-flow`` runs in ``.ci/conformance``.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest
from _oauth_server import CLIENT_ID, CLIENT_SECRET, JWT_BEARER, Issuer, whoami

from nativemcp.proxy import ServerStartError, WorkerPool
from nativemcp.proxy.external import GRANTS_DB, GRANTS_FOLDER

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"


class IdentityProvider:
    """The app's leg 1 (pretend): an ID-JAG the issuer will accept, noting each ask."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, audience: str, resource: str) -> str:
        self.asked.append((audience, resource))
        id_jag = f"id-jag-{secrets.token_hex(4)}"
        self.issuer.id_jags.add(id_jag)
        return id_jag


def pool(url: str, issuer: Issuer, data_dir: Path | None, **extra: Any) -> WorkerPool:
    oauth = {
        "grantType": "identity_assertion",
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "issuer": issuer.base,
    }
    return WorkerPool(
        data_dir=data_dir,
        builtins=[],
        mcp_servers={NAME: {"type": "http", "url": url, "oauth": oauth}},
        **extra,
    )


async def test_the_hooks_id_jag_is_exchanged_at_the_configured_issuer_and_the_token_kept(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    idp = IdentityProvider(server)
    with anyio.fail_after(20):
        async with pool(url, server, tmp_path, oauth_assertion=idp) as first:
            assert await whoami(first) == "authorized"
        async with pool(url, server, tmp_path, oauth_assertion=idp) as again:
            assert await whoami(again) == "authorized"
    # The ID-JAG names the issuer as its audience and the MCP server as its resource.
    assert idp.asked == [(server.base, url)]
    assert server.grants == [JWT_BEARER] and server.authorizations == 0
    kept = tmp_path / GRANTS_FOLDER / GRANTS_DB
    assert CLIENT_SECRET.encode() not in kept.read_bytes()


async def test_without_an_assertion_hook_the_server_waits_for_authorization(
    oauth_issuer: tuple[Issuer, str],
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(20):
        async with pool(url, server, None) as p:
            reason = p.needs_authorization[NAME]
            response = await p.call_tool(f"{NAME}__needs_authorization", {})
    assert "oauth_assertion" in reason and "ID-JAG" in reason
    assert response.result is not None and response.result.is_error
    assert server.grants == []


async def test_an_id_jag_the_issuer_refuses_fails_the_start_naming_the_server(
    oauth_issuer: tuple[Issuer, str],
) -> None:
    server, url = oauth_issuer

    def forged(audience: str, resource: str) -> str:
        return "not-from-the-identity-provider"  # a plain function is a hook too

    with anyio.fail_after(20), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, server, None, oauth_assertion=forged):
            pass
    assert "invalid_grant" in str(caught.value) and CLIENT_SECRET not in str(caught.value)
    assert server.grants == [JWT_BEARER]


async def test_a_token_answer_that_trickles_fails_the_exchange_with_the_reason(
    oauth_issuer: tuple[Issuer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nativemcp.proxy.external.oauth import _refresh_on_401

    server, url = oauth_issuer
    monkeypatch.setattr(_refresh_on_401, "ANSWER_SECONDS", 2.0)  # 30 s in all, really
    server.token_answer = "trickle"
    idp = IdentityProvider(server)
    with anyio.fail_after(15), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, server, None, oauth_assertion=idp):
            pass
    assert f"the answer to POST {server.base}/token took more than 2 s" in str(caught.value)
