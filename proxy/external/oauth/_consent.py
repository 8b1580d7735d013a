"""A user's consent to an upstream server, finished in a browser at serve's callback.

When serve acts for its users (``"grantScope": "user"``) and a user has no grant for an
upstream, the SDK's provider makes the authorization request (PKCE, a fresh ``state``)
with serve's own callback as the redirect URI. `Consents` keeps each such request,
pending, under its ``state``: bound to the user and the call that asked, used once, and
expiring after `CONSENT_TTL`. Serve's callback route hands it the browser's return
(`Consents.finish`), and the provider, waiting in `Consent.wait`, goes on to trade the
code for the user's tokens. Nothing of the grant reaches the browser or the client.

The browser may come back to any serve process sharing the grants (``--workers N``,
replicas behind a load balancer), not only to the one whose call waits. So a pending
consent is also a row beside the grants (`ConsentRows`: the data folder's SQLite file,
or ``--database-url``'s PostgreSQL): the hash of its state (a row cannot be turned back
into a callback) and its expiry. The process that gets the callback marks the row
returned, with what the browser brought but the state, in one compare-and-set, so of
two callbacks with one state only the first is taken. The process that asked takes it
back (a delete returning it: once), at once when the callback came to it, else at its
next look (every `POLL_SECONDS`), and trades the code: its PKCE verifier never leaves
its memory, so the code in the row, for the moment it is there, is no use to a reader.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import anyio.to_thread

from ._grant_rows import GrantDatabase, GrantPlace

__all__ = [
    "CALLBACK_ROUTE",
    "CONSENT_TTL",
    "POLL_SECONDS",
    "Consent",
    "ConsentRows",
    "Consents",
    "UserKey",
]

CONSENT_TTL: Final = 600.0
"""Seconds a user has to finish a consent in the browser."""
CALLBACK_ROUTE: Final = "/oauth/callback"
"""The path of serve's callback, under its origin."""
POLL_SECONDS: Final = 0.5
"""How often a waiting consent looks whether another process got its callback."""

UserKey = tuple[str, str]
"""A user as serve verified them: ``(issuer, subject)``."""


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


class ConsentRows:
    """The pending consents' rows in ``place`` (its `GrantPlace.CONSENTS` table). Every
    method blocks (call it in a thread)."""

    def __init__(self, place: GrantPlace) -> None:
        self.place = place
        self.table = place.CONSENTS

    def add(self, state: str, expires_at: float) -> None:
        """Keep a pending consent of ``state`` until ``expires_at`` (a time); drop
        the expired ones."""
        self.place.run(f"DELETE FROM {self.table} WHERE expires_at <= %s", [time.time()])
        sql = f"INSERT INTO {self.table} (state_hash, expires_at, returned) VALUES (%s, %s, NULL)"
        self.place.run(sql, [_hash(state), expires_at])

    def redeem(self, state: str, returned: str) -> bool:
        """Mark the consent of ``state`` returned with ``returned`` (the callback's
        query, less the state); False: no such state, used already, or expired."""
        sql = (
            f"UPDATE {self.table} SET returned = %s"
            " WHERE state_hash = %s AND returned IS NULL AND expires_at > %s"
        )
        return self.place.run(sql, [returned, _hash(state), time.time()])[1] == 1

    def take(self, state: str) -> str | None:
        """What the browser brought back for ``state``, taken (None: not back yet)."""
        sql = (
            f"DELETE FROM {self.table} WHERE state_hash = %s AND returned IS NOT NULL"
            " RETURNING returned"
        )
        rows, _ = self.place.run(sql, [_hash(state)])
        return str(rows[0][0]) if rows else None

    def came_back(self, state: str) -> bool:
        """Whether the browser came back for ``state`` (to any process) and the row waits
        to be taken."""
        sql = f"SELECT 1 FROM {self.table} WHERE state_hash = %s AND returned IS NOT NULL"
        rows, _ = self.place.run(sql, [_hash(state)])
        return bool(rows)

    def drop(self, state: str) -> None:
        """Forget the consent of ``state`` (it ended unused)."""
        self.place.run(f"DELETE FROM {self.table} WHERE state_hash = %s", [_hash(state)])


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
    rows: ConsentRows
    id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    """The elicitation's id (not the state: that stays between the browser and serve)."""
    returned: anyio.Event = field(default_factory=anyio.Event)
    """Set when the browser came back (`target`) or the consent ended unused."""
    target: str | None = None
    """The URL the browser came back to, with ``code`` and ``state`` (None: not yet)."""
    nudge: anyio.Event = field(default_factory=anyio.Event)
    """Set when this process got the callback: look now, not at the next poll."""
    redeemed: bool = False
    """This process got the callback (its waiter may not have taken the row yet)."""

    async def came_back(self) -> bool:
        """Whether the browser came back, here or at another process, though the waiter
        may not have taken it yet: a call made meanwhile waits for the connection
        instead of sending the user to a page that now refuses a second visit."""
        if self.returned.is_set() or self.redeemed:
            return True
        back = await anyio.to_thread.run_sync(self.rows.came_back, self.state)
        # Taken meanwhile: the waiter's take finished before this look, so it has
        # resumed (and set `returned`) before this coroutine does.
        return back or self.returned.is_set()

    async def wait(self) -> str | None:
        """The URL the browser came back to, at this process or another (None: it did
        not, in time)."""
        try:
            while not self.returned.is_set():
                left = self.expires - time.monotonic()
                if left <= 0:
                    break
                returned = await anyio.to_thread.run_sync(self.rows.take, self.state)
                if returned is not None:
                    query = urlencode([*parse_qsl(returned), ("state", self.state)])
                    self.target = f"{CALLBACK_ROUTE}?{query}"
                    break
                with anyio.move_on_after(min(POLL_SECONDS, left)):
                    await self.nudge.wait()
                self.nudge = anyio.Event()
        finally:
            if self.target is None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.rows.drop, self.state)
            self.returned.set()
        return self.target


class Consents:
    """The pending consents of one serve process, kept in ``place`` (beside its grants,
    None: in memory) so that any process sharing it finishes them; ``callback_url`` is
    serve's callback (None until serve knows its public origin)."""

    def __init__(self, place: GrantPlace | None = None, ttl: float = CONSENT_TTL) -> None:
        self._ttl = ttl
        self._rows = ConsentRows(place if place is not None else GrantDatabase(None))
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

    async def open(self, user: UserKey, server: str, authorization_url: str) -> Consent:
        """Keep the authorization request of ``authorization_url`` (its ``state``)
        pending for ``user``, here and in the shared rows.

        Raises:
            ValueError: the URL has no ``state`` (the SDK always sends one).
        """
        now = time.monotonic()
        for kept_state, kept in list(self._pending.items()):
            if kept.returned.is_set() or kept.expires <= now:
                del self._pending[kept_state]
        state = dict(parse_qsl(urlsplit(authorization_url).query)).get("state")
        if not state:
            raise ValueError("an authorization request without a state cannot be bound")
        await anyio.to_thread.run_sync(self._rows.add, state, time.time() + self._ttl)
        consent = Consent(user, server, authorization_url, state, now + self._ttl, self._rows)
        self._pending[state] = consent
        return consent

    async def finish(self, returned_to: str) -> bool:
        """The browser came back to ``returned_to`` (serve's callback with ``state``):
        True when it finishes a pending consent, of this process or another (taken: a
        second use finds nothing); False: no such state, used, or expired."""
        query = parse_qsl(urlsplit(returned_to).query)
        state = dict(query).get("state")
        if not state:
            return False
        returned = urlencode([(name, value) for name, value in query if name != "state"])
        if not await anyio.to_thread.run_sync(self._rows.redeem, state, returned):
            return False
        mine = self._pending.pop(state, None)
        if mine is not None:
            mine.redeemed = True
            mine.nudge.set()  # its waiter takes it now
        return True

    def pending(self, user: UserKey) -> list[Consent]:
        """The consents ``user`` has not finished here, oldest first."""
        now = time.monotonic()
        return [
            c
            for c in self._pending.values()
            if c.user == user and c.expires > now and not c.returned.is_set()
        ]
