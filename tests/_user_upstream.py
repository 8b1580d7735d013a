"""An upstream MCP server that knows its users, and its own authorization server, for
the tests of serve acting for each user (``"grantScope": "user"``). No Node.

`UpstreamIssuer` is a small authorization server, its requests recorded (RFC 8414
metadata, dynamic registration, ``/authorize`` with PKCE S256, ``/token`` for the
authorization-code, refresh-token and RFC 8693 token-exchange grants). Who signs in
at ``/authorize`` is the ``login`` query parameter the test's browser adds (the person
at the upstream's sign-in page). A token exchange is answered for a subject token
signed by serve's issuer (a `_issuer.Issuer` this one trusts): its ``sub`` becomes the
upstream user. The MCP server beside it requires one of its tokens; its ``whoami``
tool says whose token came (it declares optional task support), and a `Recording`
keeps every request it received, for the tests that read what went upstream. Served
``handshake_only``, it speaks 2025-11-25 alone (it refuses ``server/discover``): the
only era whose tool listing says which tools take tasks, which is what serve reads to
run a 2026-07-28 client's call as a Tasks-extension task.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
import mcp_types as types
from _issuer import Issuer
from _mcp_http import serving_made
from _oauth_server import Recording, read_body, replaying
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
EXCHANGER_ID = "serve-exchanger"
EXCHANGER_SECRET = "exchanger-secret"
"""The client serve is at the upstream's issuer for token exchange."""


@dataclass
class _Code:
    client_id: str
    challenge: str
    redirect_uri: str
    user: str


@dataclass
class UpstreamIssuer:
    """The upstream's authorization server: who holds which token, what it was asked."""

    trusted: Issuer | None
    """Serve's issuer, whose access tokens a token exchange takes (None: no exchange)."""
    base: str = ""
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, _Code] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    """Each access or refresh token's user."""
    exchanges: list[dict[str, str]] = field(default_factory=list)
    """Each token-exchange request's form."""
    authorizations: list[str] = field(default_factory=list)
    """The user of each authorization (a consent)."""
    lifetime: int = 3600
    recording: Recording | None = None
    """Every request the issuer received (set when it is served)."""

    def __post_init__(self) -> None:
        self.clients[EXCHANGER_ID] = {"client_id": EXCHANGER_ID, "secret": EXCHANGER_SECRET}

    def metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": f"{self.base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", EXCHANGE],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            }
        )

    async def register(self, request: Request) -> Response:
        body = await request.json()
        client_id = f"client-{secrets.token_hex(4)}"
        client = {**body, "client_id": client_id, "token_endpoint_auth_method": "none"}
        self.clients[client_id] = client
        return JSONResponse(client, status_code=201)

    def authorize(self, request: Request) -> Response:
        query = request.query_params
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        user = query.get("login")
        if client is None or redirect_uri not in client.get("redirect_uris", []) or not user:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        self.authorizations.append(user)
        code = secrets.token_urlsafe(16)
        self.codes[code] = _Code(client["client_id"], query["code_challenge"], redirect_uri, user)
        answer = {"code": code, "state": query.get("state", ""), "iss": self.base}
        return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

    def _tokens(self, user: str, *, refreshable: bool = True) -> Response:
        access = f"up-access-{secrets.token_hex(8)}"
        self.users[access] = user
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.lifetime,
        }
        if refreshable:
            refresh = f"up-refresh-{secrets.token_hex(8)}"
            self.users[refresh] = user
            body["refresh_token"] = refresh
        else:
            body["issued_token_type"] = ACCESS_TOKEN_TYPE
        return JSONResponse(body)

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if code is None or code.challenge != challenge:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._tokens(code.user)
        if grant == "refresh_token":
            user = self.users.pop(form.get("refresh_token", ""), None)
            if user is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._tokens(user)
        if grant == EXCHANGE:
            return self._exchange(request, form)
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    def _exchange(self, request: Request, form: dict[str, str]) -> Response:
        self.exchanges.append(form)
        pair = f"{EXCHANGER_ID}:{EXCHANGER_SECRET}".encode()
        if request.headers.get("authorization") != "Basic " + base64.b64encode(pair).decode():
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if form.get("subject_token_type") != ACCESS_TOKEN_TYPE:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if self.trusted is None:
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        try:
            claims = jwt.decode(
                form.get("subject_token", ""),
                self.trusted.key.public_key(),
                algorithms=["RS256"],
                issuer=self.trusted.url,
                options={"verify_aud": False},
            )
        except jwt.InvalidTokenError:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        return self._tokens(str(claims["sub"]), refreshable=False)

    def revoke(self, user: str) -> None:
        """Forget every token of ``user`` (an administrator revoked their grant)."""
        for token in [t for t, owner in self.users.items() if owner == user]:
            del self.users[token]

    async def verify_token(self, token: str) -> AccessToken | None:
        """The upstream MCP server's check: a token this issuer gave out."""
        user = self.users.get(token)
        if user is None or not token.startswith("up-access-"):
            return None
        return AccessToken(token=token, client_id="any", scopes=[], subject=user)

    def routes(self) -> list[Route]:
        """The issuer's endpoints."""
        return [
            Route("/.well-known/oauth-authorization-server", self.metadata, methods=["GET"]),
            Route("/register", self.register, methods=["POST"]),
            Route("/authorize", self.authorize, methods=["GET"]),
            Route("/token", self.token, methods=["POST"]),
        ]


class _TaskCapable(MCPServer):
    """An MCPServer whose tools declare ``execution.taskSupport: "optional"`` (its
    decorator has no parameter for it): a client may call them as tasks or not; serve
    calls them plainly and may run its own client's call as a task."""

    async def list_tools(self) -> list[types.Tool]:
        execution = types.ToolExecution(task_support="optional")
        return [
            tool.model_copy(update={"execution": execution}) for tool in await super().list_tools()
        ]


def _upstream(base: str, issuer: UpstreamIssuer) -> MCPServer:
    server = _TaskCapable(
        "upstream",
        auth=AuthSettings.model_validate(
            {
                "issuer_url": issuer.base,
                "resource_server_url": f"{base}/mcp",
                "validate_token_resource": False,
            }
        ),
        token_verifier=issuer,
    )

    @server.tool()
    def whoami() -> str:
        """The upstream user whose token this call came with."""
        token = get_access_token()
        return f"upstream user {token.subject if token else None}"

    return server


def _handshake_only(app: Any) -> Any:
    """``app`` as a server of 2025-11-25 alone: ``server/discover`` is a method it does
    not know, so a client in ``auto`` mode falls back to the ``initialize`` handshake."""

    async def legacy(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("method") == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            refused = {"jsonrpc": "2.0", "id": message.get("id"), "error": error}
            await JSONResponse(refused)(scope, receive, send)
            return
        await app(scope, replaying(body, receive), send)

    return legacy


@asynccontextmanager
async def upstream(
    trusted: Issuer | None, *, handshake_only: bool = False
) -> AsyncIterator[tuple[str, UpstreamIssuer, Recording]]:
    """The upstream issuer and its MCP server, each on an origin of its own: yields the
    MCP URL, the issuer and the recording of what the MCP server received
    (``handshake_only``: a 2025-11-25 server)."""
    issuer = UpstreamIssuer(trusted)
    issuer.recording = Recording(Starlette(routes=issuer.routes()))
    async with serving_made(lambda base: issuer.recording) as issuer_base:
        issuer.base = issuer_base
        recording: Recording | None = None

        def make(base: str) -> Any:
            nonlocal recording
            app = _upstream(base, issuer).streamable_http_app()
            recording = Recording(_handshake_only(app) if handshake_only else app)
            return recording

        async with serving_made(make) as base:
            assert recording is not None
            yield f"{base}/mcp", issuer, recording
