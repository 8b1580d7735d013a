"""Credentials belong to the issuer that granted them (RFC 9207, SEP-2352): a refresh
token and a client secret go only to that issuer's token endpoint, never to the MCP
server. The issuer and the MCP server here are on two origins, and the MCP server
records every request it receives (``_oauth_server.issuer_apart``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _grants import expire, stored
from _oauth_server import Issuer, Recording, follow, issuer_apart, whoami
from _oauth_server import oauth_pool as pool
from _process import free_port

from nativemcp.proxy import ServerStartError

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"
SECRET = "pre-secret"


@pytest.fixture
async def apart() -> AsyncIterator[tuple[Issuer, str, Recording]]:
    issuer = Issuer()
    async with issuer_apart(issuer) as (url, recording):
        yield issuer, url, recording


def kept(data_dir: Path, url: str) -> dict[str, Any]:
    tokens: dict[str, Any] = stored(data_dir)["resources"][url]
    return tokens


def pre_registered(issuer: Issuer) -> dict[str, Any]:
    """A confidential client registered at ``issuer`` beforehand, as an entry names it."""
    port = free_port()
    issuer.clients["pre"] = {
        "client_id": "pre",
        "client_secret": SECRET,
        "redirect_uris": [f"http://localhost:{port}/callback"],
    }
    return {"clientId": "pre", "clientSecret": SECRET, "callbackPort": port}


@pytest.mark.parametrize("client", ["dynamically registered", "pre-registered"])
async def test_a_pool_started_after_its_token_expired_refreshes_only_at_the_issuer(
    apart: tuple[Issuer, str, Recording], tmp_path: Path, client: str
) -> None:
    issuer, url, recording = apart
    oauth = pre_registered(issuer) if client == "pre-registered" else {}
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    expire(tmp_path, url)
    refresh_token = kept(tmp_path, url)["refresh_token"]
    issuer.grants.clear()
    recording.received.clear()
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth) as second:
            assert await whoami(second) == "authorized"
            assert second.needs_authorization == {}
    assert issuer.grants == ["refresh_token"] and issuer.authorizations == 1
    assert kept(tmp_path, url)["refresh_token"] != refresh_token  # the rotated one is kept
    assert recording.received, "the MCP server was reached"
    for request in recording.received:
        assert not request.carries(refresh_token), request
        assert not request.carries(SECRET), request
        assert not request.path.startswith("/token"), request


async def test_a_refresh_whose_issuer_cannot_be_read_is_not_sent_and_the_grant_is_kept(
    apart: tuple[Issuer, str, Recording], tmp_path: Path
) -> None:
    issuer, url, recording = apart
    oauth = pre_registered(issuer)
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    expire(tmp_path, url)
    refresh_token = kept(tmp_path, url)["refresh_token"]
    issuer.hide_metadata = True
    issuer.grants.clear()
    recording.received.clear()
    with anyio.fail_after(20), pytest.raises(ServerStartError) as caught:
        async with pool(url, tmp_path, oauth):
            pass
    assert "not sending the refresh token" in str(caught.value)
    assert issuer.base in str(caught.value) and refresh_token not in str(caught.value)
    assert issuer.grants == []
    for request in recording.received:
        assert not request.carries(refresh_token) and not request.carries(SECRET), request
    assert kept(tmp_path, url)["refresh_token"] == refresh_token  # kept for a later try


async def test_a_legacy_server_that_is_its_own_issuer_is_refreshed_at_its_token_path(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    # 2025-03-26: no authorization-server metadata; the MCP server's origin is the
    # issuer, and /token there is its token endpoint by that revision's defaults.
    server, url = oauth_issuer
    server.hide_metadata = True
    with anyio.fail_after(20):
        async with pool(url, tmp_path, {}, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    expire(tmp_path, url)
    server.grants.clear()
    with anyio.fail_after(20):
        async with pool(url, tmp_path, {}) as second:
            assert await whoami(second) == "authorized"
    assert server.grants == ["refresh_token"] and server.authorizations == 1
