"""A user's consent to an upstream server, finished in a browser at serve's callback.

When serve acts for its users (``"grantScope": "user"``) and a user has no grant for an
upstream, the SDK's provider makes the authorization request (PKCE, a fresh ``state``)
with serve's own callback as the redirect URI. `Consents` keeps each such request,
pending, under its ``state``: bound to the user and the call that asked, used once, and
expiring after `CONSENT_TTL`. Serve's callback route hands it the browser's return
(`Consents.finish`), and the provider, waiting in `Consent.returned`, goes on to trade
the code for the user's tokens. Nothing of the grant reaches the browser or the client.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio

__all__ = ["CALLBACK_ROUTE", "CONSENT_TTL", "Consent", "Consents", "UserKey"]

CONSENT_TTL: Final = 600.0
"""Seconds a user has to finish a consent in the browser."""
CALLBACK_ROUTE: Final = "/oauth/callback"
"""The path of serve's callback, under its origin."""

UserKey = tuple[str, str]
"""A user as serve verified them: ``(issuer, subject)``."""


@dataclass(eq=False)
class Consent:
    """One pending authorization request of ``user`` to ``server``."""

    user: UserKey
    server: str
    url: str
    """The upstream's authorization page the user is sent to."""
    state: str
    expires: float
    """When it stops being accepted (`time.monotonic`)."""
    id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    """The elicitation's id (not the state: that stays between the browser and serve)."""
    returned: anyio.Event = field(default_factory=anyio.Event)
    """Set when the browser came back (`target`) or the consent ended unused."""
    target: str | None = None
    """The URL the browser came back to, with ``code`` and ``state`` (None: not yet)."""

    async def wait(self) -> str | None:
        """The URL the browser came back to (None: it did not, in time)."""
        with anyio.move_on_after(max(self.expires - time.monotonic(), 0.0)):
            await self.returned.wait()
        return self.target


class Consents:
    """The pending consents of one serve, by ``state``; ``callback_url`` is serve's
    callback (None until serve knows its public origin)."""

    def __init__(self, ttl: float = CONSENT_TTL) -> None:
        self._ttl = ttl
        self._pending: dict[str, Consent] = {}
        self.callback_url: str | None = None

    def redirect_uri(self) -> str:
        """Serve's callback, the redirect URI of every per-user authorization.

        Raises:
            RuntimeError: serve has not said where it answers (no request came yet and
                no ``--auth-resource`` was given).
        """
        if self.callback_url is None:
            raise RuntimeError(
                "serve's public address is not known yet: pass --auth-resource URL, so a "
                "user's consent can come back to serve"
            )
        return self.callback_url

    def open(self, user: UserKey, server: str, authorization_url: str) -> Consent:
        """Keep the authorization request of ``authorization_url`` (its ``state``)
        pending for ``user``; expired ones are dropped here.

        Raises:
            ValueError: the URL has no ``state`` (the SDK always sends one).
        """
        now = time.monotonic()
        for state, kept in list(self._pending.items()):
            if kept.expires <= now:
                self._end(state)
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        if not states or not states[0]:
            raise ValueError("an authorization request without a state cannot be bound")
        consent = Consent(user, server, authorization_url, states[0], now + self._ttl)
        self._pending[consent.state] = consent
        return consent

    def finish(self, returned_to: str) -> Consent | None:
        """The browser came back to ``returned_to`` (serve's callback with ``state``):
        the consent it finishes, taken (a second use finds nothing), or None: no such
        state, or it expired."""
        states = parse_qs(urlsplit(returned_to).query).get("state")
        consent = self._pending.pop(states[0], None) if states else None
        if consent is None:
            return None
        if consent.expires <= time.monotonic():
            consent.returned.set()
            return None
        consent.target = returned_to
        consent.returned.set()
        return consent

    def pending(self, user: UserKey) -> list[Consent]:
        """The consents ``user`` has not finished, oldest first."""
        now = time.monotonic()
        return [c for c in self._pending.values() if c.user == user and c.expires > now]

    def _end(self, state: str) -> None:
        consent = self._pending.pop(state, None)
        if consent is not None:
            consent.returned.set()
