"""Workload identity federation (SEP-1933) through the pool: the workload's platform JWT,
read anew from a file, a variable or the ``oauth_assertion`` hook, exchanged by the RFC
7523 jwt-bearer grant at the entry's issuer (``_dpop_server``, which also binds the
token by DPoP when asked); a new token with a fresh JWT when the old one is refused;
nothing written to the data folder; a bad source or a refusal named, never retried.
No Node: the official suite's ``auth/wif-jwt-bearer`` runs in ``.ci/conformance``.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _dpop_server import ProvingIssuer, proving_server
from _oauth_server import JWT_BEARER, whoami

from nativemcp.proxy import ServerStartError, WorkerPool
from nativemcp.proxy.external import OAuthSettings, load_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


def workload_jwt() -> str:
    """A JWT-shaped workload token (the issuer here checks it is one it handed out)."""
    return ".".join(secrets.token_urlsafe(12) for _ in range(3))


def pool(
    url: str,
    issuer: ProvingIssuer,
    data_dir: Path | None,
    hook: Callable[[str, str], Awaitable[str]] | None = None,
    **oauth: str,
) -> WorkerPool:
    settings = {"grantType": "workload_identity", "issuer": issuer.base, **oauth}
    return WorkerPool(
        data_dir=data_dir,
        builtins=[],
        mcp_servers={"remote": {"type": "http", "url": url, "oauth": settings}},
        oauth_assertion=hook,
    )


@pytest.fixture
async def proving(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ProvingIssuer, str]]:
    issuer = ProvingIssuer(**getattr(request, "param", {}))
    async with proving_server(issuer) as url:
        yield issuer, url


async def test_the_workload_jwt_file_is_exchanged_at_the_issuer_and_read_anew_for_a_new_token(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    token_file = tmp_path / "token"
    first_jwt, second_jwt = workload_jwt(), workload_jwt()
    issuer.assertions = {first_jwt, second_jwt}
    token_file.write_text(first_jwt + "\n")
    with anyio.fail_after(30):
        async with pool(url, issuer, tmp_path, assertionFile=str(token_file)) as first:
            assert await whoami(first) == "authorized"
            # The platform rotates the JWT; the issuer forgets the token it gave.
            token_file.write_text(second_jwt)
            issuer.tokens.clear()
            assert await whoami(first) == "authorized"
    assert issuer.errors == []
    forms = issuer.token_forms
    assert [f["grant_type"] for f in forms] == [JWT_BEARER, JWT_BEARER]
    assert [f["assertion"] for f in forms] == [first_jwt, second_jwt]
    assert all(f["resource"] == url and "client_id" not in f for f in forms)
    # This issuer takes DPoP: the workload's tokens are bound and proved like any other.
    assert all(proof is not None for proof in issuer.token_proofs)
    assert set(issuer.schemes) == {"DPoP"}
    assert not (tmp_path / "oauth").exists()  # SEP-1933: its tokens are not persisted


@pytest.mark.parametrize("proving", [{"dpop": False}], indirect=True)
async def test_the_workload_jwt_can_come_from_a_variable_or_the_hook_with_a_client_id(
    proving: tuple[ProvingIssuer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    issuer, url = proving
    from_env, from_hook = workload_jwt(), workload_jwt()
    issuer.assertions = {from_env, from_hook}
    monkeypatch.setenv("WORKLOAD_JWT", from_env)
    asked: list[tuple[str, str]] = []

    async def hook(audience: str, resource: str) -> str:
        asked.append((audience, resource))
        return from_hook

    with anyio.fail_after(30):
        async with pool(url, issuer, None, assertionEnv="WORKLOAD_JWT", clientId="w1") as one:
            assert await whoami(one) == "authorized"
        async with pool(url, issuer, None, hook=hook, clientId="w2", clientSecret="s") as two:
            assert await whoami(two) == "authorized"
    assert [f["assertion"] for f in issuer.token_forms] == [from_env, from_hook]
    assert issuer.token_forms[0]["client_id"] == "w1"  # a public client names itself
    basic = "Basic " + base64.b64encode(b"w2:s").decode()  # a confidential one signs in
    assert issuer.token_auth == [None, basic] and "client_id" not in issuer.token_forms[1]
    assert asked == [(issuer.base, url)] and set(issuer.schemes) == {"Bearer"}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read the workload identity token file"),
        ("", "is empty"),
        ("not a jwt", "is not a JWT"),
    ],
)
async def test_a_missing_empty_or_malformed_workload_jwt_fails_the_start_and_asks_nothing(
    proving: tuple[ProvingIssuer, str], tmp_path: Path, content: str | None, said: str
) -> None:
    issuer, url = proving
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    with anyio.fail_after(20), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, issuer, None, assertionFile=str(token_file)):
            pass
    assert said in str(caught.value) and str(token_file) in str(caught.value)
    assert issuer.token_forms == []


async def test_without_a_jwt_source_or_hook_the_server_waits_and_says_what_is_missing(
    proving: tuple[ProvingIssuer, str],
) -> None:
    issuer, url = proving
    with anyio.fail_after(20):
        async with pool(url, issuer, None) as waiting:
            reason = waiting.needs_authorization["remote"]
    assert "assertionFile" in reason and "oauth_assertion" in reason
    assert issuer.token_forms == []


async def test_a_refused_workload_jwt_is_named_and_not_retried_or_swapped_for_another_grant(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    token_file = tmp_path / "token"
    refused = workload_jwt()
    token_file.write_text(refused)
    with anyio.fail_after(20), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, issuer, None, assertionFile=str(token_file)):
            pass
    assert "invalid_grant" in str(caught.value) and refused not in str(caught.value)
    assert [f["grant_type"] for f in issuer.token_forms] == [JWT_BEARER]


def settings(oauth: dict[str, Any]) -> OAuthSettings | None:
    entry = {"url": "https://mcp.example/mcp", "oauth": oauth}
    (spec,) = load_mcp_servers({"mcpServers": {"gh": entry}}, environ={"T": "/run/token"})
    return spec.oauth


WIF = {"grantType": "workload_identity", "issuer": "https://auth.example"}


def test_a_workload_identity_entry_is_read_with_its_source_and_issuer() -> None:
    read = settings({**WIF, "assertionFile": "${T}", "clientId": "w1"})
    assert read == OAuthSettings(
        grant="workload_identity",
        issuer="https://auth.example",
        assertion_file="/run/token",
        client_id="w1",
    )


@pytest.mark.parametrize(
    ("oauth", "named"),
    [
        ({"grantType": "workload_identity"}, "workload_identity needs 'oauth.issuer'"),
        ({**WIF, "assertionFile": "/t", "assertionEnv": "T"}, "are two sources: name one"),
        ({**WIF, "assertionEnv": "NOT-A-NAME"}, "must be an environment variable's name"),
        ({**WIF, "assertionFile": ""}, "'oauth.assertionFile' is empty"),
        ({**WIF, "clientSecret": "s"}, "'oauth.clientSecret' needs 'oauth.clientId'"),
        ({"assertionFile": "/t"}, "'oauth.assertionFile' is for 'grantType': 'workload_identity'"),
        ({**WIF, "privateKey": "k"}, "'oauth.privateKey' is for 'grantType'"),
        ({**WIF, "issuer": "auth.example"}, "'oauth.issuer' must be"),
    ],
)
def test_a_bad_workload_identity_entry_is_an_error_naming_the_key(
    oauth: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match="MCP server 'gh'") as caught:
        settings(oauth)
    assert named in str(caught.value)


def test_auth_status_says_a_workload_identity_server_keeps_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nativemcp.proxy.cli import main

    config = tmp_path / "mcp.json"
    entry = {"url": "https://mcp.example/mcp", "oauth": {**WIF, "assertionEnv": "T"}}
    config.write_text(json.dumps({"mcpServers": {"inventory": entry}}))
    assert main(["auth", "status", "--mcp-config", str(config), "--data-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "inventory: workload identity: a new token for each start, nothing kept" in printed
