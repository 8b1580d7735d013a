"""OAuth 2.1 to a remote MCP server, through the SDK's ``mcp.client.auth`` providers.

`ServerAuthorization` is one server's side of it: it picks the SDK provider for the
entry's `OAuthSettings` (authorization code with PKCE, or client credentials with a
secret or a ``private_key_jwt`` assertion), keeps the grant in a `GrantStore`, and
answers the provider's two questions of a person:

- where to send them (the authorization URL): to the pool's redirect hook, which shows
  or follows it and gives back the URL the browser was sent to (or None: the browser
  comes back to the loopback callback port, where this listens);
- what came back (the code, the state, the issuer).

Discovery (RFC 9728, RFC 8414 and the 2025-03-26 fallbacks), CIMD, dynamic
registration, the ``iss`` checks, scope selection and step-up, and refreshing a token
that expired are the SDK's; refreshing once on a 401 is `_refresh_on_401`'s. A pool
with no redirect hook cannot ask a person: when the provider needs one (no grant kept,
or the kept one was refused, ``invalid_grant``), the kept tokens are dropped once and
the server is marked as needing authorization (`NeedsAuthorization`); nothing retries
until someone runs ``nativemcp auth login``.
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import logging
import shlex
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, quote, urlsplit

import anyio
import anyio.abc

from nativemcp.protocol import NativeMCPResponse, Tool, tool_error_response

from ..._sdk_seam import set_token_expiry
from ._grant_rows import Grant, GrantPlace
from ._identity_assertion import AssertionHook, identity_assertion_provider
from ._loopback_callback import CALLBACK_PATH, LoopbackCallback
from ._oauth_config import OAuthSettings
from ._token_store import GrantStore

if TYPE_CHECKING:
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
    )

    from ._refresh_on_401 import EntryScopes, IssuerBound

__all__ = [
    "CALLBACK_PATH",
    "CLIENT_NAME",
    "UNAVAILABLE_TOOL",
    "NeedsAuthorization",
    "RedirectHook",
    "ServerAuthorization",
    "configured_client",
    "expiry_text",
    "login_hint",
    "revoke",
    "unavailable_response",
    "unavailable_tool",
]

RedirectHook = Callable[[str], "Awaitable[str | None] | str | None"]
"""Given the authorization URL: show it to a person (or follow it), and return the URL
the authorization server redirected to (with ``code`` and ``state``), or None for a
browser that comes back to the loopback callback port."""

CLIENT_NAME: Final = "nativemcp"
"""The client name sent in dynamic registration."""
CALLBACK_WAIT: Final = 600.0
"""Seconds the loopback listener waits for the browser to come back."""


def login_hint(server: str) -> str:
    """What to run to authorize ``server`` (its name quoted for the shell)."""
    return f"run: nativemcp auth login {shlex.quote(server)}"


class NeedsAuthorization(Exception):
    """The server needs a person to authorize nativemcp, and none can be asked here."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(
            f"MCP server {server!r} needs authorization ({reason}); {login_hint(server)}"
        )
        self.server = server
        self.reason = reason


class _QuietNeedsAuthorization(logging.Filter):
    """Drop the SDK's "OAuth flow error" traceback when the flow stopped only because a
    person must sign in: the server's own warning says that, with what to run."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, NeedsAuthorization)


_QUIET: Final = _QuietNeedsAuthorization()


def _stored_port(client: dict[str, Any] | None) -> int | None:
    """The loopback port of a kept registration's redirect URI (it must not change)."""
    for uri in (client or {}).get("redirect_uris") or []:
        parts = urlsplit(str(uri))
        if parts.hostname in ("localhost", "127.0.0.1") and parts.port:
            return parts.port
    return None


class ServerAuthorization:
    """One remote server's OAuth client: the SDK provider, its grant, its redirects.

    Args:
        server: the server's name (for messages).
        url: the MCP endpoint.
        settings: the entry's OAuth settings.
        folder: the grants' folder or another `GrantPlace` (None: kept in memory for
            this pool's life).
        redirect: the pool's redirect hook (None: no person can be asked).
        assertion: the pool's hook for an identity assertion (an ID-JAG), for the
            ``identity_assertion`` grant (None: such a server needs authorization).
        user: whom the grant acts for (None: the pool's own grant).
        redirect_uri: serve's callback, for a grant per user (None: a loopback port).
        subject_token: the caller's token, for a ``token_exchange`` grant.
    """

    def __init__(
        self,
        server: str,
        url: str,
        settings: OAuthSettings,
        folder: Path | GrantPlace | None,
        redirect: RedirectHook | None = None,
        assertion: AssertionHook | None = None,
        *,
        user: str | None = None,
        redirect_uri: Callable[[], str] | None = None,
        subject_token: Callable[[], str | None] | None = None,
    ) -> None:
        self.server = server
        self.url = url
        self.settings = settings
        logging.getLogger("mcp.client.auth.oauth2").addFilter(_QUIET)  # added once
        self._redirect = redirect
        self._assertion = assertion
        self._served_redirect = redirect_uri
        self._subject_token = subject_token
        self.needs_authorization: str | None = None
        """Why the server needs a person to authorize it (None: it does not, yet)."""
        self._provider: OAuthClientProvider | httpx2.Auth | None = None
        if settings.grant == "workload_identity":
            folder = None  # SEP-1933: its tokens are not persisted; a restart asks anew
        self.store = GrantStore(
            folder, url, user=user, client_id=settings.client_id, issuer=self._issuer
        )
        self._kept: Grant | None = None  # read by `prepare`, for `auth`
        self._callback: LoopbackCallback | None = None
        self._state: str | None = None  # of the authorization request under way
        self._redirected_to: str | None = None
        self.person_done: anyio.Event | None = None
        """Set when the person asked to sign in is done (None: nobody was asked): the
        server's start timeout does not count their time."""

    def has_grant(self) -> bool:
        """Whether tokens are kept for the server now, read anew (another process's
        ``nativemcp auth login`` may have written them since the last look). Blocks:
        call it in a thread."""
        grant = self.store.read()
        return bool(grant is not None and grant.tokens.get("access_token"))

    async def prepare(self) -> None:
        """Read the kept grant (off the event loop) before a connection's `auth` makes
        the provider from it: its expiry, its loopback port."""
        if self._provider is None:
            self._kept = await anyio.to_thread.run_sync(self.store.read)

    def start_over(self) -> None:
        """Forget this process's provider and why it gave up: the next connection reads
        the kept grant again."""
        self._provider = None
        self.needs_authorization = None
        self.close()

    def close(self) -> None:
        """Give back the loopback port held for a person's sign-in, if any (idempotent)."""
        if self._callback is not None:
            self._callback.close()

    @contextlib.contextmanager
    def asking(self, redirect: RedirectHook | None) -> Iterator[None]:
        """Within the block, ask a person through ``redirect`` (None: the pool's hook)."""
        kept = self._redirect
        self._redirect = redirect or kept
        try:
            yield
        finally:
            self._redirect = kept

    def _issuer(self) -> str | None:
        from mcp.client.auth import OAuthClientProvider

        provider = self._provider
        if self.settings.grant == "identity_assertion":
            return self.settings.issuer  # configuration, never discovered
        if not isinstance(provider, OAuthClientProvider):
            return None
        metadata = provider.context.oauth_metadata
        if metadata is not None:
            return str(metadata.issuer)
        return provider.context.auth_server_url

    # -- the provider -------------------------------------------------------------------

    def auth(self) -> httpx2.Auth:
        """The SDK provider for this server, one for every connection (a token is reused).

        Raises:
            ValueError: the settings cannot make a provider (a bad private key).
        """
        if self._provider is None:
            if self.settings.grant == "token_exchange":
                from ._token_exchange import TokenExchange

                self.store.fixed_client = configured_client(self.settings)
                self._provider = TokenExchange(
                    self.url, self.settings, self.store, self._give_up, self._subject_token
                )
                return self._provider
            if self.settings.grant == "identity_assertion":
                # A kept token that expired is refused (401): the SDK's provider then
                # gets a new ID-JAG and exchanges it.
                from ._dpop import DPoPBinding

                self.store.fixed_client = configured_client(self.settings)
                self._provider = identity_assertion_provider(
                    self.url,
                    self.settings,
                    self.store,
                    self._assertion,
                    self._give_up,
                    DPoPBinding(self.store),
                )
                return self._provider
            provider = self._provider = self._make_provider()
            # The SDK reads tokens from storage without their expiry: restore it, so a
            # token that expired while nothing ran is refreshed before it is sent.
            expires_at = self._kept.tokens.get("expires_at") if self._kept else None
            if isinstance(expires_at, int | float):
                set_token_expiry(provider, float(expires_at))
        return self._provider

    def _make_provider(self) -> IssuerBound:
        from ._dpop import DPoPBinding
        from ._refresh_on_401 import EntryScopes, RefreshingProvider

        provider = self._machine_provider() or RefreshingProvider(
            server_url=self.url,
            client_metadata=self._client_metadata(),
            storage=self.store,
            redirect_handler=self._on_redirect,
            callback_handler=self._on_callback,
            client_metadata_url=self.settings.client_metadata_url,
        )
        if isinstance(provider, RefreshingProvider):
            provider.can_ask = lambda: self._redirect is not None
            provider.refused = self._refused
            metadata = provider.context.client_metadata
            if isinstance(metadata, EntryScopes):
                metadata.pin(self.settings.scope, lambda: provider.stepping_up)
        # A refresh goes to the kept grant's issuer only, never to the MCP server.
        provider.kept_issuer = self._refresh_issuer
        provider.give_up = self._give_up
        provider.dpop = DPoPBinding(self.store)
        return provider

    async def _refresh_issuer(self) -> str | None:
        """The issuer of the kept grant when it holds a refresh token (None: none kept):
        the only party a refresh may go to."""
        grant = await anyio.to_thread.run_sync(self.store.read)
        if grant is None or not grant.tokens.get("refresh_token"):
            return None
        return grant.key.issuer or None

    def _machine_provider(self) -> IssuerBound | None:
        """The provider of an entry no person signs in for (None: authorization code)."""
        if self.settings.grant != "workload_identity":
            return self._client_credentials_provider()
        from ._workload_identity import WorkloadIdentity

        return WorkloadIdentity(self.url, self.settings, self.store, self._assertion, self._give_up)

    def _client_credentials_provider(self) -> IssuerBound | None:
        """The provider of a ``client_credentials`` entry (None: another grant)."""
        from mcp import MCPDeprecationWarning
        from mcp.client.auth.extensions.client_credentials import SignedJWTParameters

        from ._refresh_on_401 import BoundClientCredentials, BoundPrivateKeyJWT

        settings = self.settings
        if settings.grant != "client_credentials":
            return None
        assert settings.client_id is not None  # checked when the entry was read
        self.store.fixed_client = configured_client(settings)
        with warnings.catch_warnings():
            # Without a configured issuer the SDK warns that the server names the
            # authorization server; the entry's 'issuer' is how to pin it.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            if settings.private_key:
                assertion = SignedJWTParameters(
                    issuer=settings.client_id,
                    subject=settings.client_id,
                    signing_algorithm=settings.signing_algorithm,
                    signing_key=settings.private_key,
                ).create_assertion_provider()
                return BoundPrivateKeyJWT(
                    server_url=self.url,
                    storage=self.store,
                    client_id=settings.client_id,
                    assertion_provider=assertion,
                    scope=settings.scope,
                    issuer=settings.issuer,
                )
            post = settings.token_endpoint_auth_method == "client_secret_post"
            return BoundClientCredentials(
                server_url=self.url,
                storage=self.store,
                client_id=settings.client_id,
                client_secret=settings.client_secret or "",
                token_endpoint_auth_method="client_secret_post" if post else "client_secret_basic",
                scope=settings.scope,
                issuer=settings.issuer,
            )

    def _client_metadata(self) -> EntryScopes:
        """The authorization-code client's metadata (its redirect URI, its scopes)."""
        from ._refresh_on_401 import EntryScopes

        settings = self.settings
        redirect_uri = self._redirect_uri()
        self.store.fixed_client = configured_client(settings, redirect_uri)
        return EntryScopes.model_validate(
            {
                "client_name": CLIENT_NAME,
                "redirect_uris": [redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "scope": settings.scope,
                "token_endpoint_auth_method": settings.token_endpoint_auth_method,
            }
        )

    def _redirect_uri(self) -> str:
        if self._served_redirect is not None:
            return self._served_redirect()  # serve's callback: no port of our own
        self.close()
        kept = self._kept.client if self._kept is not None else None
        port = self.settings.callback_port or _stored_port(kept)
        callback = self._callback = LoopbackCallback(port)  # None: a free port, bound now
        if self._redirect is None:
            # Nobody to send to a browser: the port is only named (a registration keeps
            # it), and bound by whoever asks a person later.
            callback.close()
        return callback.uri

    # -- a person in the loop -----------------------------------------------------------

    async def _on_redirect(self, authorization_url: str) -> None:
        """The provider needs a person: hand the URL to the hook, or give up cleanly."""
        if self._redirect is None:
            had_grant = await self.store.forget_tokens()
            raise self._give_up(
                "the kept authorization was refused or has expired"
                if had_grant
                else "no authorization is kept for it"
            )
        self._redirected_to = None
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        self._state = states[0] if states else None
        callback = self._callback
        if callback is not None:  # else serve's callback: the hook waits for it there
            try:
                callback.listen()  # before the person goes: a quick browser finds it
            except OSError as exc:
                reason = f"cannot listen on {callback.uri}: {exc.strerror or exc}"
                raise self._give_up(reason) from None
        self.person_done = anyio.Event()
        try:
            outcome = self._redirect(authorization_url)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except BaseException:
            self._done_asking()
            raise
        self._redirected_to = outcome

    def _done_asking(self) -> None:
        self.close()
        if self.person_done is not None:
            self.person_done.set()

    def take_scope_refusal(self, tool: str) -> str | None:
        """Why a call of ``tool`` was refused for want of scope (a 403 left standing
        since the last look, when no person could be asked to widen the grant): the
        scopes asked, granted and missing, and what to do (None: no such refusal)."""
        from ._refresh_on_401 import RefreshingProvider

        provider = self._provider
        if not isinstance(provider, RefreshingProvider) or provider.scope_refused is None:
            return None
        wanted, provider.scope_refused = provider.scope_refused, None
        tokens = provider.context.current_tokens  # what was granted, held: no read
        granted = (tokens.scope if tokens is not None else None) or ""
        missing = [s for s in wanted.split() if s not in granted.split()]
        said = (
            f"it asks for scope {wanted!r} to call {tool!r}; the grant has "
            f"{granted or '(no scope named)'!r}, without {' '.join(missing)!r}"
        )
        configured = self.settings.scopes
        if configured and all(scope in configured for scope in missing):
            return (
                f"{said}; the entry asks for {' '.join(configured)!r} and the authorization "
                "server did not grant it all: ask its administrator for it"
            )
        return f'{said}; add {" ".join(missing)!r} to the entry\'s "oauth" "scopes"'

    def auth_redirect_uri(self) -> str:
        """The redirect URI the provider sends (the loopback callback)."""
        from mcp.client.auth import OAuthClientProvider

        provider = self._provider
        uris = (
            provider.context.client_metadata.redirect_uris
            if isinstance(provider, OAuthClientProvider)
            else None
        )
        return str(uris[0]) if uris else ""

    async def _refused(self, reason: str) -> NeedsAuthorization:
        """Stop: the server refused the tokens just granted (asking again would get the
        same ones). They are dropped; ``reason`` says what the server said."""
        await self.store.forget_tokens()
        return self._give_up(reason)

    def _give_up(self, reason: str) -> NeedsAuthorization:
        self.needs_authorization = reason
        return NeedsAuthorization(self.server, reason)

    async def _on_callback(self) -> AuthorizationCodeResult:
        """The code, state and issuer the authorization server sent back.

        Raises:
            NeedsAuthorization: the server sent an error instead, or nobody came back.
        """
        from mcp.shared.auth import AuthorizationCodeResult

        callback = self._callback
        try:
            target = self._redirected_to
            if target is None:
                if callback is None:  # serve's callback: the hook waited for the browser
                    raise self._give_up("nobody came back from the browser in time")
                with anyio.move_on_after(CALLBACK_WAIT):
                    target = await callback.wait(self._state)
                if target is None:
                    raise self._give_up("nobody came back from the browser")
        finally:
            self._done_asking()
        query = parse_qs(urlsplit(target).query)

        def first(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        code = first("code")
        if not code:
            error = first("error") or "no code in the redirect"
            raise self._give_up(f"the authorization server answered {error}")
        self.needs_authorization = None
        return AuthorizationCodeResult(code=code, state=first("state"), iss=first("iss"))


def configured_client(
    settings: OAuthSettings, redirect_uri: str | None = None
) -> OAuthClientInformationFull | None:
    """The client an entry names (``clientId``), as the SDK's providers take it; None
    when the entry names none (the client registers itself)."""
    from mcp.shared.auth import OAuthClientInformationFull

    if settings.client_id is None:
        return None
    from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

    code = settings.grant == "authorization_code"
    grant = JWT_BEARER_GRANT_TYPE if settings.grant == "identity_assertion" else settings.grant
    method: str = settings.token_endpoint_auth_method or (
        "client_secret_basic" if settings.client_secret else "none"
    )
    if settings.private_key:
        method = "private_key_jwt"
    return OAuthClientInformationFull.model_validate(
        {
            "client_id": settings.client_id,
            "client_secret": settings.client_secret,
            "redirect_uris": [redirect_uri] if redirect_uri else None,
            "token_endpoint_auth_method": method,
            "grant_types": ["authorization_code", "refresh_token"] if code else [grant],
            "response_types": ["code"] if code else [],
        }
    )


def expiry_text(expires_at: float | None) -> str:
    """``in 5 min`` / ``expired`` / ``no expiry``, for status lines."""
    if expires_at is None:
        return "no expiry"
    left = expires_at - time.time()
    if left <= 0:
        return "expired"
    return f"in {int(left // 60)} min" if left >= 60 else f"in {int(left)} s"


UNAVAILABLE_TOOL: Final = "needs_authorization"
"""The one tool a server that needs authorization lists, so that the catalog shows it
and a call explains what to do."""


def unavailable_tool(server: str, reason: str) -> Tool:
    """The tool listed in place of a server's tools until it is authorized."""
    return Tool(
        name=UNAVAILABLE_TOOL,
        description=(
            f"Unavailable: MCP server {server!r} needs authorization ({reason}); "
            f"{login_hint(server)}"
        ),
        input_schema={"type": "object", "properties": {}},
    )


def unavailable_response(server: str, reason: str) -> NativeMCPResponse[Any]:
    """The tool error every call to a server that needs authorization gets."""
    return tool_error_response(
        f"MCP server {server!r} needs authorization ({reason}); {login_hint(server)}"
    )


async def revoke(store: GrantStore, server_url: str) -> str:
    """Ask the issuer of ``store``'s grant to revoke its tokens (RFC 7009), where its
    metadata names a ``revocation_endpoint``; what happened, in words. Best effort: the
    caller deletes the kept grant either way.
    """
    import httpx2
    from mcp.client.auth import OAuthFlowError
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

    from ._refresh_on_401 import send_bounded

    shown = await store.status()
    client = store.fixed_client or await store.stored_client()
    tokens = await store.get_tokens()
    if shown is None or client is None or tokens is None:
        return "nothing to revoke"
    token = tokens.refresh_token or tokens.access_token
    hint = "refresh_token" if tokens.refresh_token else "access_token"
    data = {"token": token, "token_type_hint": hint, "client_id": client.client_id}
    headers: dict[str, str] = {}
    if client.client_secret and client.token_endpoint_auth_method == "client_secret_post":
        data["client_secret"] = client.client_secret
    elif client.client_secret:
        # RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
    urls = build_oauth_authorization_server_metadata_discovery_urls(shown["issuer"], server_url)
    try:
        endpoint = None
        for url in urls:
            found = await send_bounded(httpx2.Request("GET", url))
            if found.status_code == 200:
                endpoint = found.json().get("revocation_endpoint")
                break
        if not endpoint:
            return "the issuer offers no revocation; the tokens expire on their own"
        answer = await send_bounded(
            httpx2.Request("POST", str(endpoint), data=data, headers=headers)
        )
    except (httpx2.HTTPError, OAuthFlowError, ValueError) as exc:
        return f"could not reach the issuer to revoke ({type(exc).__name__})"
    if answer.status_code != 200:
        return f"the issuer refused to revoke (HTTP {answer.status_code})"
    return "revoked at the issuer"
