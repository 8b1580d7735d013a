"""A real DPoP authorization server and MCP server on loopback (RFC 9449; no Node).

One uvicorn server holds both roles. `ProvingIssuer` is the authorization server: RFC
8414 metadata (listing ES256 in ``dpop_signing_alg_values_supported`` when ``dpop``),
and a token endpoint for the client-credentials grant (the pre-registered confidential
client of ``_oauth_server``) and the RFC 7523 jwt-bearer grant (an assertion from
``assertions``). It verifies every proof as RFC 9449 §4.3 says, with PyJWT: ``typ``,
the ES256 signature by the ``jwk`` header's public key (which must not be private),
``htm``, ``htu`` (no query or fragment), ``iat`` within 5 minutes, a ``jti`` never seen,
``ath`` on a resource request, the token's key thumbprint (RFC 7638), and with
``as_nonce``/``rs_nonce`` the server's nonce (a refusal ``use_dpop_nonce`` with
``DPoP-Nonce`` first). `ProvingResource` guards ``/mcp`` (the SDK's MCP server, no auth of
its own). What either refused and why is in ``errors``; the tests read it, so a proof
the client got wrong fails with the reason. Knobs for a hostile issuer: ``nonce_answer``.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import jwt
from _mcp_http import serving_made
from _oauth_server import CLIENT_ID, CLIENT_SECRET, JWT_BEARER
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

AS_NONCE: Final = "as-nonce-1"
RS_NONCE: Final = "rs-nonce-1"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """An EC public key's RFC 7638 thumbprint (``cnf.jkt``)."""
    members = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    return _b64url(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode()).digest())


@dataclasses.dataclass
class Proved:
    """What one verified proof said: its claims and its key's thumbprint."""

    claims: dict[str, Any]
    jkt: str


class ProvingIssuer:
    """The authorization server, the proofs it verified, and its knobs."""

    def __init__(
        self,
        *,
        dpop: bool = True,
        advertise: bool = True,
        challenge: str = "DPoP",
        as_nonce: bool = False,
        rs_nonce: bool = False,
        refresh: bool = False,
    ):
        self.base = ""
        self.dpop = dpop
        """Whether the token endpoint takes proofs and binds tokens."""
        self.advertise = dpop and advertise
        """Whether its metadata lists ES256 proofs."""
        self.challenge = challenge if dpop else "Bearer"
        """The scheme of the MCP server's 401 to a request without a token."""
        self.as_nonce = as_nonce
        self.rs_nonce = rs_nonce
        self.nonce_answer: str | None = None
        """A hostile token endpoint: ``missing`` (use_dpop_nonce with no nonce),
        ``again`` (use_dpop_nonce to every proof), ``long`` (a 5,000-character nonce)."""
        self.refresh = refresh
        """Whether a token answer brings a refresh token (bound like the token)."""
        self.refresh_tokens: dict[str, str | None] = {}  # refresh token -> bound key
        self.assertions: set[str] = set()
        self.token_forms: list[dict[str, str]] = []
        self.token_auth: list[str | None] = []  # each token request's Authorization
        self.token_proofs: list[Proved | None] = []
        self.tokens: dict[str, str | None] = {}  # access token -> bound key (None: bearer)
        self.resource_proofs: list[Proved] = []
        self.schemes: list[str] = []
        self.refusals = {"as": 0, "rs": 0}
        self.errors: list[str] = []
        self._jtis: set[str] = set()

    def verify(self, proof: str | None, method: str, url: str, token: str | None = None) -> Proved:
        """The proof's claims, checked as RFC 9449 §4.3 says.

        Raises:
            ValueError: what is wrong with it.
        """
        if not proof or "," in proof:
            raise ValueError("no single DPoP header")
        header = jwt.get_unverified_header(proof)
        jwk = header.get("jwk")
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
            raise ValueError(f"typ/alg {header.get('typ')}/{header.get('alg')}")
        if not isinstance(jwk, dict) or "d" in jwk:
            raise ValueError("no public jwk header")
        claims = jwt.decode(proof, jwt.PyJWK(jwk), algorithms=["ES256"])
        if claims.get("htm") != method or claims.get("htu") != url:
            raise ValueError(f"htm/htu {claims.get('htm')} {claims.get('htu')}, not {method} {url}")
        if abs(time.time() - claims.get("iat", 0)) > 300 or claims.get("jti") in self._jtis:
            raise ValueError("stale iat or a jti seen before")
        self._jtis.add(claims["jti"])
        if token is not None:
            ath = _b64url(hashlib.sha256(token.encode()).digest())
            if claims.get("ath") != ath:
                raise ValueError("ath is not the token's hash")
        return Proved(claims, thumbprint(jwk))

    def metadata(self, request: Request) -> Response:
        extra = {"dpop_signing_alg_values_supported": ["ES256"]} if self.advertise else {}
        return JSONResponse(
            {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials", JWT_BEARER],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                **extra,
            }
        )

    def resource_metadata(self, request: Request) -> Response:
        return JSONResponse({"resource": f"{self.base}/mcp", "authorization_servers": [self.base]})

    def _nonce_refusal(self) -> Response:
        self.refusals["as"] += 1
        nonce = {"missing": None, "long": "n" * 5000}.get(self.nonce_answer or "", AS_NONCE)
        headers = {"DPoP-Nonce": nonce} if nonce else {}
        return JSONResponse({"error": "use_dpop_nonce"}, status_code=400, headers=headers)

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.token_forms.append(form)
        self.token_auth.append(request.headers.get("authorization"))
        proved = None
        if self.dpop and "dpop" in request.headers:
            try:
                proved = self.verify(request.headers["dpop"], "POST", f"{self.base}/token")
            except (ValueError, jwt.PyJWTError) as exc:
                self.errors.append(f"token request proof: {exc}")
                return JSONResponse({"error": "invalid_dpop_proof"}, status_code=400)
            wants_nonce = self.as_nonce or self.nonce_answer is not None
            if wants_nonce and (self.nonce_answer or proved.claims.get("nonce") != AS_NONCE):
                return self._nonce_refusal()
        self.token_proofs.append(proved)
        jkt = proved.jkt if proved else None
        refused = self._refused_grant(form, request, jkt)
        if refused is not None:
            return JSONResponse({"error": refused}, status_code=400)
        token = secrets.token_urlsafe(16)
        self.tokens[token] = jkt
        answer = {"access_token": token, "token_type": "DPoP" if jkt else "Bearer"}
        if self.refresh:
            answer["refresh_token"] = refresh = secrets.token_urlsafe(16)
            self.refresh_tokens[refresh] = jkt
        return JSONResponse({**answer, "expires_in": 3600})

    def _refused_grant(self, form: dict[str, str], request: Request, jkt: str | None) -> str | None:
        """Why the grant is refused (None: granted); a refresh token bound to a key
        must come with a proof by that key (RFC 9449 §5)."""
        if form.get("grant_type") == "refresh_token":
            bound = self.refresh_tokens.pop(form.get("refresh_token", ""), "unknown")
            return None if bound == jkt else "invalid_grant"
        if form.get("grant_type") == JWT_BEARER:
            return None if form.get("assertion") in self.assertions else "invalid_grant"
        basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if form.get("grant_type") == "client_credentials":
            return None if request.headers.get("authorization") == basic else "invalid_client"
        return "unsupported_grant_type"

    def add_routes(self, server: MCPServer) -> None:
        """Serve the issuer's endpoints and the resource's metadata beside ``server``."""
        for path, endpoint, methods in (
            ("/.well-known/oauth-authorization-server", self.metadata, ["GET"]),
            ("/.well-known/oauth-protected-resource/mcp", self.resource_metadata, ["GET"]),
            ("/token", self.token, ["POST"]),
        ):
            server.custom_route(path, methods)(endpoint)


class ProvingResource:
    """ASGI middleware guarding ``/mcp``: a token the issuer gave, as DPoP with a proof
    by its key when it is bound (as Bearer when not); 401 with a ``DPoP`` challenge."""

    def __init__(self, app: Any, issuer: ProvingIssuer) -> None:
        self.app = app
        self.issuer = issuer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        issuer = self.issuer
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        metadata = f'resource_metadata="{issuer.base}/.well-known/oauth-protected-resource/mcp"'
        if token not in issuer.tokens:
            await _refuse(send, f"{issuer.challenge} {metadata}")
            return
        issuer.schemes.append(scheme)
        if issuer.tokens[token] is not None:
            try:
                if scheme != "DPoP":
                    raise ValueError(f"scheme {scheme}")
                url = f"{issuer.base}/mcp"
                proved = issuer.verify(headers.get("dpop"), scope["method"], url, token)
                if proved.jkt != issuer.tokens[token]:
                    raise ValueError("the proof's key is not the token's")
            except (ValueError, jwt.PyJWTError) as exc:
                issuer.errors.append(f"resource request proof: {exc}")
                await _refuse(send, f'DPoP error="invalid_dpop_proof", {metadata}')
                return
            issuer.resource_proofs.append(proved)
            if issuer.rs_nonce and proved.claims.get("nonce") != RS_NONCE:
                issuer.refusals["rs"] += 1
                challenge = f'DPoP error="use_dpop_nonce", {metadata}'
                await _refuse(send, challenge, [(b"dpop-nonce", RS_NONCE.encode())])
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, challenge: str, extra: list[tuple[bytes, bytes]] = []) -> None:  # noqa: B006
    headers = [(b"www-authenticate", challenge.encode()), *extra]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


@asynccontextmanager
async def proving_server(issuer: ProvingIssuer) -> AsyncIterator[str]:
    """Serve ``issuer`` and its DPoP-guarded MCP server on loopback; yields the MCP URL."""

    def make(base: str) -> Any:
        issuer.base = base
        server = MCPServer("proving")

        @server.tool()
        def whoami() -> str:
            """Say that the caller got in."""
            return "authorized"

        issuer.add_routes(server)
        return ProvingResource(server.streamable_http_app(), issuer)

    async with serving_made(make) as base:
        yield f"{base}/mcp"
