"""``nativemcp auth status|logout --user SUBJECT``: one user's own grants (the ones serve
keeps per caller), in the data folder or a ``--database-url``, against a real issuer
that revokes (RFC 7009). No token is ever printed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _oauth_server import Issuer, protected_server
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from nativemcp.proxy.cli import main
from nativemcp.proxy.external import GrantStore, grant_place, user_key

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

IDP = "https://idp.example"
"""Serve's callers' identity provider (whose subjects name the users)."""
OTHER_IDP = "https://other-idp.example"


@pytest.fixture
async def remote(tmp_path: Path) -> AsyncIterator[tuple[Issuer, str, Path]]:
    """The upstream issuer, its MCP server's URL, and an mcp.json naming it ``remote``."""
    issuer = Issuer()
    async with protected_server(issuer) as url:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": url, "oauth": {}}}}))
        yield issuer, url, config


async def grant(issuer: Issuer, url: str, place_of: tuple[Path, str | None], user: str) -> str:
    """Keep a grant of the issuer's for ``user``, as serve would; its refresh token."""
    client_id = f"client-{len(issuer.clients)}"
    issuer.clients[client_id] = {"client_id": client_id}
    access, refresh = f"access-{user}", f"refresh-{user}"
    issuer.access[access] = issuer.refresh[refresh] = client_id
    store = GrantStore(grant_place(*place_of), url, user=user)
    info = OAuthClientInformationFull(client_id=client_id, redirect_uris=None, issuer=issuer.base)
    await store.set_client_info(info)
    await store.set_tokens(OAuthToken(access_token=access, refresh_token=refresh, scope="mcp"))
    return refresh


async def cli(*argv: str) -> int:
    """The real entry point, in a thread (it runs its own event loop)."""
    return await anyio.to_thread.run_sync(main, list(argv))


def options(config: Path, data: Path, database_url: str | None) -> list[str]:
    given = ["--mcp-config", str(config), "--data-dir", str(data)]
    return [*given, "--database-url", database_url] if database_url else given


async def test_status_and_logout_for_a_user_touch_only_that_users_grants(
    remote: tuple[Issuer, str, Path],
    tmp_path: Path,
    database_url: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    issuer, url, config = remote
    data = tmp_path / "data"
    where = (data, database_url)
    alice, bob = user_key(IDP, "alice"), user_key(IDP, "bob")
    alice_refresh = await grant(issuer, url, where, alice)
    await grant(issuer, url, where, bob)
    given = options(config, data, database_url)
    with anyio.fail_after(30):
        assert await cli("auth", "status", "--user", "alice", *given) == 0
        assert await cli("auth", "status", "--user", alice, *given) == 0  # the whole key
        shown = capsys.readouterr().out
        assert shown.count(f"{alice}: remote: authorized by {issuer.base}, scopes mcp") == 2
        assert "bob" not in shown and "access-" not in shown and "refresh-" not in shown

        assert await cli("auth", "logout", "--user", "alice", *given) == 0
        said = capsys.readouterr().out
        assert said.strip() == (
            f"Logged {alice} out of remote: its tokens are deleted (revoked at the issuer)."
        )
    assert issuer.revoked == [alice_refresh] and alice_refresh not in issuer.refresh
    kept = grant_place(*where).find(None, every_user=True)
    assert [g.key.user for g in kept] == [bob]
    # The pool's own grant is none of theirs: status without --user says so.
    with anyio.fail_after(30):
        assert await cli("auth", "status", *given) == 0
    own, others = capsys.readouterr().out.strip().split("\n")
    assert own.startswith("remote: not authorized; run: ")
    assert others == (
        "1 of serve's users keep grants of their own: see nativemcp auth status --user SUBJECT"
    )


async def test_an_unknown_user_or_server_is_a_usage_error_naming_what_is_known(
    remote: tuple[Issuer, str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    issuer, url, config = remote
    data = tmp_path / "data"
    await grant(issuer, url, (data, None), user_key(IDP, "bob"))
    given = options(config, data, None)
    with anyio.fail_after(30):
        assert await cli("auth", "status", "--user", "carol", *given) == 2
        assert await cli("auth", "logout", "--user", "bob", "nowhere", *given) == 2
        assert await cli("auth", "logout", *given) == 2
    err = capsys.readouterr().err
    assert f"no grant is kept for user 'carol'; users with grants: {IDP}#bob" in err
    assert "no OAuth server named 'nowhere'" in err
    assert "name the server to log out of (or give --user SUBJECT)" in err
    assert issuer.revoked == []


async def test_a_subject_two_identity_providers_know_is_named_whole(
    remote: tuple[Issuer, str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    issuer, url, config = remote
    data = tmp_path / "data"
    first, second = user_key(IDP, "alice"), user_key(OTHER_IDP, "alice")
    await grant(issuer, url, (data, None), first)
    second_refresh = await grant(issuer, url, (data, None), second)
    given = options(config, data, None)
    with anyio.fail_after(30):
        assert await cli("auth", "logout", "--user", "alice", *given) == 2
        assert f"give one of {first}, {second}" in capsys.readouterr().err
        assert await cli("auth", "logout", "--user", second, "remote", *given) == 0
    assert issuer.revoked == [second_refresh]
    kept = grant_place(data, None).find(None, every_user=True)
    assert [g.key.user for g in kept] == [first]
