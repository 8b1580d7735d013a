"""Opaque access tokens, checked by asking the issuer (RFC 7662 token introspection).

Some providers hand out access tokens that are not JWTs (random strings only the
provider can read). `IntrospectedTokens` posts such a token to the issuer's
``introspection_endpoint`` (from its metadata), authenticated as a client of the
provider, and accepts it when the answer says ``active`` and its claims hold what a
JWT's must: ``iss`` (when given) the issuer, ``aud`` the audience, ``exp`` not past,
``nbf`` not ahead, a ``sub``. Each request asks again: a revoked token stops working at
once, at the cost of one request to the provider per MCP request.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx2
from mcp.server.auth.provider import AccessToken

from ._access_tokens import (
    CLOCK_LEEWAY,
    FETCH_TIMEOUT,
    MAX_METADATA_BYTES,
    IssuerTokens,
    IssuerUnavailable,
    TokenRefused,
    access_token,
    parsed_object,
)

__all__ = ["IntrospectedTokens"]


def _audiences(claims: dict[str, Any]) -> list[str]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


def check_claims(claims: dict[str, Any], issuer: str, audience: str, now: float) -> None:
    """Refuse an introspection answer that does not make the token valid here.

    Raises:
        TokenRefused: inactive, another issuer or audience, expired, not yet valid.
    """
    if claims.get("active") is not True:
        raise TokenRefused("the issuer says the token is not active")
    if "iss" in claims and claims["iss"] != issuer:
        raise TokenRefused(f"the token was issued by {claims['iss']!r}, not {issuer!r}")
    if audience not in _audiences(claims):
        raise TokenRefused(f"the token is not for audience {audience!r}")
    exp = claims.get("exp")
    if isinstance(exp, int | float) and exp < now - CLOCK_LEEWAY:
        raise TokenRefused("the token has expired")
    nbf = claims.get("nbf")
    if isinstance(nbf, int | float) and nbf > now + CLOCK_LEEWAY:
        raise TokenRefused("the token is not yet valid")


class IntrospectedTokens:
    """Checks opaque access tokens at ``issuer``'s introspection endpoint (RFC 7662).

    Args:
        issuer: where the endpoint is discovered from (an `IssuerTokens`, whose
            metadata is shared).
        client_id, client_secret: this server's credentials at the provider (HTTP
            Basic), as RFC 7662 §2.1 asks of a protected resource.
    """

    def __init__(self, issuer: IssuerTokens, client_id: str, client_secret: str) -> None:
        self.issuer = issuer
        self._auth = (client_id, client_secret)

    async def check(self, token: str) -> AccessToken:
        """The token as the SDK's `AccessToken`, when the issuer says it is valid here.

        Raises:
            TokenRefused: why the token is not valid here.
            IssuerUnavailable: the issuer has no introspection endpoint, cannot be
                reached, or refused this server's credentials.
        """
        metadata = await self.issuer.metadata()
        endpoint = metadata.get("introspection_endpoint")
        if not isinstance(endpoint, str):
            raise IssuerUnavailable(
                f"{self.issuer.issuer} has no introspection_endpoint: it cannot check "
                "tokens that are not JWTs"
            )
        claims = await self._introspect(endpoint, token)
        check_claims(claims, self.issuer.issuer, self.issuer.audience, time.time())
        if "sub" not in claims:
            raise TokenRefused("the issuer's answer names no subject ('sub')")
        return access_token(token, claims, self.issuer.audience)

    async def _introspect(self, endpoint: str, token: str) -> dict[str, Any]:
        """The issuer's answer about ``token``, read as a stream of at most
        `MAX_METADATA_BYTES` (a huge answer is cut off before the rest is read), the
        whole exchange within `FETCH_TIMEOUT` (a trickle too), as the key set is read.

        Raises:
            IssuerUnavailable: no answer in time, a refusal, too large, not a JSON object.
        """
        form = {"token": token, "token_type_hint": "access_token"}
        content = bytearray()
        try:
            with anyio.fail_after(FETCH_TIMEOUT):
                async with (
                    httpx2.AsyncClient(timeout=FETCH_TIMEOUT) as client,
                    client.stream("POST", endpoint, data=form, auth=self._auth) as reply,
                ):
                    if reply.status_code != 200:
                        raise IssuerUnavailable(
                            f"{endpoint} answered {reply.status_code} (are --auth-client-id "
                            "and its secret this server's credentials at the provider?)"
                        )
                    async for chunk in reply.aiter_bytes():
                        content += chunk
                        if len(content) > MAX_METADATA_BYTES:
                            raise IssuerUnavailable(
                                f"{endpoint} answered more than {MAX_METADATA_BYTES} bytes"
                            )
        except TimeoutError:
            raise IssuerUnavailable(
                f"{endpoint} did not answer in full within {FETCH_TIMEOUT:g} s"
            ) from None
        except httpx2.HTTPError as exc:
            raise IssuerUnavailable(f"cannot reach {endpoint}: {exc}") from exc
        return parsed_object(endpoint, bytes(content))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier` protocol: the token, or None when it is refused.

        Raises:
            IssuerUnavailable: as `check`.
        """
        try:
            return await self.check(token)
        except TokenRefused:
            return None
