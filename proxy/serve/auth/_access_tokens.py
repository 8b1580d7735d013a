"""JWT access tokens checked against an OAuth issuer's published keys (RFC 9068, RFC 8414).

`IssuerTokens` is the SDK's `TokenVerifier` for one issuer and one audience: it reads the
issuer's metadata (``/.well-known/oauth-authorization-server`` or OpenID Connect's
``/.well-known/openid-configuration``), fetches the ``jwks_uri`` it names, keeps the keys,
and checks each token's signature, ``iss``, ``aud``, ``exp`` and ``nbf`` with PyJWT.
No cryptography is written here: PyJWT (with ``cryptography``) verifies; it is already a
dependency of the ``mcp`` package, whose own auth code uses it.

What a security reviewer looks for, and where it is:

- the algorithm is never the token's choice alone: the header's ``alg`` must be in an
  allow-list of asymmetric algorithms (no ``none``, no HMAC) *and* fit the type of the
  key its ``kid`` names (an RSA key verifies RS/PS only, an EC key its curve's ES), so
  a token signed with HS256 using the public key as the secret is refused;
- keys come only from the issuer's own ``jwks_uri``; an unknown ``kid`` fetches the set
  again (keys rotate), at most once per `JWKS_REFETCH_INTERVAL` seconds, so a flood of
  made-up ``kid`` values costs the issuer one request; while a fetch runs, a token whose
  key is held is checked with it (no valid user waits on a made-up ``kid``'s fetch);
- each fetch is bounded as a whole: `FETCH_TIMEOUT` seconds (not per read: a trickling
  answer is cut off too) and `MAX_METADATA_BYTES`, read as a stream (a huge answer is
  never held); past either, the issuer is unavailable (503);
- the issuer's metadata must name the configured issuer exactly (RFC 8414 §3.3).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

__all__ = [
    "ALLOWED_ALGORITHMS",
    "JWKS_MAX_AGE",
    "JWKS_REFETCH_INTERVAL",
    "IssuerTokens",
    "IssuerUnavailable",
    "TokenRefused",
    "access_token",
    "parsed_object",
]

_logger = logging.getLogger("nativemcp.serve.auth")

ALLOWED_ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""The signature algorithms an access token may use: asymmetric only (no ``none``, no
HMAC, whose key would be a secret this server does not hold)."""

_KEY_ALGORITHMS: Final[Mapping[str, frozenset[str]]] = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512"}),
    "OKP": frozenset({"EdDSA"}),
}
"""Which algorithms a key of each JWK ``kty`` verifies: the key's type decides, not the
token's header (the HS/RS confusion)."""
_EC_CURVES: Final[Mapping[str, str]] = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}

JWKS_REFETCH_INTERVAL: Final = 30.0
"""Seconds between two fetches of the key set for a ``kid`` it does not hold."""
JWKS_MAX_AGE: Final = 3600.0
"""Seconds the key set is used before it is fetched again on the next token."""
CLOCK_LEEWAY: Final = 30
"""Seconds of clock difference allowed on ``exp`` and ``nbf``."""
FETCH_TIMEOUT: Final = 10.0
"""Seconds one request to the issuer may take, its whole answer read."""
MAX_METADATA_BYTES: Final = 1_000_000
"""The largest issuer metadata or key set read."""


class TokenRefused(Exception):
    """The access token is not valid here (the client gets 401 ``invalid_token``)."""


class IssuerUnavailable(Exception):
    """The issuer's metadata or keys could not be read (the client gets 503)."""


def _well_known(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414's path-inserted form, then OpenID
    Connect's appended form (and its path-inserted variant, which some providers use)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    at = [
        f"/.well-known/oauth-authorization-server{path}",
        f"{path}/.well-known/openid-configuration",
        f"/.well-known/openid-configuration{path}",
    ]
    seen: list[str] = []
    for where in at:
        url = urlunsplit((parts.scheme, parts.netloc, where, "", ""))
        if url not in seen:
            seen.append(url)
    return seen


async def _get_json(client: httpx2.AsyncClient, url: str) -> dict[str, Any] | None:
    """The JSON object at ``url``, read as a stream of at most `MAX_METADATA_BYTES`;
    None when it answers 404 (try the next place).

    Raises:
        IssuerUnavailable: the request failed, or the answer is too large or not a JSON
            object.
    """
    try:
        async with client.stream("GET", url, headers={"accept": "application/json"}) as reply:
            if reply.status_code == 404:
                return None
            if reply.status_code != 200:
                raise IssuerUnavailable(f"{url} answered {reply.status_code}")
            content = bytearray()
            async for chunk in reply.aiter_bytes():
                content += chunk
                if len(content) > MAX_METADATA_BYTES:  # before the rest is read
                    raise IssuerUnavailable(_too_large(url))
    except httpx2.HTTPError as exc:
        raise IssuerUnavailable(f"cannot reach {url}: {exc}") from exc
    return parsed_object(url, bytes(content))


def _too_large(url: str) -> str:
    return f"{url} answered more than {MAX_METADATA_BYTES} bytes"


def parsed_object(url: str, content: bytes) -> dict[str, Any]:
    """The JSON object ``content`` (what ``url`` answered).

    Raises:
        IssuerUnavailable: it is too large, or not one JSON object.
    """
    if len(content) > MAX_METADATA_BYTES:
        raise IssuerUnavailable(_too_large(url))
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise IssuerUnavailable(f"{url} did not answer JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise IssuerUnavailable(f"{url} did not answer a JSON object")
    return data


def _key_algorithms(key: jwt.PyJWK, jwk: Mapping[str, Any]) -> frozenset[str]:
    """The algorithms ``key`` may verify: its type's, narrowed by its ``alg`` and curve."""
    kty = jwk.get("kty")
    algorithms = _KEY_ALGORITHMS.get(kty, frozenset()) if isinstance(kty, str) else frozenset()
    if kty == "EC":
        curve = _EC_CURVES.get(str(jwk.get("crv")))
        algorithms = algorithms & {curve} if curve else frozenset()
    declared = jwk.get("alg")
    if isinstance(declared, str):
        algorithms = algorithms & {declared}
    return algorithms & ALLOWED_ALGORITHMS


class IssuerTokens:
    """Checks JWT access tokens issued by ``issuer`` for ``audience`` (the SDK's
    `TokenVerifier`): signature against the issuer's JWKS, ``iss``, ``aud``, ``exp``,
    ``nbf`` and a ``sub``.

    Args:
        issuer: the issuer identifier, exactly as its tokens' ``iss`` and its
            metadata's ``issuer`` say it (``https://idp.example.com/realms/team``).
        audience: the value the token's ``aud`` must hold (one of, for a list).
        http_client: how to reach the issuer (default: a new client per fetch; fetches
            are rare).
        refetch_interval: seconds between two fetches of the key set for a ``kid`` it
            does not hold (`JWKS_REFETCH_INTERVAL`).
        fetch_timeout: seconds one request to the issuer may take, its whole answer
            read (`FETCH_TIMEOUT`).
    """

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        http_client: httpx2.AsyncClient | None = None,
        refetch_interval: float = JWKS_REFETCH_INTERVAL,
        fetch_timeout: float = FETCH_TIMEOUT,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.refetch_interval = refetch_interval
        self.fetch_timeout = fetch_timeout
        self._client = http_client
        self._metadata: dict[str, Any] | None = None
        self._keys: dict[str | None, tuple[jwt.PyJWK, frozenset[str]]] = {}
        self._fetched_at: float | None = None
        self._unavailable: IssuerUnavailable | None = None
        self._lock = anyio.Lock()
        self.fetches = 0
        """How many times the key set was fetched (for tests and metrics)."""

    async def _fetch(self, url: str) -> dict[str, Any] | None:
        """`_get_json`, the whole of it within ``fetch_timeout`` (a per-read limit alone
        lets an answer that trickles hold the request for ever).

        Raises:
            IssuerUnavailable: as `_get_json`, or it took longer.
        """
        try:
            with anyio.fail_after(self.fetch_timeout):
                if self._client is not None:
                    return await _get_json(self._client, url)
                timeout = self.fetch_timeout
                async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
                    return await _get_json(client, url)
        except TimeoutError:
            raise IssuerUnavailable(
                f"{url} did not answer in full within {self.fetch_timeout:g} s"
            ) from None

    async def metadata(self) -> dict[str, Any]:
        """The issuer's authorization server metadata (read once, then kept).

        Raises:
            IssuerUnavailable: no metadata found, it names another issuer, or it has
                no ``jwks_uri``.
        """
        if self._metadata is not None:
            return self._metadata
        tried = _well_known(self.issuer)
        for url in tried:
            data = await self._fetch(url)
            if data is None:
                continue
            # RFC 8414 §3.3: metadata naming another issuer must not be used.
            if data.get("issuer") != self.issuer:
                raise IssuerUnavailable(
                    f"{url} names issuer {data.get('issuer')!r}, not {self.issuer!r}: "
                    "give --auth-issuer exactly as the provider's tokens say 'iss'"
                )
            if not isinstance(data.get("jwks_uri"), str):
                raise IssuerUnavailable(f"{url} has no jwks_uri: its tokens cannot be checked")
            self._metadata = data
            return data
        raise IssuerUnavailable(f"no authorization server metadata at {', '.join(tried)}")

    async def _refresh(self, now: float) -> None:
        """Fetch the key set again (the caller holds the lock)."""
        # Counted from the try, not the success: an issuer that is down is asked again
        # only after the interval, not once per request.
        self._fetched_at = now
        self.fetches += 1
        try:
            metadata = await self.metadata()
            data = await self._fetch(str(metadata["jwks_uri"]))
            if data is None or not isinstance(data.get("keys"), list):
                raise IssuerUnavailable(f"{metadata['jwks_uri']} is not a JSON Web Key Set")
        except IssuerUnavailable as exc:
            self._unavailable = exc
            raise
        self._unavailable = None
        keys: dict[str | None, tuple[jwt.PyJWK, frozenset[str]]] = {}
        for jwk in data["keys"]:
            if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(jwk)
            except jwt.PyJWTError as exc:  # a key type this server cannot use: skipped
                _logger.info("skipping issuer key %r: %s", jwk.get("kid"), exc)
                continue
            algorithms = _key_algorithms(key, jwk)
            if algorithms:
                kid = jwk.get("kid")
                keys[kid if isinstance(kid, str) else None] = (key, algorithms)
        self._keys = keys

    async def _key(self, kid: str | None) -> tuple[jwt.PyJWK, frozenset[str]] | None:
        """The key named ``kid``, fetching the set when it is unknown (bounded) or old.

        A key held is used at once while the set is fresh, or while a fetch runs: a
        token with a made-up ``kid`` (its fetch) holds up no valid one."""
        held = self._held(kid)
        if held is not None and (self._lock.locked() or self._age() < JWKS_MAX_AGE):
            return held
        async with self._lock:
            now = anyio.current_time()
            age = self._age()
            if age >= JWKS_MAX_AGE:
                await self._refresh(now)
            elif kid not in self._keys and age >= self.refetch_interval:
                await self._refresh(now)  # keys rotate: the new one is in the new set
            found = self._held(kid)
            if found is None and self._unavailable is not None:
                raise IssuerUnavailable(str(self._unavailable))
            return found

    def _age(self) -> float:
        """Seconds since the key set was last fetched (infinite: never)."""
        if self._fetched_at is None:
            return math.inf
        return anyio.current_time() - self._fetched_at

    def _held(self, kid: str | None) -> tuple[jwt.PyJWK, frozenset[str]] | None:
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            # No kid in the token and one key published: that key is the candidate.
            found = next(iter(self._keys.values()))
        return found

    async def check(self, token: str) -> AccessToken:
        """The verified token as the SDK's `AccessToken` (scopes, client, subject, claims).

        Raises:
            TokenRefused: why the token is not valid here.
            IssuerUnavailable: the issuer's keys cannot be read now.
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"not a JWT access token: {exc}") from exc
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            raise TokenRefused(
                f"signature algorithm {alg!r} is not accepted "
                f"(one of {', '.join(sorted(ALLOWED_ALGORITHMS))})"
            )
        kid = header.get("kid")
        found = await self._key(kid if isinstance(kid, str) else None)
        if found is None:
            raise TokenRefused(f"no key {kid!r} in the issuer's key set")
        key, algorithms = found
        if alg not in algorithms:
            raise TokenRefused(f"key {kid!r} does not sign with {alg!r}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=CLOCK_LEEWAY,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise TokenRefused(str(exc)) from exc
        return access_token(token, claims, self.audience)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier` protocol: the token, or None when it is refused.

        Raises:
            IssuerUnavailable: the issuer's keys cannot be read now.
        """
        try:
            return await self.check(token)
        except TokenRefused:
            return None


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    """RFC 9068's ``scope`` (space-separated), or the ``scp`` list some providers use."""
    scope = claims.get("scope", claims.get("scp"))
    if isinstance(scope, str):
        return scope.split()
    if isinstance(scope, list):
        return [s for s in scope if isinstance(s, str)]
    return []


def access_token(token: str, claims: dict[str, Any], audience: str) -> AccessToken:
    """The SDK's `AccessToken` of verified ``claims`` (scopes, client, subject).

    Raises:
        TokenRefused: no subject.
    """
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise TokenRefused("the token's 'sub' is not a non-empty string")
    client = claims.get("client_id", claims.get("azp"))
    exp = claims.get("exp")
    return AccessToken(
        token=token,
        client_id=client if isinstance(client, str) else subject,
        scopes=_scopes(claims),
        expires_at=int(exp) if isinstance(exp, int | float) else None,
        resource=audience,
        subject=subject,
        claims=claims,
    )
