"""Where OAuth grants are kept: the grant files, or PostgreSQL when the pool (or the
``auth`` verbs) have a ``database_url``, shared by replicas. The PostgreSQL cases skip
without ``NATIVEMCP_TEST_DATABASE_URL`` (``.ci/postgres``); the store's own rules are
checked on both places."""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio
import pytest
from _oauth_server import Issuer, follow, log_in_elsewhere
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from nativemcp.protocol import DatabaseUnavailable
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.cli import main
from nativemcp.proxy.external import GRANTS_FOLDER, GrantStore, GrantTable, grant_place

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"
RESOURCE = "https://mcp.example/mcp"


def store(data_dir: Path, database_url: str | None) -> GrantStore:
    return GrantStore(grant_place(data_dir, database_url), RESOURCE)


def client(client_id: str = "client-1") -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=client_id, redirect_uris=None, issuer="https://issuer.example"
    )


async def test_a_grant_kept_by_one_store_is_read_by_another_of_the_same_place(
    tmp_path: Path, database_url: str | None
) -> None:
    one = store(tmp_path, database_url)
    await one.set_client_info(client())
    await one.set_tokens(OAuthToken(access_token="a1", refresh_token="r1", expires_in=60))
    other = store(tmp_path, database_url)
    tokens = await other.get_tokens()
    assert tokens is not None and (tokens.access_token, tokens.refresh_token) == ("a1", "r1")
    shown = await other.status()
    assert shown is not None and shown.pop("expires_at") > 0
    assert shown == {
        "user": None,
        "issuer": "https://issuer.example",
        "client_id": "client-1",
        "resource": RESOURCE,
        "scope": None,
        "refreshable": True,
        "authorized": True,
    }
    # A new registration of another client drops the first client's tokens with it.
    await other.set_client_info(client("client-2"))
    assert await one.get_tokens() is None and await one.stored_client() == client("client-2")
    assert await one.forget() and await one.status() is None and not await other.forget()
    assert grant_place(tmp_path, database_url).find(None, every_user=True) == []


async def test_tokens_another_process_kept_since_are_not_dropped_with_the_refused_ones(
    tmp_path: Path, database_url: str | None
) -> None:
    mine = store(tmp_path, database_url)
    await mine.set_client_info(client())
    await mine.set_tokens(OAuthToken(access_token="old"))
    replica = store(tmp_path, database_url)
    await replica.set_tokens(OAuthToken(access_token="new"))  # refreshed elsewhere
    # This process's token was refused: the replica's newer one stays for the next use.
    assert await mine.forget_tokens()
    assert (await replica.get_tokens()) == OAuthToken(access_token="new")
    # The replica's own token refused: it goes.
    assert await replica.forget_tokens()
    assert await mine.get_tokens() is None
    assert await mine.stored_client() == client()  # the registration stays


async def test_replicas_on_one_database_share_the_grant_and_keep_no_file(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, postgres_url: str
) -> None:
    server, url = oauth_issuer

    def replica(folder: str, **hook: object) -> WorkerPool:
        return WorkerPool(
            data_dir=tmp_path / folder,
            database_url=postgres_url,
            builtins=[],
            mcp_servers={NAME: {"url": url, "oauth": {}}},
            **hook,  # type: ignore[arg-type]
        )

    with anyio.fail_after(30):
        async with replica("a", oauth_redirect=follow) as first, replica("b") as second:
            for pool in (first, second):
                answer = await pool.call_tool(f"{NAME}__whoami", {})
                assert answer.result is not None and not answer.result.is_error, answer
    assert server.authorizations == 1
    assert not (tmp_path / "a" / GRANTS_FOLDER).exists()
    assert not (tmp_path / "b" / GRANTS_FOLDER).exists()
    (kept,) = GrantTable(postgres_url).find(None, every_user=True)
    assert kept.key.issuer == server.base and kept.tokens["access_token"] in server.access


async def cli(*argv: str) -> int:
    """The real entry point, in a thread (it runs its own event loop)."""
    return await anyio.to_thread.run_sync(main, list(argv))


async def test_auth_login_status_and_logout_with_a_database_url_use_the_database(
    oauth_issuer: tuple[Issuer, str],
    tmp_path: Path,
    postgres_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, url = oauth_issuer
    await log_in_elsewhere(NAME, url, tmp_path, "--database-url", postgres_url)
    assert not (tmp_path / GRANTS_FOLDER).exists()
    options = ["--mcp-config", str(tmp_path / "mcp.json"), "--data-dir", str(tmp_path)]
    with anyio.fail_after(30):
        assert await cli("auth", "status", *options, "--database-url", postgres_url) == 0
        assert await cli("auth", "status", *options) == 0  # the data folder has none
        assert await cli("auth", "logout", NAME, *options, "--database-url", postgres_url) == 0
        assert await cli("auth", "status", *options, "--database-url", postgres_url) == 0
    with_db, without, logout, after = capsys.readouterr().out.strip().split("\n")
    assert with_db.startswith(f"{NAME}: authorized by {server.base}, scopes mcp")
    # The hint can be pasted: it carries the config and data folder typed (never the
    # database URL, which holds a password).
    hint = f"nativemcp auth login {NAME} {shlex.join(options)}"
    assert without == after == f"{NAME}: not authorized; run: {hint}"
    assert logout.startswith(f"Logged out of {NAME!r}") and "revoked at the issuer" in logout
    assert GrantTable(postgres_url).find(None, every_user=True) == []
    assert server.revoked


async def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    table = GrantTable("postgresql://user:s3cret@127.0.0.1:1/nowhere")
    with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1:1/nowhere") as caught:
        table.find(None)
    assert "s3cret" not in str(caught.value)
