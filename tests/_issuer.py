"""A real OAuth issuer on loopback, in Python: RFC 8414 metadata and a JWKS served over
HTTP by uvicorn, RSA keys made by ``cryptography`` and tokens signed by PyJWT. Not a
mock of the verifier: the resource server discovers it, fetches its keys and checks
signatures exactly as it does a team's identity provider. It counts key-set fetches
and can rotate its key (a new ``kid``), for the cache's tests, and answers RFC 7662
introspection of the opaque tokens it handed out (`Issuer.opaque`) to the client
``resource-server`` (secret ``rs-secret``). Its key set can misbehave on demand
(`Issuer.jwks_mode`): held until a gate opens, trickled a byte at a time for ever, or
300 MB long.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import AsyncIterator
from collections.abc import AsyncIterator as _Chunks
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import jwt
from _mcp_http import serving
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def new_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA signing key."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Issuer:
    """The running issuer: its URL, its current key, and what it has served."""

    url: str = ""
    key: rsa.RSAPrivateKey = field(default_factory=new_key)
    kid: str = "key-1"
    jwks_fetches: int = 0
    published: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    issued: dict[str, dict[str, Any]] = field(default_factory=dict)
    jwks_mode: Literal["plain", "gated", "trickle", "huge"] = "plain"
    """How the key set is answered: at once; once `jwks_gate` is set; a byte every
    50 ms, never ending; or 300 MB of whitespace before the keys."""
    jwks_gate: anyio.Event = field(default_factory=anyio.Event)
    jwks_asked: anyio.Event = field(default_factory=anyio.Event)
    """Set when the key set is asked for (a gated answer is waiting then)."""
    jwks_sent: int = 0
    """Bytes of trickled or huge answers (key sets, introspections) sent so far."""
    introspect_mode: Literal["plain", "trickle", "huge"] = "plain"
    """How an introspection is answered: at once, or misbehaving as `jwks_mode` says."""

    def opaque(self, subject: str = "alice", *, active: bool = True, **claims: Any) -> str:
        """An opaque token (a random string) only introspection can read."""
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        self.issued[token] = {
            "active": active,
            "iss": self.url,
            "sub": subject,
            "aud": "nativemcp-test",
            "client_id": f"{subject}-app",
            "exp": now + 300,
            **claims,
        }
        return token

    def rotate(self, kid: str) -> None:
        """Sign with a new key from now on, published beside the old one."""
        self.key, self.kid = new_key(), kid
        self.published[kid] = self.key

    def token(
        self,
        subject: str = "alice",
        *,
        audience: str | list[str] = "nativemcp-test",
        scope: str = "",
        lifetime: int = 300,
        issuer: str | None = None,
        key: Any = None,
        algorithm: str = "RS256",
        headers: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A signed access token (RFC 9068 claims); every part can be made wrong."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.url if issuer is None else issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "exp": now + lifetime,
            "client_id": f"{subject}-app",
            "jti": f"{subject}-{now}",
            **claims,
        }
        if scope:
            body["scope"] = scope
        return jwt.encode(
            body,
            self.key if key is None else key,
            algorithm=algorithm,
            headers={"kid": self.kid, "typ": "at+jwt", **(headers or {})},
        )

    def _jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self.published.items():
            jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    async def _misbehaving(self, mode: str, last: dict[str, Any]) -> _Chunks[bytes]:
        chunk, pause = (b" ", 0.05) if mode == "trickle" else (b" " * 65536, 0.0)
        while mode == "trickle" or self.jwks_sent < 300_000_000:
            self.jwks_sent += len(chunk)
            yield chunk
            await anyio.sleep(pause)
        yield json.dumps(last).encode()

    def app(self) -> Starlette:
        """The issuer's HTTP side: metadata and keys."""

        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.url,
                    "jwks_uri": f"{self.url}/jwks",
                    "authorization_endpoint": f"{self.url}/authorize",
                    "token_endpoint": f"{self.url}/token",
                    "introspection_endpoint": f"{self.url}/introspect",
                    "response_types_supported": ["code"],
                }
            )

        async def introspect(request: Request) -> Response:
            expected = "Basic " + base64.b64encode(b"resource-server:rs-secret").decode()
            if request.headers.get("authorization") != expected:
                return JSONResponse({"error": "invalid_client"}, 401)
            form = await request.form()
            said = self.issued.get(str(form.get("token")), {"active": False})
            if self.introspect_mode != "plain":
                answer = self._misbehaving(self.introspect_mode, said)
                return StreamingResponse(answer, media_type="application/json")
            return JSONResponse(said)

        async def jwks(request: Request) -> Response:
            self.jwks_fetches += 1
            self.jwks_asked.set()
            if self.jwks_mode == "gated":
                await self.jwks_gate.wait()
            if self.jwks_mode in ("trickle", "huge"):
                answer = self._misbehaving(self.jwks_mode, self._jwks())
                return StreamingResponse(answer, media_type="application/json")
            return JSONResponse(self._jwks())

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/jwks", jwks),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )


@asynccontextmanager
async def running_issuer() -> AsyncIterator[Issuer]:
    """An `Issuer` served on a loopback port for the block."""
    issuer = Issuer()
    issuer.published[issuer.kid] = issuer.key
    async with serving(issuer.app()) as base:
        issuer.url = base
        yield issuer
