"""serve as an OAuth 2.1 protected resource, against a real issuer on loopback (RFC 8414
metadata and a JWKS over HTTP, RSA keys, PyJWT-signed tokens: `_issuer`), real worker
processes and the official SDK client."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _issuer import Issuer, new_key, running_issuer
from _mcp_http import HEADERS, INIT, serving
from _task_client import Rpc
from cryptography.hazmat.primitives import serialization
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.serve import (
    Authorization,
    IntrospectedTokens,
    IssuerTokens,
    IssuerUnavailable,
)
from nativemcp.proxy.serve.auth import _introspection
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

AUDIENCE = "nativemcp-test"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forged(header: dict[str, Any], payload: dict[str, Any], secret: bytes | None) -> str:
    """A token assembled by hand (what an attacker sends): ``alg: none`` when ``secret``
    is None, else HS256 with ``secret``."""
    signing = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
    if secret is None:
        return signing + "."
    mac = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
    return f"{signing}.{_b64(mac)}"


def _claims(issuer: Issuer, token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return decoded


def _auth(issuer: Issuer, *scopes: str, secret: str | None = None) -> Authorization:
    """OAuth from ``issuer`` with these scope rules; with ``secret``, opaque tokens are
    introspected as the client ``resource-server``."""
    introspection = ("resource-server", secret) if secret is not None else None
    return Authorization(
        issuer=issuer.url, audience=AUDIENCE, scopes=scopes, introspection=introspection
    )


@asynccontextmanager
async def _served(
    *rules: str, secret: str | None = None
) -> AsyncIterator[tuple[Issuer, str, httpx2.AsyncClient]]:
    """The issuer, serve's base URL over the shapes server under OAuth, an HTTP client."""
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        async with (
            serving(http_app(pool, auth=_auth(issuer, *rules, secret=secret))) as base,
            httpx2.AsyncClient() as http,
        ):
            yield issuer, base, http


def _bearer(token: str) -> dict[str, str]:
    return {**HEADERS, "authorization": f"Bearer {token}"}


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _client(base: str, token: str, http: httpx2.AsyncClient, **kwargs: Any) -> Client:
    http.headers["authorization"] = f"Bearer {token}"
    return Client(streamable_http_client(f"{base}/mcp", http_client=http), **kwargs)


async def test_requests_without_a_valid_token_get_401_naming_the_resource_metadata() -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        app = http_app(pool, auth=_auth(issuer, "shapes__move=shapes:write"))
        async with serving(app) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                missing = await http.post(f"{base}/mcp", json=INIT, headers=HEADERS)
                assert missing.status_code == 401
                challenge = missing.headers["www-authenticate"]
                where = f"{base}/.well-known/oauth-protected-resource/mcp"
                assert challenge == f'Bearer scope="shapes:write", resource_metadata="{where}"'

                metadata = (await http.get(where)).json()
                assert metadata["resource"] == f"{base}/mcp"
                assert metadata["authorization_servers"] == [issuer.url]
                assert metadata["scopes_supported"] == ["shapes:write"]
                # The root form answers for /mcp; a server's route has its own resource.
                root = (await http.get(f"{base}/.well-known/oauth-protected-resource")).json()
                assert root["resource"] == f"{base}/mcp"
                named = await http.get(f"{base}/.well-known/oauth-protected-resource/mcp/shapes")
                assert named.json()["resource"] == f"{base}/mcp/shapes"
                # A server's route names its own metadata in its challenge.
                shapes = await http.post(f"{base}/mcp/shapes", json=INIT, headers=HEADERS)
                assert f'resource_metadata="{where}/shapes"' in shapes.headers["www-authenticate"]

                good = issuer.token()
                claims = _claims(issuer, good)
                public_pem = issuer.key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
                header = {"alg": "RS256", "kid": issuer.kid, "typ": "JWT"}
                head, _, signature = good.rpartition(".")
                tampered_claims = _b64(json.dumps({**claims, "sub": "mallory"}).encode())
                refused = {
                    "wrong audience": issuer.token(audience="another-service"),
                    "wrong issuer": issuer.token(issuer="https://evil.example.com"),
                    "expired": issuer.token(lifetime=-3600),
                    "not yet valid": issuer.token(nbf=claims["iat"] + 3600),
                    "unsigned (alg none)": _forged({**header, "alg": "none"}, claims, None),
                    "HS256 keyed with the public key": _forged(
                        {**header, "alg": "HS256"}, claims, public_pem
                    ),
                    "tampered": f"{head.split('.')[0]}.{tampered_claims}.{signature}",
                    "signed by another key under a known kid": issuer.token(key=new_key()),
                    "unknown kid": issuer.token(headers={"kid": "key-nobody-published"}),
                    "no subject": issuer.token(""),
                    "PS256 with a key published for RS256": issuer.token(algorithm="PS256"),
                    "not a JWT": "opaque-string",
                }
                for why, token in refused.items():
                    reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(token))
                    assert reply.status_code == 401, why
                    assert reply.headers["www-authenticate"].startswith(
                        'Bearer error="invalid_token"'
                    ), why
                    assert f'resource_metadata="{where}"' in reply.headers["www-authenticate"]
                    said = reply.json()["error_description"]
                    # Each of the two algorithm checks alone refuses what it is for.
                    if why in ("unsigned (alg none)", "HS256 keyed with the public key"):
                        assert "is not accepted" in said, why
                    if why == "PS256 with a key published for RS256":
                        assert "does not sign with 'PS256'" in said
                # A list audience holding ours passes; the scheme is case-insensitive.
                for token in (good, issuer.token(audience=["other", AUDIENCE])):
                    reply = await http.post(
                        f"{base}/mcp",
                        json=INIT,
                        headers={**HEADERS, "authorization": f"bearer {token}"},
                    )
                    assert reply.status_code == 200
                # Every method needs the token, not only the POSTs that carry calls.
                for method in ("GET", "DELETE"):
                    reply = await http.request(method, f"{base}/mcp", headers=HEADERS)
                    assert reply.status_code == 401, method


async def test_keys_are_cached_and_made_up_kids_do_not_flood_the_issuer() -> None:
    async with _served() as (issuer, base, http):
        with anyio.fail_after(60):
            first = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(issuer.token()))
            assert first.status_code == 200
            assert issuer.jwks_fetches == 1
            for n in range(5):  # the keys are cached: no fetch per request
                token = issuer.token(headers={"kid": f"made-up-{n}"})
                reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(token))
                assert reply.status_code == 401
            # Unknown kids fetch again at most once per interval: here, not at all.
            assert issuer.jwks_fetches == 1


async def test_a_rotated_key_verifies_once_the_set_is_fetched_again() -> None:
    async with running_issuer() as issuer:
        waiting = IssuerTokens(issuer.url, AUDIENCE)
        eager = IssuerTokens(issuer.url, AUDIENCE, refetch_interval=0)
        for tokens in (waiting, eager):
            assert (await tokens.check(issuer.token())).subject == "alice"
        issuer.rotate("key-2")
        # Within the interval a new kid is not fetched for...
        assert await waiting.verify_token(issuer.token("bob")) is None
        assert issuer.jwks_fetches == 2
        # ...past it, the rotated set is read once and the new key verifies.
        access = await eager.check(issuer.token("bob"))
        assert (access.subject, access.client_id) == ("bob", "bob-app")
        assert issuer.jwks_fetches == 3
        assert (await eager.check(issuer.token("carol"))).subject == "carol"
        assert issuer.jwks_fetches == 3


async def test_static_token_and_oauth_are_exclusive() -> None:
    async with running_issuer() as issuer:
        with pytest.raises(ValueError, match="exclusive"):
            http_app(WorkerPool(["_serve_servers:server"]), token="s3cret", auth=_auth(issuer))


async def test_each_caller_lists_and_calls_only_the_tools_its_scopes_cover() -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        auth = _auth(issuer, "shapes__move=shapes:write", "shapes__m*=shapes:read")
        async with serving(http_app(pool, ["shapes"], auth=auth)) as base:
            with anyio.fail_after(60):
                async with httpx2.AsyncClient() as http:
                    reader = issuer.token("rita", scope="shapes:read")
                    async with _client(base, reader, http, mode="legacy") as client:
                        names = {tool.name for tool in (await client.list_tools()).tools}
                        # `move` needs both scopes (two rules match); `whoami` none.
                        assert "move" not in names and "whoami" in names
                        with pytest.raises(MCPError):
                            await client.call_tool("move", {"point": {"x": 1, "y": 2}})
                    # The HTTP answer a client steps up from: 403 and the scopes needed.
                    call = {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "move", "arguments": {"point": {"x": 1, "y": 2}}},
                    }
                    reply = await http.post(
                        f"{base}/mcp/shapes", json=call, headers=_bearer(reader)
                    )
                    assert reply.status_code == 403
                    where = f"{base}/.well-known/oauth-protected-resource/mcp/shapes"
                    assert reply.headers["www-authenticate"].startswith(
                        'Bearer error="insufficient_scope", error_description="insufficient scope'
                    )
                    assert reply.headers["www-authenticate"].endswith(
                        f'scope="shapes:read shapes:write", resource_metadata="{where}"'
                    )
                async with httpx2.AsyncClient() as http:
                    writer = issuer.token("wade", scope="shapes:read shapes:write")
                    async with _client(base, writer, http) as client:
                        names = {tool.name for tool in (await client.list_tools()).tools}
                        assert {"move", "whoami"} <= names
                        moved = await client.call_tool("move", {"point": {"x": 1, "y": 2}})
                        assert not moved.is_error


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_users_never_share_a_plan_or_a_session_scope(mode: str, tmp_path: Any) -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool(
            ["_serve_servers:server"], data_dir=tmp_path, builtins=["planning"], timeout=20
        )
        async with serving(http_app(pool, auth=_auth(issuer))) as base:
            with anyio.fail_after(60):
                seen: dict[str, tuple[str, str]] = {}
                for user in ("alice", "bob"):
                    async with (
                        httpx2.AsyncClient() as http,
                        _client(base, issuer.token(user, scope="mcp"), http, mode=mode) as client,
                    ):
                        if user == "alice":
                            await client.call_tool(
                                "builtin_planning__create_goal", {"goal": "alice's secret plan"}
                            )
                        state = await client.call_tool("builtin_planning__get_current_state", {})
                        who = await client.call_tool("shapes__whoami", {})
                        seen[user] = (_text(state), _text(who))
                        me = await client.call_tool("shapes__caller", {})
                        assert _text(me) == f"{user} via {user}-app with 'mcp'"
                # Each call's scope is the caller's subject, in both protocol eras.
                assert seen["alice"][1] == "alice/None"
                assert seen["bob"][1] == "bob/None"
                assert "alice's secret plan" in seen["alice"][0]
                assert "alice's secret plan" not in seen["bob"][0]
                # The same user in a new connection finds their own plan again.
                async with (
                    httpx2.AsyncClient() as http,
                    _client(base, issuer.token("alice"), http, mode=mode) as client,
                ):
                    state = await client.call_tool("builtin_planning__get_current_state", {})
                    assert "alice's secret plan" in _text(state)


async def test_another_user_cannot_use_a_session_it_did_not_open() -> None:
    async with _served() as (issuer, base, http):
        with anyio.fail_after(60):
            opened = await http.post(
                f"{base}/mcp", json=INIT, headers=_bearer(issuer.token("alice"))
            )
            assert opened.status_code == 200
            session = opened.headers["mcp-session-id"]
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            as_bob = {**_bearer(issuer.token("bob")), "mcp-session-id": session}
            stolen = await http.post(f"{base}/mcp", json=listing, headers=as_bob)
            assert stolen.status_code == 404


async def test_the_sessions_per_client_limit_counts_per_user_not_per_address() -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        app = http_app(pool, auth=_auth(issuer), sessions_per_client=1)
        async with serving(app) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                alice, bob = issuer.token("alice"), issuer.token("bob")
                first = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(alice))
                assert first.status_code == 200
                # Same address, another user: a limit of their own.
                other = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(bob))
                assert other.status_code == 200
                again = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(alice))
                assert again.status_code == 429
                # A 2026-07-28 request holds no session: alice at her limit still calls.
                http.headers["authorization"] = f"Bearer {alice}"
                listed = await Rpc(http, f"{base}/mcp")("tools/list", {}, declare=False)
                assert "result" in listed, listed


async def test_opaque_tokens_are_checked_by_the_issuers_introspection_endpoint() -> None:
    async with _served(secret="rs-secret") as (issuer, base, http):
        with anyio.fail_after(60):
            for token in (issuer.opaque("ada"), issuer.token("ada")):  # and JWTs still
                reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(token))
                assert reply.status_code == 200
            refused = {
                "unknown": "never-issued",
                "inactive": issuer.opaque(active=False),
                "another audience": issuer.opaque(aud=["another-service"]),
                "another issuer": issuer.opaque(iss="https://evil.example.com"),
                "expired": issuer.opaque(exp=1),
                "not yet valid": issuer.opaque(nbf=4_000_000_000),
                "no subject": issuer.opaque(sub=None),
            }
            for why, token in refused.items():
                if why == "no subject":
                    del issuer.issued[token]["sub"]
                reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(token))
                assert reply.status_code == 401, why
                assert 'error="invalid_token"' in reply.headers["www-authenticate"], why
            http.headers["authorization"] = f"Bearer {issuer.opaque('ada')}"
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                me = await client.call_tool("caller", {})
                assert _text(me) == "ada via ada-app with ''"


async def test_wrong_introspection_credentials_answer_503_not_401() -> None:
    async with _served(secret="wrong") as (issuer, base, http):
        with anyio.fail_after(60):
            token = issuer.opaque()
            reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(token))
            # The server's own configuration is wrong: the client's token may be fine.
            assert reply.status_code == 503


async def test_under_tool_search_a_caller_finds_and_calls_only_what_its_scopes_cover() -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server", "_serve_servers:other"], timeout=20)
        auth = _auth(issuer, "shapes__move=shapes:write")
        app = http_app(pool, auth=auth, profile=ToolProfile(search=True))
        async with serving(app) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                async with _client(base, issuer.token("rita"), http) as client:
                    query = {"query": "move a point", "limit": 50}
                    found = await client.call_tool("search_tools", query)
                    names = [m["name"] for m in (found.structured_content or {})["matches"]]
                    assert "shapes__move" not in names and names
                    call = {"name": "shapes__move", "arguments": {"point": {"x": 0, "y": 0}}}
                    with pytest.raises(MCPError, match="insufficient scope"):
                        await client.call_tool("call_tool", call)
                writer = issuer.token("wade", scope="shapes:write")
                async with _client(base, writer, http) as client:
                    found = await client.call_tool("search_tools", query)
                    names = [m["name"] for m in (found.structured_content or {})["matches"]]
                    assert "shapes__move" in names
                    moved = await client.call_tool("call_tool", call)
                    assert not moved.is_error


async def test_the_scope_gate_reads_the_served_catalog_as_last_read_not_a_listing_a_request() -> (
    None
):
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        listings: list[None] = []
        list_tools = pool.list_tools

        async def counted(*args: Any, **kwargs: Any) -> Any:
            listings.append(None)  # each a freshening of every external server waiting
            return await list_tools(*args, **kwargs)

        pool.list_tools = counted  # type: ignore[method-assign]
        auth = _auth(issuer, "shapes__move=shapes:write")
        async with serving(http_app(pool, auth=auth)) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                http.headers["authorization"] = f"Bearer {issuer.token('rita', scope='x')}"
                rpc = Rpc(http, f"{base}/mcp")
                point = {"point": {"x": 1, "y": 2}}
                await rpc(
                    "tools/call", {"name": "whoami", "arguments": {}}
                )  # one server: own names
                read = len(listings)
                refused = [
                    await rpc("tools/call", {"name": "move", "arguments": point}) for _ in range(3)
                ]
                allowed = await rpc("tools/call", {"name": "whoami", "arguments": {}})
                assert len(listings) == read
                # A name not served is looked up anew by the call (as the pool's own call
                # does), not by the gate as well.
                unknown = await rpc("tools/call", {"name": "mvoe", "arguments": point})
                assert len(listings) == read + 1
    assert all(answer["error"] == "insufficient_scope" for answer in refused)
    assert allowed["result"]["content"][0]["text"] == "rita/None"
    assert "did you mean 'move'" in unknown["error"]["message"]


async def test_a_made_up_kid_fetching_a_slow_key_set_holds_up_no_valid_token() -> None:
    async with running_issuer() as issuer:
        tokens = IssuerTokens(issuer.url, AUDIENCE, refetch_interval=0)
        with anyio.fail_after(30):
            assert (await tokens.check(issuer.token())).subject == "alice"
            issuer.jwks_mode, issuer.jwks_asked = "gated", anyio.Event()
            refused: list[object] = []

            async def made_up() -> None:
                refused.append(await tokens.verify_token(issuer.token(headers={"kid": "no"})))

            async with anyio.create_task_group() as group:
                group.start_soon(made_up)
                await issuer.jwks_asked.wait()  # its fetch is under way, and held
                # Valid users are checked with the keys held meanwhile.
                for user in ("bob", "carol"):
                    assert (await tokens.check(issuer.token(user))).subject == user
                assert not refused
                issuer.jwks_gate.set()
    assert refused == [None] and issuer.jwks_fetches == 2


def _cut_off(error: IssuerUnavailable, mode: str, issuer: Issuer) -> None:
    """``error`` says the answer was cut off: in time (``trickle``, 1 s) or in bytes
    (``huge``, read as a stream and left at the cap, far before its 300 MB)."""
    if mode == "trickle":
        assert "did not answer in full within 1 s" in str(error)
    else:
        assert "more than 1000000 bytes" in str(error)
        assert issuer.jwks_sent < 100_000_000


@pytest.mark.parametrize("mode", ["trickle", "huge"])
async def test_a_key_set_that_trickles_or_never_ends_is_cut_off_and_answers_503(
    mode: Any,
) -> None:
    async with running_issuer() as issuer:
        issuer.jwks_mode = mode
        tokens = IssuerTokens(issuer.url, AUDIENCE, fetch_timeout=1.0 if mode == "trickle" else 30)
        with anyio.fail_after(30):
            with pytest.raises(IssuerUnavailable) as unavailable:
                await tokens.check(issuer.token())
            if mode == "huge":  # through serve (its own limits): 503, the server's trouble
                pool = WorkerPool(["_serve_servers:server"], timeout=20)
                auth = Authorization(issuer=issuer.url, audience=AUDIENCE)
                async with (
                    serving(http_app(pool, auth=auth)) as base,
                    httpx2.AsyncClient() as http,
                ):
                    token = _bearer(issuer.token())
                    reply = await http.post(f"{base}/mcp", json=INIT, headers=token)
                assert reply.status_code == 503
    _cut_off(unavailable.value, mode, issuer)


@pytest.mark.parametrize("mode", ["trickle", "huge"])
async def test_an_introspection_that_trickles_or_never_ends_is_cut_off_and_answers_503(
    mode: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "trickle":  # the limit is on the whole answer, not on each read
        monkeypatch.setattr(_introspection, "FETCH_TIMEOUT", 1.0)
    async with _served(secret="rs-secret") as (issuer, base, http):
        issuer.introspect_mode = mode
        issuer_tokens = IssuerTokens(issuer.url, AUDIENCE)
        tokens = IntrospectedTokens(issuer_tokens, "resource-server", "rs-secret")
        with anyio.fail_after(30):
            with pytest.raises(IssuerUnavailable) as unavailable:
                await tokens.check(issuer.opaque())
            if mode == "huge":  # through serve: 503, the server's trouble, not the token's
                reply = await http.post(f"{base}/mcp", json=INIT, headers=_bearer(issuer.opaque()))
                assert reply.status_code == 503
    _cut_off(unavailable.value, mode, issuer)


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_under_code_mode_a_program_reaches_only_what_its_caller_may_call(mode: str) -> None:
    era: dict[str, Any] = {"mode": "legacy"} if mode == "legacy" else {}  # both eras
    async with running_issuer() as issuer:
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        auth = _auth(issuer, "shapes__move=shapes:write")
        app = http_app(pool, auth=auth, profile=ToolProfile(code_mode=True))
        move = {"code": "(await shapes__move(point={'x': 0, 'y': 0}))['x']"}
        async with serving(app) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                async with _client(base, issuer.token("rita"), http, **era) as client:
                    # Each inner call carries the caller: the tool sees who asked.
                    me = await client.call_tool("run_code", {"code": "await shapes__caller()"})
                    assert _text(me) == "rita via rita-app with ''"
                    refused = await client.call_tool("run_code", move)
                    assert refused.is_error
                    assert "name 'shapes__move' is not defined" in _text(refused)
                    stubs = await client.call_tool("describe_tools", {"names": ["shapes__move"]})
                    assert stubs.is_error
                    found = await client.call_tool("search_tools", {"query": "move a point"})
                    assert "shapes__move" not in _text(found)
                writer = issuer.token("wade", scope="shapes:write")
                async with _client(base, writer, http, **era) as client:
                    moved = await client.call_tool("run_code", move)
                    assert not moved.is_error and _text(moved) == "1"
