"""SEP-990 enterprise-managed authorization for one remote server: leg 2 is the SDK's.

The SDK's ``IdentityAssertionOAuthProvider`` presents an Identity Assertion
Authorization Grant (ID-JAG) at the entry's ``issuer`` (RFC 7523 jwt-bearer, with the
entry's client id and secret) and keeps the MCP access token in the server's
`GrantStore`. Leg 1, getting the ID-JAG from the enterprise identity provider (an
RFC 8693 token exchange with the user's ID token), depends on the deployment: the
pool's `AssertionHook` does it. Without a hook the server needs authorization
(`NeedsAuthorization`), like an authorization-code server with no person to ask.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING

from ._oauth_config import OAuthSettings
from ._token_store import GrantStore

if TYPE_CHECKING:
    import httpx2

    from ._dpop import DPoPBinding

__all__ = ["NO_ASSERTION_HOOK", "AssertionHook", "identity_assertion_provider"]

AssertionHook = Callable[[str, str], "Awaitable[str] | str"]
"""Given the MCP authorization server's issuer (the ID-JAG's ``aud``) and the MCP
server's resource identifier (its ``resource`` claim): the ID-JAG, got from the
enterprise identity provider (an RFC 8693 token exchange of the user's ID token)."""

NO_ASSERTION_HOOK = (
    "its grant is an identity assertion (SEP-990) and the pool has no oauth_assertion "
    "hook to get an ID-JAG from the identity provider"
)
"""Why a server with the ``identity_assertion`` grant cannot sign in without a hook."""


def identity_assertion_provider(
    url: str,
    settings: OAuthSettings,
    store: GrantStore,
    hook: AssertionHook | None,
    give_up: Callable[[str], Exception],
    dpop: DPoPBinding | None = None,
) -> httpx2.Auth:
    """The SDK's jwt-bearer provider for ``settings`` (grant ``identity_assertion``),
    asking ``hook`` for each ID-JAG; ``give_up(reason)`` is raised when there is none.
    With ``dpop``, its token is bound where the issuer takes proofs (`_dpop`)."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    from ._refresh_on_401 import bounded_flow

    class Bounded(IdentityAssertionOAuthProvider):
        """Its requests to the issuer bounded in size and time (`send_bounded`)."""

        def async_auth_flow(
            self, request: httpx2.Request
        ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            return bounded_flow(request, super().async_auth_flow, dpop=dpop)

    # Checked when the entry was read: a confidential client provisioned at one issuer.
    assert settings.client_id and settings.client_secret and settings.issuer

    async def assertion(audience: str, resource: str) -> str:
        if hook is None:
            raise give_up(NO_ASSERTION_HOOK)
        answer = hook(audience, resource)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, str) or not answer:
            raise TypeError(
                f"the oauth_assertion hook must return the ID-JAG (a JWT string), "
                f"not {type(answer).__name__}"
            )
        return answer

    post = settings.token_endpoint_auth_method == "client_secret_post"
    return Bounded(
        server_url=url,
        storage=store,
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        issuer=settings.issuer,
        assertion_provider=assertion,
        scope=settings.scope,
        token_endpoint_auth_method="client_secret_post" if post else "client_secret_basic",
    )
