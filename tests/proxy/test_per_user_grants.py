"""The parts of serve acting for each user that run without servers: the entry's
``grantScope`` and ``token_exchange`` settings and their mistakes, the pending consents
(one-time, expiring, bound to a user), the server's tools kept for every process (and a
damaged row of them), each user's key, and the caller's token that never prints. The
end-to-end tests are in ``serve/test_serve_per_user.py``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from nativemcp.protocol import Tool
from nativemcp.proxy import CallerToken, CallOptions
from nativemcp.proxy.cli import main
from nativemcp.proxy.external import (
    Consents,
    UserServers,
    grant_place,
    load_mcp_servers,
    user_key,
)
from nativemcp.proxy.external.oauth import OAuthSettings, ToolRows

URL = "https://mcp.example.com/mcp"
AUTHORIZE = "https://issuer.example.com/authorize?client_id=c&state="


def entry(**fields: Any) -> dict[str, Any]:
    return {"mcpServers": {"gh": {"url": URL, **fields}}}


def test_grant_scope_user_is_read_and_the_pool_is_the_default() -> None:
    (per_user,) = load_mcp_servers(entry(oauth={}, grantScope="user"))
    (pooled,) = load_mcp_servers(entry(oauth={}))
    assert per_user.grant_scope == "user" and pooled.grant_scope == "pool"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"oauth": {}, "grantScope": "users"}, '\'grantScope\' must be "pool" or "user"'),
        ({"grantScope": "user"}, 'needs an "oauth" entry'),
        (
            {"oauth": {"grantType": "client_credentials", "clientId": "a", "clientSecret": "b"}}
            | {"grantScope": "user"},
            "authorization_code, the default, or token_exchange",
        ),
        (
            {"oauth": {"grantType": "token_exchange", "clientId": "a", "issuer": URL}},
            "exchanges each caller's token",
        ),
        (
            {"oauth": {"grantType": "token_exchange", "clientId": "a"}, "grantScope": "user"},
            "needs 'oauth.issuer'",
        ),
        ({"oauth": {"audience": "api"}}, "'oauth.audience' is for 'grantType': 'token_exchange'"),
    ],
)
def test_grant_scope_mistakes_are_named(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match="gh") as raised:
        load_mcp_servers(entry(**fields))
    assert said in str(raised.value)


def test_a_stdio_server_cannot_act_for_each_user() -> None:
    config = {"mcpServers": {"local": {"command": "true", "grantScope": "user"}}}
    with pytest.raises(ValueError, match='needs an "oauth" entry'):
        load_mcp_servers(config)


def test_token_exchange_settings_are_read() -> None:
    oauth = {
        "grantType": "token_exchange",
        "clientId": "serve",
        "clientSecret": "${SECRET}",
        "issuer": "https://issuer.example.com",
        "audience": "api://upstream",
    }
    (spec,) = load_mcp_servers(entry(oauth=oauth, grantScope="user"), environ={"SECRET": "s"})
    assert spec.oauth == OAuthSettings(
        client_id="serve",
        client_secret="s",
        grant="token_exchange",
        issuer="https://issuer.example.com",
        audience="api://upstream",
    )
    assert "'s'" not in repr(spec.oauth)


@pytest.mark.anyio
async def test_a_consent_is_finished_once_by_its_own_state() -> None:
    consents = Consents()
    consent = await consents.open(("iss", "alice"), "gh", AUTHORIZE + "abc123")
    assert consents.pending(("iss", "alice")) == [consent]
    assert consents.pending(("iss", "bob")) == []
    # A prefix or a suffix of the state is not the state.
    assert not await consents.finish("/oauth/callback?code=c&state=abc12")
    assert not await consents.finish("/oauth/callback?code=c&state=abc1234")
    assert not await consents.finish("/oauth/callback?code=c")
    assert not consent.returned.is_set()
    assert not await consent.came_back()
    assert await consents.finish("/oauth/callback?code=c&state=abc123&iss=i")
    # Back before its waiter took it: a call made now waits instead of asking again.
    assert await consent.came_back()
    with anyio.fail_after(10):
        target = await consent.wait()
    assert target == consent.target == "/oauth/callback?code=c&iss=i&state=abc123"
    assert consent.returned.is_set()
    # Used once: the same return again finds nothing.
    assert not await consents.finish("/oauth/callback?code=c&state=abc123")
    assert consents.pending(("iss", "alice")) == []


@pytest.mark.anyio
async def test_an_expired_consent_is_refused_and_its_waiter_gets_nothing() -> None:
    consents = Consents(ttl=0.0)
    consent = await consents.open(("iss", "alice"), "gh", AUTHORIZE + "s1")
    assert not await consents.finish("/oauth/callback?code=c&state=s1")
    with anyio.fail_after(10):
        assert await consent.wait() is None
    assert consent.returned.is_set() and consent.target is None


@pytest.mark.anyio
async def test_a_consent_asked_by_one_process_is_finished_at_another_sharing_the_grants(
    database_url: str | None, tmp_path: Path
) -> None:
    # Two serve processes' consents over one grant place (one SQLite file, or one
    # PostgreSQL): the callback lands on the second, the first's waiter goes on.
    asking = Consents(grant_place(tmp_path, database_url))
    elsewhere_place = grant_place(tmp_path, database_url)
    elsewhere = Consents(elsewhere_place)
    consent = await asking.open(("iss", "alice"), "gh", AUTHORIZE + "state-xyz")
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            # Two callbacks with one state at once: only one is taken.
            results: list[bool] = []

            async def land(consents: Consents) -> None:
                results.append(
                    await consents.finish("/oauth/callback?code=the-code&state=state-xyz")
                )

            group.start_soon(land, elsewhere)
            group.start_soon(land, Consents(grant_place(tmp_path, database_url)))
        # Back at another process, before this one's waiter looked: a call made now
        # here waits for it instead of sending the user to a used address.
        assert not consent.redeemed and await consent.came_back()
        target = await consent.wait()
    assert sorted(results) == [False, True]
    assert target == "/oauth/callback?code=the-code&state=state-xyz"
    # Taken once: neither process finishes it again, and no row is left.
    assert not await elsewhere.finish("/oauth/callback?code=the-code&state=state-xyz")
    assert not await asking.finish("/oauth/callback?code=the-code&state=state-xyz")
    rows, _ = elsewhere_place.run(f"SELECT * FROM {elsewhere_place.CONSENTS}", [])
    assert rows == []


@pytest.mark.anyio
async def test_a_pending_consents_row_holds_no_state_and_no_code_before_the_callback(
    tmp_path: Path,
) -> None:
    place = grant_place(tmp_path, None)
    await Consents(place).open(("iss", "alice"), "gh", AUTHORIZE + "secret-state")
    rows, _ = place.run(f"SELECT * FROM {place.CONSENTS}", [])
    assert len(rows) == 1
    assert not any("secret-state" in str(value) or "alice" in str(value) for value in rows[0])
    assert rows[0][2] is None  # nothing came back yet


@pytest.mark.anyio
async def test_an_authorization_request_without_a_state_is_not_kept() -> None:
    with pytest.raises(ValueError, match="state"):
        await Consents().open(("iss", "alice"), "gh", "https://issuer.example.com/authorize?a=b")


def _unused_server(authorization: Any) -> Any:
    raise AssertionError("no user connects in this test")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "document",
    [
        "not json",
        '{"name": "whoami"}',
        '[{"description": "no name"}]',
        '[{"name": "whoami", "inputSchema": "not an object"}]',
        "[]",
        b"\xff\xfe",
        42,
    ],
)
async def test_a_damaged_tool_row_is_logged_and_the_sign_in_tool_stays(
    document: object, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (spec,) = load_mcp_servers(entry(oauth={}, grantScope="user"))
    place = grant_place(tmp_path, None)
    handle = UserServers(spec, make=_unused_server, grants=place, consents=Consents(place))
    signing_in = handle.tools
    # Another process's row, written by hand: anything a column can hold.
    sql = f"INSERT INTO {place.TOOLS} VALUES (%s, %s, %s, %s, %s)"
    place.run(sql, ["gh", URL, document, "instructions", 1.0])
    with caplog.at_level(logging.WARNING, logger="nativemcp.external"):
        assert not await handle.freshen()
    assert handle.tools is signing_in
    assert [tool.name for tool in handle.tools] == ["needs_authorization"]
    assert handle.description == ""
    if document != "[]":  # an empty list is no damage: nothing was listed
        assert "the tool list kept for it is not a list of tools" in caplog.text


@pytest.mark.anyio
async def test_the_tools_kept_by_another_process_are_listed_as_this_entry_allows(
    tmp_path: Path,
) -> None:
    (spec,) = load_mcp_servers(entry(oauth={}, grantScope="user", disabledTools=["admin"]))
    place = grant_place(tmp_path, None)
    handle = UserServers(spec, make=_unused_server, grants=place, consents=Consents(place))
    assert not await handle.freshen()  # nothing kept yet
    # Another process (one SQLite file) kept what its connection listed.
    tools = [Tool(name="whoami", description="who"), Tool(name="admin")]
    elsewhere = ToolRows(grant_place(tmp_path, None))
    await anyio.to_thread.run_sync(elsewhere.write, "gh", URL, tools, "be nice")
    await anyio.to_thread.run_sync(elsewhere.write, "other", URL, [Tool(name="x")], "")
    before = handle.tools
    assert await handle.freshen()
    assert handle.tools is not before  # a new list: the catalog notices by identity
    assert handle.tools == [Tool(name="whoami", description="who")]
    assert handle.description == "be nice"
    # Known now: no more looks, and a later row does not replace a connection's list.
    kept = handle.tools
    await anyio.to_thread.run_sync(elsewhere.write, "gh", URL, [Tool(name="y")], "")
    assert not await handle.freshen()
    assert handle.tools is kept


@pytest.mark.anyio
async def test_tools_kept_for_another_entry_or_a_near_address_are_not_this_servers(
    tmp_path: Path,
) -> None:
    (spec,) = load_mcp_servers(entry(oauth={}, grantScope="user"))
    place = grant_place(tmp_path, None)
    handle = UserServers(spec, make=_unused_server, grants=place, consents=Consents(place))
    rows = ToolRows(place)
    # Another entry's name at this URL, and this name at a prefix or an extension of it.
    for server, resource in (("gh2", URL), ("g", URL), ("gh", URL + "x"), ("gh", URL[:-1])):
        await anyio.to_thread.run_sync(rows.write, server, resource, [Tool(name="x")], "")
    assert not await handle.freshen()
    assert [tool.name for tool in handle.tools] == ["needs_authorization"]


def test_serve_without_a_known_address_says_how_to_give_it() -> None:
    with pytest.raises(RuntimeError, match="--auth-resource"):
        Consents().redirect_uri()


def test_the_same_subject_at_another_issuer_is_another_user() -> None:
    assert user_key("https://idp", "alice") == user_key("https://idp", "alice")
    assert user_key("https://idp", "alice") != user_key("https://other-idp", "alice")
    assert user_key("https://idp", "alice") != user_key("https://idp", "bob")


def test_the_callers_token_never_prints() -> None:
    token = CallerToken("eyJ.secret.token")
    options = CallOptions(caller_token=token)
    assert "secret" not in repr(token) and "secret" not in repr(options)
    assert token.reveal() == "eyJ.secret.token"
    with pytest.raises(TypeError):
        msgspec.json.encode(token)  # it cannot go into a frame by accident


@pytest.mark.parametrize("transport", [["--transport", "stdio"], ["--transport", "http"]])
def test_serve_refuses_a_per_user_entry_without_oauth_before_anything_starts(
    transport: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(entry(oauth={}, grantScope="user")))
    argv = ["serve", *transport, "--mcp-config", str(config), "--data-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert 'MCP server \'gh\' has "grantScope": "user"' in err
    assert "--auth-issuer URL and --auth-audience AUD" in err
    assert len(err.strip().splitlines()) == 1
