"""A real OAuth-protected MCP server on loopback, for the OAuth client tests (no Node).

One uvicorn server holds both roles: the MCP endpoint at ``/mcp`` is the SDK's resource
server (``AuthSettings`` with a token verifier: it answers 401 with
``WWW-Authenticate`` and serves RFC 9728 metadata), and `Issuer` is a small
authorization server of our own beside it (RFC 8414 metadata, dynamic registration,
``/authorize`` with PKCE S256, ``/token`` for the authorization-code, refresh-token,
client-credentials and SEP-990 jwt-bearer (an ID-JAG from ``id_jags``) grants). The
issuer records what it was asked, so the tests can count authorizations and refreshes,
and has a knob: refusing refreshes with ``invalid_grant``.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import anyio
import anyio.lowlevel
import httpx2
from _mcp_http import serving_made
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from nativemcp.proxy import WorkerPool

CLIENT_ID = "machine"
CLIENT_SECRET = "machine-secret"
"""The pre-registered confidential client of the client-credentials tests."""
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _basic() -> str:
    """The confidential client's HTTP Basic credentials."""
    return "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()


async def _endless(kind: str) -> AsyncIterator[bytes]:
    """A token answer of 400 MB, 64 KiB at a time (huge), or one that never ends, a byte
    every half second (a trickle, the pace of a server that means to hold the client)."""
    yield b'{"access_token": "'
    for _ in range(6400):
        if kind == "trickle":
            await anyio.sleep(0.5)
            yield b"x"
        else:
            await anyio.lowlevel.checkpoint()  # the client leaving ends the answer
            yield b"x" * 65536


@dataclasses.dataclass
class _Code:
    client_id: str
    challenge: str
    redirect_uri: str
    scope: str


class Issuer:
    """The authorization server: what it issued, what it was asked, and its knobs."""

    def __init__(self) -> None:
        self.base = ""
        self.refuse_refresh = False
        """Answer every refresh with ``invalid_grant``."""
        self.challenge_scope: str | None = None
        """A scope the MCP server's 401 challenge names (None: the SDK's, naming none)."""
        self.hide_metadata = False
        self.grantable: set[str] | None = None
        """The only scopes granted, whatever is asked (None: what is asked)."""
        self.offer_registration = True
        """Name ``/register`` in the metadata (False: no dynamic registration)."""
        self.refuse_tokens: str | None = None
        """The MCP server refuses every token, with this ``error_description`` (an
        audience it does not take, say)."""
        self.token_answer: str | None = None
        """``"huge"``: ``/token`` answers JSON that never ends; ``"trickle"``: a byte
        every half second (None: it answers as it should)."""
        self.on_register: Callable[[dict[str, Any]], None] | None = None
        """Called with each registration request's body, as it arrives."""
        """Answer the metadata request 404 (an issuer that moved, or a broken proxy)."""
        self.clients: dict[str, dict[str, Any]] = {
            CLIENT_ID: {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
        }
        self.codes: dict[str, _Code] = {}
        self.access: dict[str, str] = {}
        self.refresh: dict[str, str] = {}
        self.scopes: dict[str, str] = {}
        """The scope each token was granted (space-separated)."""
        self.grants: list[str] = []
        """The grant type of every token request, in order."""
        self.authorizations = 0
        self.revoked: list[str] = []
        self.id_jags: set[str] = set()
        """The ID-JAGs the (pretend) enterprise identity provider gave out."""

    def metadata(self, request: Request) -> Response:
        if self.hide_metadata:
            return JSONResponse({"error": "not_found"}, status_code=404)
        registration = f"{self.base}/register" if self.offer_registration else None
        return JSONResponse(
            {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": registration,
                "revocation_endpoint": f"{self.base}/revoke",
                "response_types_supported": ["code"],
                "grant_types_supported": [
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                    JWT_BEARER,
                ],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            }
        )

    async def register(self, request: Request) -> Response:
        body = await request.json()
        if self.on_register is not None:
            self.on_register(body)
        client_id = f"client-{secrets.token_hex(4)}"
        client = {**body, "client_id": client_id, "token_endpoint_auth_method": "none"}
        self.clients[client_id] = client
        return JSONResponse(client, status_code=201)

    def authorize(self, request: Request) -> Response:
        query = request.query_params
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None or redirect_uri not in client.get("redirect_uris", []):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        self.authorizations += 1
        code = secrets.token_urlsafe(16)
        scope = query.get("scope") or "mcp"
        if self.grantable is not None:
            scope = " ".join(s for s in scope.split() if s in self.grantable)
        self.codes[code] = _Code(client["client_id"], query["code_challenge"], redirect_uri, scope)
        answer = {"code": code, "state": query.get("state", "")}
        if not self.hide_metadata:  # RFC 9207's iss goes with the metadata that names it
            answer["iss"] = self.base
        return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

    def _tokens(self, client_id: str, scope: str = "mcp", *, refreshable: bool = True) -> Response:
        access = f"access-{secrets.token_hex(8)}"
        self.access[access] = client_id
        self.scopes[access] = scope
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": scope,
        }
        if refreshable:
            refresh = f"refresh-{secrets.token_hex(8)}"
            self.refresh[refresh] = client_id
            self.scopes[refresh] = scope
            body["refresh_token"] = refresh
        return JSONResponse(body)

    async def token(self, request: Request) -> Response:
        if self.token_answer is not None:
            return StreamingResponse(_endless(self.token_answer), media_type="application/json")
        form = await request.form()
        grant = str(form.get("grant_type"))
        self.grants.append(grant)
        if grant == "authorization_code":
            code = self.codes.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier", ""))
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if code is None or code.challenge != challenge:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._tokens(code.client_id, code.scope)
        if grant == "refresh_token":
            refresh = str(form.get("refresh_token"))
            client_id = self.refresh.pop(refresh, None)
            if client_id is None or self.refuse_refresh:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._tokens(client_id, self.scopes[refresh])
        if grant == "client_credentials":
            if request.headers.get("authorization") != _basic():
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            return self._tokens(CLIENT_ID, refreshable=False)
        if grant == JWT_BEARER:
            if request.headers.get("authorization") != _basic():
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            if str(form.get("assertion")) not in self.id_jags:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._tokens(CLIENT_ID, refreshable=False)
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    async def revoke(self, request: Request) -> Response:
        form = await request.form()
        token = str(form.get("token"))
        owner = self.access.get(token) or self.refresh.get(token)
        if owner == CLIENT_ID and request.headers.get("authorization") != _basic():
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        self.refresh.pop(token, None)
        self.access.pop(token, None)
        self.revoked.append(token)
        return Response(status_code=200)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The resource server's check: a token this issuer gave out."""
        client_id = self.access.get(token)
        if client_id is None:
            return None
        return AccessToken(
            token=token,
            client_id=client_id,
            scopes=self.scopes.get(token, "mcp").split(),
            expires_at=int(time.time()) + 3600,
        )

    def routes(self) -> list[Route]:
        """The issuer's endpoints."""
        return [
            Route(path, endpoint, methods=methods)
            for path, endpoint, methods in (
                ("/.well-known/oauth-authorization-server", self.metadata, ["GET"]),
                ("/register", self.register, ["POST"]),
                ("/authorize", self.authorize, ["GET"]),
                ("/token", self.token, ["POST"]),
                ("/revoke", self.revoke, ["POST"]),
            )
        ]

    def add_routes(self, server: MCPServer) -> None:
        """Serve the issuer's endpoints beside ``server``'s MCP endpoint."""
        for route in self.routes():
            server.custom_route(route.path, sorted(route.methods or ()))(route.endpoint)


def _mcp_server(base: str, issuer: Issuer, *, issuer_url: str | None = None) -> MCPServer:
    """The protected MCP server at ``base``; its issuer beside it (``issuer_url`` None)
    or at ``issuer_url``, an origin of its own."""
    server = MCPServer(
        "protected",
        auth=AuthSettings.model_validate(
            {
                "issuer_url": issuer_url or base,
                "resource_server_url": f"{base}/mcp",
                "validate_token_resource": False,
            }
        ),
        token_verifier=issuer,
    )

    @server.tool()
    def whoami() -> str:
        """Say that the caller got in."""
        return "authorized"

    @server.tool()
    def admin() -> str:
        """A tool that needs the 'admin' scope (`StepUp` asks for it)."""
        return "admin ok"

    if issuer_url is None:
        issuer.add_routes(server)
    return server


async def read_body(receive: Any) -> bytes:
    """An ASGI request's whole body."""
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def replaying(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that gives ``body`` (read already) first, then ``receive``'s."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _challenging(send: Any, wanted: str) -> Any:
    """An ASGI ``send`` whose 401 challenge names the scope ``wanted``."""

    async def challenge(message: Any) -> None:
        if message["type"] == "http.response.start" and message["status"] == 401:
            message = {
                **message,
                "headers": [
                    (k, v + f', scope="{wanted}"'.encode() if k == b"www-authenticate" else v)
                    for k, v in message["headers"]
                ],
            }
        await send(message)

    return challenge


async def _refuse(send: Any, status: int, challenge: str) -> None:
    """Answer ``status`` with the ``WWW-Authenticate`` ``challenge`` and no body."""
    headers = [(b"www-authenticate", challenge.encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


class StepUp:
    """ASGI middleware: a ``tools/call`` of ``admin`` with a token lacking the ``admin``
    scope gets 403 ``insufficient_scope`` naming the scopes to ask for (a step-up); a
    401 challenge names `Issuer.challenge_scope` when it is set."""

    def __init__(self, app: Any, issuer: Issuer) -> None:
        self.app = app
        self.issuer = issuer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        wanted = self.issuer.challenge_scope
        if wanted is not None:
            send = _challenging(send, wanted)
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        headers = dict(scope["headers"])
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        wants_admin = (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and request.get("params", {}).get("name") == "admin"
        )
        if token and self.issuer.refuse_tokens is not None:
            challenge = (
                'Bearer error="invalid_token", error_description='
                f'"{self.issuer.refuse_tokens}", resource_metadata='
                f'"{self.issuer.base}/.well-known/oauth-protected-resource/mcp"'
            )
            await _refuse(send, 401, challenge)
            return
        if wants_admin and "admin" not in self.issuer.scopes.get(token, "").split():
            challenge = (
                'Bearer error="insufficient_scope", scope="mcp admin", resource_metadata='
                f'"{self.issuer.base}/.well-known/oauth-protected-resource/mcp"'
            )
            await _refuse(send, 403, challenge)
            return
        await self.app(scope, replaying(body, receive), send)


@asynccontextmanager
async def protected_server(issuer: Issuer) -> AsyncIterator[str]:
    """Serve the protected MCP server and ``issuer`` on loopback; yields the MCP URL."""

    def make(base: str) -> Any:
        issuer.base = base
        return StepUp(_mcp_server(base, issuer).streamable_http_app(), issuer)

    async with serving_made(make) as base:
        yield f"{base}/mcp"


@dataclasses.dataclass
class Received:
    """One request an HTTP server received: what it was sent, headers and body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def carries(self, secret: str) -> bool:
        """Whether ``secret`` is anywhere in the request (query, headers, body), also
        inside HTTP Basic credentials."""
        texts = [self.path, self.body.decode("latin-1"), *self.headers.values()]
        for value in self.headers.values():
            if value.lower().startswith("basic "):
                with contextlib.suppress(ValueError):
                    texts.append(base64.b64decode(value[6:]).decode("latin-1"))
        return any(secret in text for text in texts)


class Recording:
    """ASGI middleware keeping every HTTP request it passes on (`Received`)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.received: list[Received] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        query = scope.get("query_string", b"").decode("latin-1")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"] + (f"?{query}" if query else "")
        self.received.append(Received(scope["method"], path, headers, body))
        await self.app(scope, replaying(body, receive), send)


@asynccontextmanager
async def issuer_apart(issuer: Issuer) -> AsyncIterator[tuple[str, Recording]]:
    """``issuer`` on an origin of its own, and the protected MCP server on another, which
    records every request it receives; yields the MCP URL and the recording."""
    async with serving_made(lambda base: Starlette(routes=issuer.routes())) as issuer_base:
        issuer.base = issuer_base
        recording: Recording | None = None

        def make(base: str) -> Any:
            nonlocal recording
            app = _mcp_server(base, issuer, issuer_url=issuer_base).streamable_http_app()
            recording = Recording(app)
            return recording

        async with serving_made(make) as base:
            assert recording is not None
            yield f"{base}/mcp", recording


def oauth_pool(
    url: str, data_dir: Path | None, oauth: dict[str, Any] | None = None, **extra: Any
) -> WorkerPool:
    """A pool of one OAuth server, ``remote`` at ``url``, with ``oauth`` settings."""
    from nativemcp.proxy import WorkerPool

    return WorkerPool(
        data_dir=data_dir,
        builtins=[],
        mcp_servers={"remote": {"type": "http", "url": url, "oauth": oauth or {}}},
        **extra,
    )


async def whoami(pool: WorkerPool, server: str = "remote") -> str:
    """Call ``server``'s ``whoami`` through ``pool``: ``authorized`` once signed in."""
    response = await pool.call_tool(f"{server}__whoami", {})
    assert response.result is not None and not response.result.is_error, response
    text: str = response.result.content[0].text  # type: ignore[union-attr]
    return text


async def follow(url: str) -> str:
    """A redirect hook that plays the browser: the issuer redirects at once."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 302, response.text
    return str(response.headers["location"])


class Following:
    """`follow`, noting each authorization URL it was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, url: str) -> str:
        self.seen.append(url)
        return await follow(url)


async def log_in_elsewhere(name: str, url: str, data_dir: Path, *options: str) -> None:
    """``nativemcp auth login NAME --no-browser`` (with ``options``) in a process of its
    own; the browser is played here, coming back to that process's loopback listener."""
    config = data_dir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {name: {"url": url, "oauth": {}}}}))
    argv = ["auth", "login", name, "--no-browser", "--mcp-config", str(config), *options]
    command = [sys.executable, "-m", "nativemcp.proxy.cli", *argv, "--data-dir", str(data_dir)]
    with anyio.fail_after(60):
        async with await anyio.open_process(command) as login:
            assert login.stderr is not None
            said = b""
            while b"/callback ..." not in said:
                said += await login.stderr.receive()
            (address,) = [line.strip() for line in said.decode().splitlines() if "?" in line]
            async with httpx2.AsyncClient(follow_redirects=True) as http:
                page = await http.get(address)
            assert "You can close this window" in page.text
            assert await login.wait() == 0
