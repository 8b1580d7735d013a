"""RFC 8693 token exchange for one user's connection to a remote server.

An upstream that trusts serve's issuer takes ``"grantType": "token_exchange"``: serve
presents the caller's access token (``subject_token``, of type ``access_token``) at the
entry's ``issuer`` with the upstream as ``audience`` and ``resource``, and sends the
token it gets back upstream. The caller's own token never goes upstream; it goes only to
the issuer the entry names, which issued it or trusts its issuer.

The exchanged token is kept in the user's `GrantStore` until it expires (30 s early),
so one exchange serves every call until then; a 401 from the upstream drops it and
exchanges once more.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncGenerator, Callable
from typing import Final
from urllib.parse import quote

import anyio.to_thread
import httpx2

from ._oauth_config import OAuthSettings
from ._token_store import GrantStore

__all__ = ["ACCESS_TOKEN_TYPE", "TOKEN_EXCHANGE_GRANT", "TokenExchange"]

TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
"""RFC 8693's ``grant_type``."""
ACCESS_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:access_token"
"""RFC 8693's token type of an OAuth access token."""
EARLY: Final = 30.0
"""Seconds before its expiry an exchanged token is no longer sent (clocks differ)."""


class TokenExchange(httpx2.Auth):
    """The httpx auth of a ``token_exchange`` entry for one user.

    Args:
        url: the upstream MCP server (the ``resource``; the ``audience`` unless the
            entry names one).
        settings: the entry's OAuth settings (``issuer`` and ``clientId`` required).
        store: the user's grant store: the exchanged token is kept there.
        give_up: makes the error raised when no exchange can be made.
        subject_token: the caller's current token (None, or answering None: none).
    """

    requires_response_body = False

    def __init__(
        self,
        url: str,
        settings: OAuthSettings,
        store: GrantStore,
        give_up: Callable[[str], Exception],
        subject_token: Callable[[], str | None] | None,
    ) -> None:
        assert settings.issuer and settings.client_id  # checked when the entry was read
        self._url = url
        self._settings = settings
        self._store = store
        self._subject = subject_token or (lambda: None)
        self._give_up = give_up
        self._endpoint: str | None = None

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Send ``request`` with the exchanged token; once more after a 401."""
        request.headers["Authorization"] = f"Bearer {await self._token()}"
        response = yield request
        if response.status_code == 401:
            await self._store.forget_tokens()
            request.headers["Authorization"] = f"Bearer {await self._token()}"
            yield request

    async def _token(self) -> str:
        grant = await anyio.to_thread.run_sync(self._store.read)  # a row: off the loop
        kept = grant.tokens if grant is not None else {}
        access, expires_at = kept.get("access_token"), kept.get("expires_at")
        fresh = not isinstance(expires_at, int | float) or expires_at - EARLY > time.time()
        if isinstance(access, str) and access and fresh:
            return access
        return await self.exchange()

    async def exchange(self) -> str:
        """Exchange the caller's token now; keep and return the upstream's token.

        Raises:
            Exception: ``give_up(reason)``: no caller token, the issuer unreachable or
                refusing (its ``error`` named), or an answer that is not a token.
        """
        from mcp.client.auth import OAuthFlowError
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        from ._refresh_on_401 import send_bounded

        subject = self._subject()
        if not subject:
            raise self._give_up("no token of the caller to exchange")
        settings = self._settings
        data = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "subject_token": subject,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "audience": settings.audience or self._url,
            "resource": self._url,
        }
        if settings.scope:
            data["scope"] = settings.scope
        headers = self._client_auth(data)
        try:
            endpoint = await self._token_endpoint()
            answer = await send_bounded(
                httpx2.Request("POST", endpoint, data=data, headers=headers)
            )
        except (httpx2.HTTPError, OAuthFlowError) as exc:
            raise self._give_up(f"the token exchange failed ({type(exc).__name__})") from None
        if answer.status_code != 200:
            raise self._give_up(f"the issuer refused the token exchange: {_error(answer)}")
        try:
            tokens = OAuthToken.model_validate_json(answer.content)
        except ValidationError:
            raise self._give_up("the issuer's token exchange answer is not a token") from None
        await self._store.set_tokens(tokens)
        return tokens.access_token

    def _client_auth(self, data: dict[str, str]) -> dict[str, str]:
        """Authenticate the client as the entry says (RFC 6749 §2.3.1)."""
        settings = self._settings
        assert settings.client_id is not None
        if not settings.client_secret:
            data["client_id"] = settings.client_id
            return {}
        if settings.token_endpoint_auth_method == "client_secret_post":
            data["client_id"] = settings.client_id
            data["client_secret"] = settings.client_secret
            return {}
        pair = f"{quote(settings.client_id, safe='')}:{quote(settings.client_secret, safe='')}"
        return {"Authorization": f"Basic {base64.b64encode(pair.encode()).decode()}"}

    async def _token_endpoint(self) -> str:
        """The issuer's token endpoint, from its metadata (RFC 8414, then OIDC)."""
        if self._endpoint is not None:
            return self._endpoint
        from mcp.client.auth.utils import (
            build_oauth_authorization_server_metadata_discovery_urls,
        )

        from ._refresh_on_401 import send_bounded

        issuer = self._settings.issuer
        assert issuer is not None
        for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, self._url):
            found = await send_bounded(httpx2.Request("GET", url))
            if found.status_code != 200:
                continue
            try:
                endpoint = found.json().get("token_endpoint")
            except ValueError:
                continue
            if isinstance(endpoint, str) and endpoint.startswith(("https://", "http://")):
                self._endpoint = endpoint
                return endpoint
        raise self._give_up(f"the issuer {issuer} publishes no token endpoint")


def _error(answer: httpx2.Response) -> str:
    """The ``error`` of an OAuth error answer (RFC 6749 §5.2), or its HTTP status."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    return str(error) if isinstance(error, str) else f"HTTP {answer.status_code}"
