"""The SDK's OAuth providers, with a refresh bound to its issuer and a second chance on a 401.

A refresh goes only to the token endpoint of the issuer the grant came from (RFC 9207,
SEP-2352: credentials are bound to their issuer). The SDK refreshes a kept token that
expired before it has discovered anything, and then builds the token URL from the MCP
server's origin (the 2025-03-26 default), so a pool started after its token expired
would send the refresh token and the client secret to the MCP server. `IssuerBound`
first discovers the kept grant's issuer's metadata (RFC 8414, at that issuer, never at
the MCP server), and refuses to send a refresh anywhere but the token endpoint it names.

The SDK refreshes a token it knows has expired, but answers a 401 with a whole new
authorization, which needs a person. A token the server stopped taking early (rotated
keys, a revoked session) usually has a refresh token that still works: `RefreshingProvider`
resends the request once after a refresh, and only then lets the SDK start over. Both
drive the SDK's flow through ``httpx2.Auth.async_auth_flow``, the public face of every
httpx auth, as the SDK's own `RedirectAwareAuth` does. Imported only when a pool uses OAuth.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final, TypeAlias
from urllib.parse import parse_qs

import anyio
import httpx2
from mcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    handle_auth_metadata_response,
    issuers_match,
)
from mcp.shared.auth import OAuthClientMetadata
from pydantic import PrivateAttr

from ..._sdk_seam import is_the_request, set_token_expiry
from ._dpop import DPoPBinding
from ._token_store import GrantStore

__all__ = [
    "BoundClientCredentials",
    "BoundPrivateKeyJWT",
    "EntryScopes",
    "IssuerBound",
    "RefreshingProvider",
    "bounded_flow",
    "refresh_target",
    "send_bounded",
]

_EXPIRED = 1.0
"""A token expiry long past (0 would read as "no expiry")."""
Sender: TypeAlias = Callable[[httpx2.Request], Awaitable[httpx2.Response]]
"""What sends one request of an auth flow and reads its answer (`send_bounded`)."""
ANSWER_LIMIT: Final = 1024 * 1024
"""The most bytes of one authorization-server answer read (metadata, registration,
token: a few KiB each), after decompression."""
ANSWER_SECONDS: Final = 30.0
"""The most seconds one authorization-server request may take in all, from connecting
to the answer's last byte (not per read: a trickle is cut off too)."""
_RESENT_HEADERS: Final = ("content-encoding", "content-length", "transfer-encoding")


async def send_bounded(request: httpx2.Request) -> httpx2.Response:
    """Send an OAuth request (discovery, registration, token, revocation) and read its
    answer whole within `ANSWER_SECONDS` and `ANSWER_LIMIT`, on a client of its own: no
    header of the MCP server's entry goes to an authorization server, and a huge or
    trickling answer fails fast. Redirects are not followed (``next_request`` is set,
    as httpx leaves it, for the SDK to follow within the origin).

    Raises:
        OAuthFlowError: the answer took too long or is too large (naming the URL).
        httpx2.HTTPError: the request failed.
    """
    where = f"{request.method} {request.url.copy_with(query=None)}"
    body = bytearray()
    try:
        with anyio.fail_after(ANSWER_SECONDS):
            async with httpx2.AsyncClient(timeout=ANSWER_SECONDS) as http:
                answer = await http.send(request, stream=True, follow_redirects=False)
                try:
                    async for chunk in answer.aiter_bytes():
                        body += chunk
                        if len(body) > ANSWER_LIMIT:
                            raise OAuthFlowError(
                                f"the answer to {where} is larger than {ANSWER_LIMIT} bytes; "
                                "not read further"
                            )
                finally:
                    await answer.aclose()
    except TimeoutError:
        raise OAuthFlowError(
            f"the answer to {where} took more than {ANSWER_SECONDS:g} s; cut off"
        ) from None
    headers = [(k, v) for k, v in answer.headers.multi_items() if k not in _RESENT_HEADERS]
    read = httpx2.Response(
        answer.status_code, headers=headers, content=bytes(body), request=request
    )
    read.next_request = answer.next_request
    return read


def refresh_target(request: httpx2.Request) -> str | None:
    """The URL a request sends a refresh token to (None: it is no refresh request)."""
    if request.method != "POST":
        return None
    try:
        form = parse_qs(request.content.decode("latin-1"))
    except httpx2.RequestNotRead:
        return None  # a streamed body: the SDK builds its token requests as forms
    return str(request.url) if form.get("grant_type") == ["refresh_token"] else None


async def bounded_flow(
    request: httpx2.Request,
    make_flow: Callable[[httpx2.Request], AsyncGenerator[httpx2.Request, httpx2.Response]],
    *,
    before: Callable[[], Awaitable[None]] | None = None,
    check: Callable[[httpx2.Request], None] | None = None,
    send: Callable[[httpx2.Request, Sender], Awaitable[httpx2.Response]] | None = None,
    dpop: DPoPBinding | None = None,
) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
    """An SDK auth flow (``make_flow(request)``) as httpx drives it, but with every
    request of its own (discovery, registration, token) sent here by `send_bounded`,
    after ``check`` (which raises to stop it); only ``request`` goes through the MCP
    client. ``before`` runs first. With ``dpop``, token requests and the MCP requests
    carry its proofs, and a ``use_dpop_nonce`` refusal is answered here, unseen by the
    SDK's flow (which would take the 401 for a refused token). With ``send``, each of
    the flow's own requests goes to ``send(outgoing, deliver)``, ``deliver`` sending it
    as said (proved, a nonce answered): a hook around the whole exchange
    (`IssuerBound._send`'s single-flight refresh)."""
    if before is not None:
        await before()
    deliver: Sender = send_bounded
    if dpop is not None:
        deliver = functools.partial(dpop.send, send=send_bounded)
    flow = make_flow(request)
    try:
        outgoing = await flow.__anext__()
        while True:
            if is_the_request(outgoing, request):
                if dpop is not None:
                    dpop.prove(request)
                response = yield outgoing
                if dpop is not None and dpop.resend(response):
                    dpop.prove(request)  # now with the nonce the refusal gave
                    response = yield request
                outgoing = await flow.asend(response)
                continue
            if check is not None:
                check(outgoing)
            if send is not None:
                outgoing = await flow.asend(await send(outgoing, deliver))
            else:
                outgoing = await flow.asend(await deliver(outgoing))
    except StopAsyncIteration:
        return
    finally:
        await flow.aclose()


async def _no_issuer() -> str | None:
    return None


class IssuerBound(OAuthClientProvider):
    """An SDK provider that refreshes only at the token endpoint of the kept grant's
    issuer: before the first request it discovers that issuer's metadata (when a
    refresh token is kept and nothing is discovered yet), and it never sends a
    refresh request to any other URL (`OAuthTokenError`, the grant kept)."""

    kept_issuer: Callable[[], Awaitable[str | None]] = staticmethod(_no_issuer)
    """The issuer of the kept grant when it holds a refresh token (None: none kept),
    read anew (off the event loop)."""
    granted_by: str | None = None
    """What `kept_issuer` said when last asked."""
    token_refused = False
    """Whether the refresh under way is for a token the server refused (a 401), not
    for one this process thinks has expired."""
    give_up: Callable[[str], Exception] = staticmethod(OAuthRegistrationError)
    """The error to raise, given why, when the flow cannot go on without a change to
    the entry (an issuer that offers no dynamic registration)."""
    dpop: DPoPBinding | None = None
    """The server's DPoP state (None: no proofs, bearer tokens only)."""

    def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return bounded_flow(
            request,
            self._flow,
            before=self._discover,
            check=self._check,
            send=self._send,
            dpop=self.dpop,
        )

    async def _send(self, outgoing: httpx2.Request, deliver: Sender) -> httpx2.Response:
        """Send one of the flow's own requests with ``deliver``; a refresh once per
        grant, across replicas (`GrantStore.refresh_once`), where the storage is a
        `GrantStore`: its DPoP proof (and nonce retry) inside the claim, so the answer
        it keeps is the one the SDK reads."""
        storage = self.context.storage
        if refresh_target(outgoing) is not None and isinstance(storage, GrantStore):
            refused, self.token_refused = self.token_refused, False
            return await storage.refresh_once(outgoing, deliver, refused=refused)
        return await deliver(outgoing)

    async def _discover(self) -> None:
        """Read the kept grant's issuer's metadata, if a refresh token is kept and
        nothing is discovered yet: a refresh then goes to its token endpoint."""
        if self.context.oauth_metadata is not None:
            return
        issuer = self.granted_by = await self.kept_issuer()
        if issuer is None:
            return
        async with self.context.lock:
            urls = build_oauth_authorization_server_metadata_discovery_urls(
                issuer, self.context.server_url
            )
            for url in urls if self.context.oauth_metadata is None else []:
                found = await send_bounded(create_oauth_metadata_request(url))
                ok, metadata = await handle_auth_metadata_response(found)
                if not ok:
                    break
                if metadata is not None and issuers_match(str(metadata.issuer), issuer):
                    self.context.oauth_metadata = metadata
                    break

    def _check(self, outgoing: httpx2.Request) -> None:
        self._check_refresh(outgoing)
        self._check_registration(outgoing)

    def _flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow for ``request`` (a subclass may wrap it)."""
        return super().async_auth_flow(request)

    def _check_registration(self, outgoing: httpx2.Request) -> None:
        """The SDK registers at the MCP server's origin (``/register``, the 2025-03-26
        default) when the issuer's metadata names no registration endpoint: an issuer
        without one offers no dynamic registration (RFC 8414 §2), and the MCP server is
        not where to register."""
        metadata = self.context.oauth_metadata
        if metadata is None or metadata.registration_endpoint is not None:
            return
        fallback = httpx2.URL(self.context.server_url).join("/register")
        if outgoing.method == "POST" and outgoing.url.copy_with(query=None) == fallback:
            raise self.give_up(
                f"the authorization server {metadata.issuer} offers no dynamic "
                "registration (its metadata names no registration_endpoint): register a "
                'client there and set "clientId" (and "clientSecret") in the entry\'s '
                '"oauth"'
            )

    def _check_refresh(self, outgoing: httpx2.Request) -> None:
        target = refresh_target(outgoing)
        if target is None:
            return
        metadata = self.context.oauth_metadata
        if metadata is not None and str(metadata.token_endpoint) == target:
            return
        granted = self.granted_by
        origin = httpx2.URL(self.context.server_url).join("/")
        if (
            metadata is None
            and granted is not None
            and granted.rstrip("/") == str(origin).rstrip("/")
            and httpx2.URL(target) == origin.join("/token")
        ):
            return  # 2025-03-26 without metadata: the origin granted it; /token is its own
        raise OAuthTokenError(
            f"not sending the refresh token to {target}: it is not the token endpoint of "
            f"{granted or 'the issuer that granted it'} (whose metadata could not be read); "
            "the grant is kept"
        )


class BoundClientCredentials(IssuerBound, ClientCredentialsOAuthProvider):
    """The SDK's client-credentials provider, its refresh bound to its issuer."""


class BoundPrivateKeyJWT(IssuerBound, PrivateKeyJWTOAuthProvider):
    """The SDK's ``private_key_jwt`` provider, its refresh bound to its issuer."""


class EntryScopes(OAuthClientMetadata):
    """Client metadata whose scope stays the entry's: the SDK replaces the scope with the
    one the server's 401 challenge (or its metadata) names, but an entry's configured
    ``scopes`` win (they are asked at registration and authorization). A step-up (a 403
    ``insufficient_scope``) still widens them: that call needs more."""

    _pinned: str | None = PrivateAttr(default=None)
    _stepping_up: Callable[[], bool] | None = PrivateAttr(default=None)

    def pin(self, scope: str | None, stepping_up: Callable[[], bool]) -> None:
        """Keep ``scope`` (None: the SDK's choice) unless ``stepping_up()``."""
        self._pinned = scope
        self._stepping_up = stepping_up

    def __setattr__(self, name: str, value: Any) -> None:
        stepping_up = self._stepping_up
        if name == "scope" and self._pinned is not None and not (stepping_up and stepping_up()):
            value = self._pinned
        super().__setattr__(name, value)


def _refusal(response: httpx2.Response) -> str:
    """Why the MCP server refused a token the issuer had just granted, in its words
    (``error`` and ``error_description`` of its challenge, RFC 6750 §3)."""
    error = extract_field_from_www_auth(response, "error") or f"HTTP {response.status_code}"
    description = extract_field_from_www_auth(response, "error_description")
    said = f"{error}: {description}" if description else error
    return f"the server refused the token the authorization server had just granted ({said})"


async def _flow_error(reason: str) -> Exception:
    return OAuthFlowError(reason)


class RefreshingProvider(IssuerBound):
    """`OAuthClientProvider` that, on a 401 to a request that carried a token it can
    refresh, refreshes and resends once before a new authorization; and that leaves a
    403 ``insufficient_scope`` as the answer when no person can be asked (``can_ask``
    false): the SDK would otherwise start a step-up authorization that cannot finish,
    and end the connection every other tool still works over."""

    can_ask: Callable[[], bool] = staticmethod(lambda: True)
    scope_refused: str | None = None
    """The scope the server asked for in the last 403 left standing (None: none)."""
    stepping_up = False
    """Whether the authorization under way is a step-up (a 403), not a first one (a 401)."""
    refused: Callable[[str], Awaitable[Exception]] = staticmethod(_flow_error)
    """The error to raise, given why, when the server refuses the token just granted."""

    async def _flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._flow(request)
        refreshed = False
        sent = 0  # times this SDK flow sent the request: twice once it authorized anew
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                sent += is_the_request(outgoing, request)
                if sent == 2 and response.status_code == 401:
                    raise await self.refused(_refusal(response))
                step_up = (
                    is_the_request(outgoing, request)
                    and response.status_code == 403
                    and extract_field_from_www_auth(response, "error") == "insufficient_scope"
                )
                if is_the_request(outgoing, request):
                    self.stepping_up = step_up
                if step_up and not self.can_ask():
                    self.scope_refused = extract_field_from_www_auth(response, "scope") or "?"
                    return  # the 403 stands: that one request needs a wider grant
                if (
                    not refreshed
                    and is_the_request(outgoing, request)
                    and response.status_code == 401
                    and "authorization" in request.headers
                    and self.context.can_refresh_token()
                ):
                    refreshed, sent = True, 0
                    await flow.aclose()
                    del request.headers["authorization"]
                    set_token_expiry(self, _EXPIRED)
                    self.token_refused = True
                    flow = super()._flow(request)
                    outgoing = await flow.__anext__()
                    continue
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
