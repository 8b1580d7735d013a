"""serve as an OAuth 2.1 protected resource (the MCP authorization spec's resource server).

`ResourceServer` is an ASGI middleware that runs before any request handling:

- ``GET /.well-known/oauth-protected-resource`` (and its path-suffixed forms
  ``…/mcp``, ``…/mcp/<name>``) answers RFC 9728 Protected Resource Metadata: the
  resource, its authorization server (the issuer), the scopes of the scope map;
- every other request needs ``Authorization: Bearer <access token>``; without one, or
  with one that is not valid here, it answers ``401`` with
  ``WWW-Authenticate: Bearer resource_metadata="…"`` (RFC 9728 §5.1), so a client
  finds the issuer and logs in; an issuer that cannot be reached answers ``503``;
- a valid token becomes the request's identity, where both the SDK and nativemcp
  read it: ``scope["user"]`` is the SDK's `AuthenticatedUser` (its session manager
  binds each MCP session to it; another principal presenting the session id gets 404),
  ``scope["auth"]`` Starlette's `AuthCredentials` (the granted scopes), and the SDK's
  ``auth_context_var`` is set for the request (its ``requestState`` seal binds to it).
  `caller_from_scope` turns it into a `Caller`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.context import ServerRequestContext
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from nativemcp.protocol.wire import Caller

from ..._handle import CallerToken
from ...http_edge import header_value, respond
from ._access_tokens import IssuerTokens, IssuerUnavailable, TokenRefused
from ._introspection import IntrospectedTokens
from ._scopes import ScopeMap

__all__ = [
    "METADATA_PATH",
    "Authorization",
    "Caller",
    "ResourceServer",
    "caller_from_scope",
    "challenge",
    "metadata_url",
    "request_caller",
    "request_token",
    "resource_url",
    "send_json",
]

_logger = logging.getLogger("nativemcp.serve.auth")

METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
"""RFC 9728's well-known path; the resource's own path follows it (``…/mcp``)."""
_SAFE_HOST: Final = re.compile(r"[A-Za-z0-9.\-:\[\]]+")
"""A Host header that may be echoed into a URL and a quoted header parameter."""


def caller_from_scope(scope: Scope) -> Caller | None:
    """The authenticated caller of an ASGI request (None: no OAuth on this request,
    e.g. the static ``--token`` mode or stdio).

    Reads ``scope["user"]`` as `ResourceServer` (or the SDK's own bearer middleware)
    left it: the one place the identity lives, for the SDK path and any other handler.
    """
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    issuer = (token.claims or {}).get("iss")
    return Caller(
        subject=token.subject or token.client_id,
        client_id=token.client_id,
        issuer=issuer if isinstance(issuer, str) else None,
        scopes=frozenset(token.scopes),
    )


def request_token(ctx: ServerRequestContext[Any]) -> CallerToken | None:
    """The access token the caller of ``ctx`` presented (None: not under OAuth), held
    as a `CallerToken`: for an upstream entry of ``"grantType": "token_exchange"``,
    the subject token serve exchanges; never passed upstream as it is."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    return CallerToken(user.access_token.token)


def request_caller(ctx: ServerRequestContext[Any]) -> Caller | None:
    """The authenticated caller of the MCP request behind ``ctx`` (None: not under OAuth):
    how an SDK handler reads the identity (`caller_from_scope` of its HTTP request)."""
    scope = getattr(ctx.request, "scope", None)
    return caller_from_scope(scope) if isinstance(scope, dict) else None


@dataclass(frozen=True)
class Authorization:
    """How `http_app` checks its callers: OAuth access tokens from ``issuer``.

    Args:
        issuer: the authorization server's issuer identifier (its tokens' ``iss``);
            its metadata and keys are discovered from it.
        audience: what the tokens' ``aud`` must hold (the identity provider's name for
            this server: often its URL, ``https://mcp.example.com/mcp``).
        scopes: the scope map (`ScopeMap`, or ``GLOB=SCOPE[,SCOPE]`` rules).
        resource_url: the public URL of ``/mcp`` as clients reach it (behind a proxy
            that ends TLS, ``https://mcp.example.com/mcp``); default: built from each
            request's scheme and Host.
        introspection: ``(client_id, client_secret)`` of this server at the provider:
            tokens that are not JWTs are then checked at the issuer's RFC 7662
            introspection endpoint (`IntrospectedTokens`).
        verifier: checks every token instead (any of the SDK's `TokenVerifier`s).
    """

    issuer: str
    audience: str
    scopes: ScopeMap | Iterable[str] = ()
    resource_url: str | None = None
    introspection: tuple[str, str] | None = None
    verifier: TokenVerifier | None = None
    scope_map: ScopeMap = field(init=False)

    def __post_init__(self) -> None:
        scopes = self.scopes if isinstance(self.scopes, ScopeMap) else ScopeMap(self.scopes)
        object.__setattr__(self, "scope_map", scopes)
        if not self.issuer or not self.audience:
            raise ValueError("OAuth needs both an issuer and an audience")
        if self.resource_url is not None and not self.resource_url.startswith(
            ("https://", "http://")
        ):
            raise ValueError(f"the resource URL must be http(s)://…, not {self.resource_url!r}")


def _quoted(value: str) -> str:
    # Values put here are URLs and RFC 6749 scope tokens: neither holds `"` or `\`.
    return '"' + value.replace("\\", "").replace('"', "") + '"'


def challenge(
    metadata_url: str,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: Iterable[str] = (),
) -> bytes:
    """A ``WWW-Authenticate: Bearer …`` value (RFC 6750 §3, RFC 9728 §5.1)."""
    parts = []
    if error is not None:
        parts.append(f"error={_quoted(error)}")
    if description is not None:
        parts.append(f"error_description={_quoted(description[:200])}")
    needed = " ".join(scopes)
    if needed:
        parts.append(f"scope={_quoted(needed)}")
    parts.append(f"resource_metadata={_quoted(metadata_url)}")
    return ("Bearer " + ", ".join(parts)).encode("latin-1", "replace")


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    """Answer with ``status`` and ``body`` as JSON (an auth error or the metadata)."""
    data = json.dumps(body).encode()
    sized = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await respond(send, status, data, [*sized, *headers])


def resource_url(authorization: Authorization, scope: Scope) -> str:
    """The resource URL of the route a request names (``…/mcp`` or ``…/mcp/<name>``);
    a metadata request names the route after the well-known path."""
    path: str = scope.get("path", "")
    if path.startswith(METADATA_PATH):
        path = path[len(METADATA_PATH) :]
    suffix = path[len("/mcp") :] if path.startswith("/mcp/") else ""
    base = authorization.resource_url
    if base is None:
        host = header_value(scope, b"host") or ""
        if _SAFE_HOST.fullmatch(host) is None:
            host = "localhost"
        base = f"{scope.get('scheme', 'http')}://{host}/mcp"
    return base.rstrip("/") + suffix


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` is served (RFC 9728 §3.1: the well-known path
    inserted between the origin and the resource's path)."""
    scheme, _, rest = resource.partition("://")
    origin, slash, path = rest.partition("/")
    return f"{scheme}://{origin}{METADATA_PATH}{slash}{path}"


class ResourceServer:
    """ASGI middleware: Protected Resource Metadata, and a valid access token on every
    other request, its principal put where handlers read it (see the module docstring).

    Args:
        app: the app behind it.
        authorization: the issuer, audience, scope map and resource URL.
    """

    def __init__(self, app: ASGIApp, authorization: Authorization) -> None:
        self.app = app
        self.authorization = authorization
        self.jwts = IssuerTokens(authorization.issuer, authorization.audience)
        self.opaque = (
            IntrospectedTokens(self.jwts, *authorization.introspection)
            if authorization.introspection is not None
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if (
            path == METADATA_PATH
            or path == f"{METADATA_PATH}/mcp"
            or path.startswith(f"{METADATA_PATH}/mcp/")
        ):
            await self._metadata(scope, send)
            return
        where = metadata_url(resource_url(self.authorization, scope))
        supported = self.authorization.scope_map.scopes_supported
        given = header_value(scope, b"authorization") or ""
        scheme, _, token = given.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            # No credentials: no error code (RFC 6750 §3.1), the metadata says where to log in.
            await send_json(
                send,
                401,
                {
                    "error": "invalid_token",
                    "error_description": "a bearer access token is required",
                },
                [(b"www-authenticate", challenge(where, scopes=supported))],
            )
            return
        try:
            access = await self._check(token)
        except IssuerUnavailable as exc:
            _logger.warning("cannot check access tokens: %s", exc)
            await send_json(
                send,
                503,
                {
                    "error": "temporarily_unavailable",
                    "error_description": "the issuer's keys cannot be read now",
                },
                [(b"retry-after", b"5")],
            )
            return
        except TokenRefused as exc:
            _logger.info("access token refused: %s", exc)
            await send_json(
                send,
                401,
                {"error": "invalid_token", "error_description": str(exc)},
                [
                    (
                        b"www-authenticate",
                        challenge(where, error="invalid_token", description=str(exc)),
                    )
                ],
            )
            return
        user = AuthenticatedUser(access)
        scope["user"] = user
        scope["auth"] = AuthCredentials(access.scopes)
        reset = auth_context_var.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    async def _check(self, token: str) -> AccessToken:
        verifier = self.authorization.verifier
        if verifier is not None:
            access = await verifier.verify_token(token)
            if access is None:
                raise TokenRefused("the token is not valid here")
            return access
        # A JWT is three base64url parts; anything else is opaque, for the issuer to read.
        if self.opaque is not None and token.count(".") != 2:
            return await self.opaque.check(token)
        return await self.jwts.check(token)

    async def _metadata(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_json(send, 405, {"error": "method not allowed"}, [(b"allow", b"GET, HEAD")])
            return
        supported = self.authorization.scope_map.scopes_supported
        body: dict[str, Any] = {
            "resource": resource_url(self.authorization, scope),
            "authorization_servers": [self.authorization.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "nativemcp",
        }
        if supported:
            body["scopes_supported"] = supported
        # Public metadata: any page may read it (a browser-based client discovers with it).
        await send_json(
            send,
            200,
            body,
            [(b"access-control-allow-origin", b"*"), (b"cache-control", b"public, max-age=300")],
        )
