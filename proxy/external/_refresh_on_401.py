"""The SDK's authorization-code provider, refreshing once on a 401 before it asks a person.

The SDK refreshes a token it knows has expired, but answers a 401 with a whole new
authorization, which needs a person. A token the server stopped taking early (rotated
keys, a revoked session) usually has a refresh token that still works: this resends the
request once after a refresh, and only then lets the SDK start over. It drives the
SDK's flow through ``httpx2.Auth.async_auth_flow``, the public face of every httpx auth,
as the SDK's own `RedirectAwareAuth` does. Imported only when a pool uses OAuth.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth import OAuthClientProvider

__all__ = ["RefreshingProvider"]

_EXPIRED = 1.0
"""A token expiry long past (0 would read as "no expiry")."""


class RefreshingProvider(OAuthClientProvider):
    """`OAuthClientProvider` that, on a 401 to a request that carried a token it can
    refresh, refreshes and resends once before a new authorization."""

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
