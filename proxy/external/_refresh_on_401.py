"""The SDK's authorization-code provider, refreshing once on a 401 before it asks a person.

The SDK refreshes a token it knows has expired, but answers a 401 with a whole new
authorization, which needs a person. A token the server stopped taking early (rotated
keys, a revoked session) usually has a refresh token that still works: this resends the
request once after a refresh, and only then lets the SDK start over. It drives the
SDK's flow through ``httpx2.Auth.async_auth_flow``, the public face of every httpx auth,
as the SDK's own `RedirectAwareAuth` does. Imported only when a pool uses OAuth.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import extract_field_from_www_auth

__all__ = ["RefreshingProvider"]

_EXPIRED = 1.0
"""A token expiry long past (0 would read as "no expiry")."""


class RefreshingProvider(OAuthClientProvider):
    """`OAuthClientProvider` that, on a 401 to a request that carried a token it can
    refresh, refreshes and resends once before a new authorization; and that leaves a
    403 ``insufficient_scope`` as the answer when no person can be asked (``can_ask``
    false): the SDK would otherwise start a step-up authorization that cannot finish,
    and end the connection every other tool still works over."""

    can_ask: Callable[[], bool] = staticmethod(lambda: True)
    scope_refused: str | None = None
    """The scope the server asked for in the last 403 left standing (None: none)."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super().async_auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if (
                    outgoing is request
                    and response.status_code == 403
                    and extract_field_from_www_auth(response, "error") == "insufficient_scope"
                    and not self.can_ask()
                ):
                    self.scope_refused = extract_field_from_www_auth(response, "scope") or "?"
                    return  # the 403 stands: that one request needs a wider grant
                if (
                    not refreshed
                    and outgoing is request
                    and response.status_code == 401
                    and "authorization" in request.headers
                    and self.context.can_refresh_token()
                ):
                    refreshed = True
                    await flow.aclose()
                    del request.headers["authorization"]
                    self.context.token_expiry_time = _EXPIRED
                    flow = super().async_auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
