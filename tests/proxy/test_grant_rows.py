"""Grants that do not lose updates: one row per grant, written by compare-and-set, and a
refresh that is single-flight per grant across replicas. The replicas are pools (and
processes) sharing one data folder's SQLite file or one PostgreSQL database, against a
real authorization server that rotates refresh tokens (``_oauth_server``: a refresh
token works once). The PostgreSQL cases skip without ``NATIVEMCP_TEST_DATABASE_URL``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from _oauth_server import Issuer, follow, oauth_pool, whoami
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.external import (
    GRANTS_FOLDER,
    Grant,
    GrantDatabase,
    GrantKey,
    GrantPlace,
    GrantStore,
    GrantTable,
    StaleGrant,
    grant_place,
)

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

ISSUER = "https://issuer.example"
ONE = "https://one.example/mcp"
TWO = "https://two.example/mcp"


def client() -> OAuthClientInformationFull:
    return OAuthClientInformationFull(client_id="client-1", redirect_uris=None, issuer=ISSUER)


def replica(url: str, data_dir: Path, database_url: str | None, **hook: Any) -> WorkerPool:
    """One replica: a pool of the OAuth server at ``url``, keeping its grants where
    every replica does."""
    return oauth_pool(url, data_dir, database_url=database_url, **hook)


def pool_grant(data_dir: Path, database_url: str | None) -> Grant:
    (grant,) = grant_place(data_dir, database_url).find(None, every_user=True)
    return grant


async def test_two_replicas_refreshing_one_grant_at_once_spend_its_refresh_token_once(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, database_url: str | None
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
        kept = pool_grant(tmp_path, database_url).tokens
        async with (
            replica(url, tmp_path, database_url) as one,
            replica(url, tmp_path, database_url) as two,
        ):
            for _ in range(3):
                # The server stops taking the access token both replicas hold: each
                # refreshes on its 401, at the same time.
                server.access.pop(kept["access_token"])
                answers: list[str] = []
                async with anyio.create_task_group() as tg:
                    for pool in (one, two):
                        tg.start_soon(_call, pool, answers)
                assert answers == ["authorized", "authorized"]
                now = pool_grant(tmp_path, database_url).tokens
                assert now["refresh_token"] in server.refresh  # the live one is kept
                assert now["access_token"] != kept["access_token"]
                kept = now
    # Three rounds, one refresh each: no refresh token was sent twice (the issuer
    # would have answered invalid_grant, and the replica would need a person).
    assert server.grants.count("refresh_token") == 3
    assert server.authorizations == 1
    assert pool_grant(tmp_path, database_url).refreshing_by is None


async def _call(pool: WorkerPool, answers: list[str]) -> None:
    answers.append(await whoami(pool))


async def test_a_replica_holding_spent_tokens_takes_the_ones_another_refreshed(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, database_url: str | None
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
        spent = pool_grant(tmp_path, database_url).tokens
        async with (
            replica(url, tmp_path, database_url) as one,
            replica(url, tmp_path, database_url) as two,
        ):
            assert await whoami(one) == await whoami(two) == "authorized"
            server.access.pop(spent["access_token"])
            assert await whoami(one) == "authorized"  # refreshed: the old refresh token is spent
            assert spent["refresh_token"] not in server.refresh
            # Two still holds the spent tokens: it takes one's instead of sending its own.
            assert await whoami(two) == "authorized"
    assert server.grants.count("refresh_token") == 1
    assert pool_grant(tmp_path, database_url).tokens["access_token"] in server.access


async def test_replicas_in_two_processes_refresh_an_expired_grant_once(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, database_url: str | None
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    place = grant_place(tmp_path, database_url)
    (grant,) = place.find(None, every_user=True)
    place.write(dataclasses.replace(grant, tokens={**grant.tokens, "expires_at": 1.0}))
    script = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from _oauth_server import oauth_pool, whoami\n"
        "async def main():\n"
        "    folder, database_url = Path(sys.argv[2]), sys.argv[3] or None\n"
        "    async with oauth_pool(sys.argv[1], folder, database_url=database_url) as p:\n"
        "        print(await whoami(p))\n"
        "if __name__ == '__main__':\n"
        "    anyio.run(main)\n"
    )
    tests = str(Path(__file__).parent.parent)
    command = [sys.executable, "-c", script, url, str(tmp_path), database_url or ""]
    outputs: list[bytes] = []

    async def run() -> None:
        done = await anyio.run_process(command, env=_with_path(tests), check=False)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        outputs.append(done.stdout)

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            tg.start_soon(run)
    assert [out.strip().splitlines()[-1] for out in outputs] == [b"authorized"] * 2
    assert server.grants.count("refresh_token") == 1
    assert server.authorizations == 1


def _with_path(folder: str) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (folder, env.get("PYTHONPATH")) if p)
    return env


async def test_replicas_writing_two_servers_of_one_issuer_and_client_keep_both(
    tmp_path: Path, database_url: str | None
) -> None:
    place = grant_place(tmp_path, database_url)
    stores = [GrantStore(place, resource, fixed_client=client()) for resource in (ONE, TWO)]
    for store in stores:
        await store.set_client_info(client())

    async def refresh(store: GrantStore, n: int) -> None:
        await store.set_tokens(OAuthToken(access_token=f"{store.resource}-{n}"))

    with anyio.fail_after(30):
        for n in range(5):
            async with anyio.create_task_group() as tg:
                for store in stores:
                    tg.start_soon(refresh, store, n)
    kept = {g.key.resource: g.tokens["access_token"] for g in place.find(None, every_user=True)}
    assert kept == {ONE: f"{ONE}-4", TWO: f"{TWO}-4"}


class Interleaved(GrantDatabase):
    """The data folder's grants, where another replica writes just before this one's
    next write (between its read and its compare-and-set)."""

    def __init__(self, folder: Path, meanwhile: Callable[[], None]) -> None:
        super().__init__(folder)
        self.meanwhile: Callable[[], None] | None = meanwhile
        self.stale = 0

    def write(self, grant: Grant) -> Grant:
        if self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        try:
            return super().write(grant)
        except StaleGrant:
            self.stale += 1
            raise


async def test_a_write_that_finds_its_grant_changed_since_it_read_reads_again_and_keeps_both(
    tmp_path: Path,
) -> None:
    folder = tmp_path / GRANTS_FOLDER
    other = GrantDatabase(folder)
    store = GrantStore(other, ONE, fixed_client=client())
    await store.set_client_info(client())
    await store.set_tokens(OAuthToken(access_token="a1", refresh_token="r1"))

    def another_replica_adds_a_field() -> None:
        (grant,) = other.find(None, ONE)
        other.write(dataclasses.replace(grant, extra={"dpop": {"kid": "k1"}}))

    interleaved = Interleaved(folder, another_replica_adds_a_field)
    mine = GrantStore(interleaved, ONE, fixed_client=client())
    await mine.set_tokens(OAuthToken(access_token="a2", refresh_token="r2"))
    assert interleaved.stale == 1  # the first compare-and-set lost, the second won
    (kept,) = other.find(None, ONE)
    assert kept.extra == {"dpop": {"kid": "k1"}}  # the other write is not lost
    assert (kept.tokens["access_token"], kept.tokens["refresh_token"]) == ("a2", "r2")
    with pytest.raises(StaleGrant):
        other.write(dataclasses.replace(kept, version=kept.version - 1))
    with pytest.raises(StaleGrant):
        other.write(dataclasses.replace(kept, version=0))  # it exists: no second insert


def _old_file(folder: Path, issuer: str, client_id: str, data: dict[str, Any]) -> Path:
    """A grant file as earlier versions wrote it."""
    digest = hashlib.sha256(f"{issuer}\n{client_id}".encode()).hexdigest()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{digest[:32]}.json"
    path.write_text(json.dumps(data))
    return path


OLD_GRANT: dict[str, Any] = {
    "issuer": ISSUER,
    "client": {"client_id": "client-1", "redirect_uris": ["http://localhost:4711/callback"]},
    "resources": {
        ONE: {
            "access_token": "a-one",
            "refresh_token": "r-one",
            "expires_at": 4e9,
            "dpop_key": {"kty": "EC", "crv": "P-256", "x": "x", "y": "y", "d": "d"},
        },
        TWO: {"access_token": "a-two", "scope": "mcp"},
    },
}


async def test_grant_files_of_earlier_versions_move_into_rows_on_first_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / GRANTS_FOLDER
    old = _old_file(folder, ISSUER, "client-1", OLD_GRANT)
    damaged = folder / "0123.json"
    damaged.write_text("{not json")
    one = GrantStore(grant_place(tmp_path, None), ONE)
    tokens = await one.get_tokens()
    assert tokens is not None and (tokens.access_token, tokens.refresh_token) == ("a-one", "r-one")
    # The DPoP key kept among the server's tokens moved to the row's extra.
    assert one.dpop_key == OLD_GRANT["resources"][ONE]["dpop_key"]
    assert await one.extra() == {"dpop_key": one.dpop_key}
    two = await GrantStore(grant_place(tmp_path, None), TWO).get_tokens()
    assert two is not None and (two.access_token, two.scope) == ("a-two", "mcp")
    client_info = await one.stored_client()
    assert client_info is not None and client_info.client_id == "client-1"
    assert not old.exists() and damaged.exists()  # a damaged file is left as it is
    keys = {grant.key for grant in GrantDatabase(folder).find(None, every_user=True)}
    assert keys == {GrantKey(None, ISSUER, "client-1", r) for r in (ONE, TWO)}


async def test_the_grant_table_of_earlier_versions_moves_into_rows_on_first_use(
    postgres_url: str,
) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE nativemcp_oauth_grants (issuer TEXT NOT NULL, client_id TEXT NOT"
            " NULL, grant_json TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
            " PRIMARY KEY (issuer, client_id))"
        )
        conn.execute(
            "INSERT INTO nativemcp_oauth_grants (issuer, client_id, grant_json)"
            " VALUES (%s, %s, %s)",
            (ISSUER, "client-1", json.dumps(OLD_GRANT)),
        )
    table: GrantPlace = GrantTable(postgres_url)
    store = GrantStore(table, TWO)
    tokens = await store.get_tokens()
    assert tokens is not None and tokens.access_token == "a-two"
    assert {g.key.resource for g in table.find(None, every_user=True)} == {ONE, TWO}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        (found,) = conn.execute("SELECT to_regclass('nativemcp_oauth_grants')").fetchone() or ()
    assert found is None


async def test_grants_of_two_users_and_the_pools_own_for_one_server_stay_apart(
    tmp_path: Path, database_url: str | None
) -> None:
    place = grant_place(tmp_path, database_url)
    stores = {
        user: GrantStore(place, ONE, user=user, fixed_client=client())
        for user in (None, f"{ISSUER}#alice", f"{ISSUER}#bob")
    }
    for user, store in stores.items():
        await store.set_tokens(OAuthToken(access_token=f"token-of-{user}"))
    for user, store in stores.items():
        tokens = await store.get_tokens()
        assert tokens is not None and tokens.access_token == f"token-of-{user}"
    assert await stores[f"{ISSUER}#alice"].forget()
    assert await stores[f"{ISSUER}#alice"].get_tokens() is None
    assert await stores[None].get_tokens() is not None
    users = {grant.key.user for grant in place.find(None, every_user=True)}
    assert users == {None, f"{ISSUER}#bob"}
    assert await anyio.to_thread.run_sync(place.find, None) == [
        g for g in place.find(None, every_user=True) if g.key.user is None
    ]


async def test_a_grants_extra_fields_outlive_new_tokens_(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, database_url: str | None
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
        (kept,) = grant_place(tmp_path, database_url).find(None, every_user=True)
        store = GrantStore(grant_place(tmp_path, database_url), url)
        assert await store.set_extra("dpop", {"kid": "k1"})
        assert await store.set_extra("note", 1) and await store.set_extra("note", None)
        async with replica(url, tmp_path, database_url) as again:
            server.access.pop(kept.tokens["access_token"])
            assert await whoami(again) == "authorized"  # refreshed: new tokens written
    assert server.grants.count("refresh_token") == 1
    assert await store.extra() == {"dpop": {"kid": "k1"}}
    assert not await GrantStore(grant_place(tmp_path, database_url), ONE).set_extra("x", 1)


async def test_a_claim_left_by_a_replica_that_died_lapses_and_a_refused_refresh_ends_its_own(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, database_url: str | None
) -> None:
    server, url = oauth_issuer
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url, oauth_redirect=follow) as first:
            assert await whoami(first) == "authorized"
    place = grant_place(tmp_path, database_url)
    (grant,) = place.find(None, every_user=True)
    # A replica claimed the refresh, then died: its claim ran out a moment ago.
    dead = dataclasses.replace(
        grant,
        tokens={**grant.tokens, "expires_at": 1.0},
        refreshing_by="a-replica-that-died",
        refreshing_until=time.time() - 1,
    )
    place.write(dead)
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url) as again:
            assert await whoami(again) == "authorized"
    (grant,) = place.find(None, every_user=True)
    assert server.grants.count("refresh_token") == 1 and grant.refreshing_by is None
    # The issuer refuses the next refresh: the refresher's claim ends with it.
    server.refuse_refresh = True
    place.write(dataclasses.replace(grant, tokens={**grant.tokens, "expires_at": 1.0}))
    with anyio.fail_after(60):
        async with replica(url, tmp_path, database_url) as refused:
            answer = await refused.call_tool("remote__whoami", {})
    assert answer.result is not None and answer.result.is_error
    assert server.grants.count("refresh_token") == 2
    (grant,) = place.find(None, every_user=True)
    assert grant.refreshing_by is None


async def test_tokens_written_while_another_replica_refreshes_leave_its_claim(
    tmp_path: Path, database_url: str | None
) -> None:
    place = grant_place(tmp_path, database_url)
    store = GrantStore(place, ONE, fixed_client=client())
    await store.set_tokens(OAuthToken(access_token="a1", refresh_token="r1"))
    (grant,) = place.find(None, ONE)
    claimed = dataclasses.replace(grant, refreshing_by="refresher", refreshing_until=4e9)
    place.write(claimed)
    # The same tokens again (a replica that took them), then new ones (a new sign-in):
    # until the refresher ends it, no replica may spend the refresh token it holds.
    await GrantStore(place, ONE).set_tokens(OAuthToken(access_token="a1", refresh_token="r1"))
    await GrantStore(place, ONE).set_tokens(OAuthToken(access_token="a2", refresh_token="r2"))
    (grant,) = place.find(None, ONE)
    assert (grant.refreshing_by, grant.tokens["access_token"]) == ("refresher", "a2")
