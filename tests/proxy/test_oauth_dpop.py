"""DPoP (RFC 9449) through the pool, against a real issuer and MCP server that verify
every proof (``_dpop_server``): token requests proved and the token bound, each MCP
request with a fresh proof of the same key, server nonces answered once and remembered,
the key kept with the grant across a restart, no proofs where the issuer takes none,
and a hostile nonce answer failing the start with the reason. No Node: the official
suite's ``auth/dpop`` and ``auth/dpop-nonce`` run in ``.ci/conformance``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from _dpop_server import AS_NONCE, RS_NONCE, ProvingIssuer, proving_server, thumbprint
from _oauth_server import CLIENT_ID, CLIENT_SECRET, whoami

from nativemcp.proxy import ServerStartError, WorkerPool
from nativemcp.proxy.external.oauth import GrantStore, grant_place
from nativemcp.proxy.external.oauth._dpop import DPoPKey, access_token_hash

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

MACHINE = {"grantType": "client_credentials", "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}


def pool(url: str, data_dir: Path | None) -> WorkerPool:
    return WorkerPool(
        data_dir=data_dir,
        builtins=[],
        mcp_servers={"remote": {"type": "http", "url": url, "oauth": MACHINE}},
    )


@pytest.fixture
async def proving(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ProvingIssuer, str]]:
    issuer = ProvingIssuer(**getattr(request, "param", {}))
    async with proving_server(issuer) as url:
        yield issuer, url


async def call(url: str, data_dir: Path | None, times: int = 1) -> None:
    """Start a pool of the one server and call its ``whoami`` ``times`` times."""
    with anyio.fail_after(20):
        async with pool(url, data_dir) as started:
            for _ in range(times):
                assert await whoami(started) == "authorized"


def kept_keys(data_dir: Path) -> list[dict[str, Any]]:
    """The DPoP keys kept in the grant rows (each in its grant's ``extra``)."""
    grants = grant_place(data_dir, None).find(None, every_user=True)
    return [grant.extra["dpop_key"] for grant in grants if "dpop_key" in grant.extra]


def test_a_proof_names_the_method_and_the_url_without_query_and_is_signed_by_its_jwk() -> None:
    key = DPoPKey.generate()
    proof = key.proof("post", "https://mcp.example/mcp?x=1#top", access_token="tok", nonce="n")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]), ["ES256"])
    assert claims["htm"] == "POST" and claims["htu"] == "https://mcp.example/mcp"
    assert claims["ath"] == access_token_hash("tok") and claims["nonce"] == "n"
    assert key.proof("GET", "https://mcp.example/mcp") != key.proof(
        "GET", "https://mcp.example/mcp"
    )
    # RFC 9449 §4.2's ath: base64url(SHA-256(token)), unpadded.
    assert access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU") == (
        "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    )
    again = DPoPKey.from_jwk(key.private_jwk())
    assert again.public_jwk == key.public_jwk
    with pytest.raises(ValueError, match="no private part"):
        DPoPKey.from_jwk(key.public_jwk)


async def test_a_dpop_issuer_binds_the_token_and_every_mcp_request_carries_a_verified_proof(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    await call(url, tmp_path, 2)
    assert issuer.errors == []
    (proved,) = issuer.token_proofs  # one token request, proved
    assert proved is not None and list(issuer.tokens.values()) == [proved.jkt]
    # Every request to the MCP server: the DPoP scheme, a fresh proof by the bound key.
    assert issuer.schemes and set(issuer.schemes) == {"DPoP"}
    assert len(issuer.resource_proofs) == len(issuer.schemes) >= 3
    assert {p.jkt for p in issuer.resource_proofs} == {proved.jkt}
    (kept,) = kept_keys(tmp_path)  # the key is kept with the token it is bound to
    assert thumbprint(kept) == proved.jkt and "d" in kept


async def test_a_kept_dpop_token_is_proved_with_its_kept_key_after_a_restart(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    with anyio.fail_after(30):
        async with pool(url, tmp_path) as first:
            assert await whoami(first) == "authorized"
        before = len(issuer.token_forms)
        async with pool(url, tmp_path) as second:
            assert await whoami(second) == "authorized"
    assert issuer.errors == [] and len(issuer.token_forms) == before == 1
    assert {p.jkt for p in issuer.resource_proofs} == set(issuer.tokens.values())


@pytest.mark.parametrize("proving", [{"refresh": True}], indirect=True)
async def test_a_kept_bound_token_that_expired_is_refreshed_with_a_proof_by_its_kept_key(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    await call(url, tmp_path)
    place = grant_place(tmp_path, None)
    (grant,) = place.find(None, every_user=True)
    expired = {**grant.tokens, "expires_at": 1.0}  # it expired while no pool ran
    place.write(dataclasses.replace(grant, tokens=expired))
    await call(url, tmp_path)
    assert issuer.errors == []
    grants = [form["grant_type"] for form in issuer.token_forms]
    assert grants == ["client_credentials", "refresh_token"]  # refreshed, not granted anew
    first, refreshed = issuer.token_proofs
    assert first is not None and refreshed is not None and refreshed.jkt == first.jkt
    assert set(issuer.tokens.values()) == {first.jkt} and len(issuer.tokens) == 2
    (again,) = kept_keys(tmp_path)
    assert thumbprint(again) == first.jkt


async def test_a_dpop_key_is_kept_in_its_grants_extra_with_its_tokens_and_dropped_with_them(
    tmp_path: Path,
) -> None:
    from mcp.shared.auth import OAuthToken

    resource = "https://mcp.example/mcp"
    store = GrantStore(grant_place(tmp_path, None), resource)
    key = store.dpop_key = DPoPKey.generate().private_jwk()
    await store.set_tokens(OAuthToken(access_token="bound", refresh_token="r1"))
    assert await store.set_extra("note", 1)
    other = GrantStore(grant_place(tmp_path, None), resource)  # another replica
    assert await other.get_tokens() is not None and other.dpop_key == key
    assert await other.extra() == {"dpop_key": key, "note": 1}
    await other.set_tokens(OAuthToken(access_token="bound-2", refresh_token="r2"))
    assert (await store.extra())["dpop_key"] == key  # new tokens, bound to the same key
    assert await other.forget_tokens()
    assert other.dpop_key is None and await store.extra() == {"note": 1}
    assert await store.get_tokens() is None and store.dpop_key is None


@pytest.mark.parametrize(
    "proving",
    [{"challenge": "Bearer"}, {"advertise": False}],
    ids=["the issuer's metadata", "the server's challenge"],
    indirect=True,
)
async def test_either_the_issuers_metadata_or_the_servers_challenge_alone_turns_dpop_on(
    proving: tuple[ProvingIssuer, str],
) -> None:
    issuer, url = proving
    await call(url, None)
    assert issuer.errors == [] and issuer.token_proofs[0] is not None
    assert set(issuer.schemes) == {"DPoP"}


@pytest.mark.parametrize("proving", [{"as_nonce": True, "rs_nonce": True}], indirect=True)
async def test_server_nonces_are_answered_once_each_and_remembered_for_the_next_proofs(
    proving: tuple[ProvingIssuer, str],
) -> None:
    issuer, url = proving
    await call(url, None, 2)
    assert issuer.errors == []
    # The token endpoint refused the proof without its nonce once; the retry carried it.
    assert issuer.refusals["as"] == 1 and len(issuer.token_forms) == 2
    assert [p.claims.get("nonce") for p in issuer.token_proofs if p] == [AS_NONCE]
    # The MCP server refused once (the first proof carried the nonce its origin gave
    # last: the issuer's, beside it); every later proof carried its own, remembered.
    assert issuer.refusals["rs"] == 1
    nonces = [p.claims.get("nonce") for p in issuer.resource_proofs]
    assert nonces[0] == AS_NONCE and set(nonces[1:]) == {RS_NONCE} and len(nonces) >= 3


@pytest.mark.parametrize("proving", [{"dpop": False}], indirect=True)
async def test_an_issuer_that_takes_no_proofs_gets_none_and_the_token_stays_bearer(
    proving: tuple[ProvingIssuer, str], tmp_path: Path
) -> None:
    issuer, url = proving
    await call(url, tmp_path)
    assert issuer.token_proofs == [None] and set(issuer.schemes) == {"Bearer"}
    assert kept_keys(tmp_path) == []


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("missing", "asked for a DPoP nonce (use_dpop_nonce) without giving one"),
        ("again", "refused the DPoP nonce it had just given (use_dpop_nonce twice)"),
        ("long", "sent a DPoP-Nonce that is not a nonce"),
    ],
)
async def test_a_hostile_nonce_answer_fails_the_start_with_the_reason(
    proving: tuple[ProvingIssuer, str], answer: str, said: str
) -> None:
    issuer, url = proving
    issuer.nonce_answer = answer
    with anyio.fail_after(20), pytest.raises(ServerStartError, match="'remote'") as caught:
        async with pool(url, None):
            pass
    assert said in str(caught.value)
    assert len(issuer.token_forms) <= 2  # asked once more at most, never in a loop


@pytest.mark.parametrize("proving", [{"challenge": "Bearer"}], indirect=True)
async def test_an_identity_assertion_token_is_bound_and_proved_too(
    proving: tuple[ProvingIssuer, str],
) -> None:
    issuer, url = proving
    issuer.assertions = {"an-id-jag"}

    async def id_jag(audience: str, resource: str) -> str:
        return "an-id-jag"

    oauth = {**MACHINE, "grantType": "identity_assertion", "issuer": issuer.base}
    entry = {"type": "http", "url": url, "oauth": oauth}
    with anyio.fail_after(20):
        async with WorkerPool(
            builtins=[], mcp_servers={"remote": entry}, oauth_assertion=id_jag
        ) as started:
            assert await whoami(started) == "authorized"
    assert issuer.errors == [] and [f["assertion"] for f in issuer.token_forms] == ["an-id-jag"]
    (proved,) = issuer.token_proofs
    assert proved is not None and set(issuer.schemes) == {"DPoP"}
