"""One MCP server's grant, for one user: the SDK's ``TokenStorage`` over grant rows.

The grant rows (`_grant_rows`: one per user, issuer, client and server) are kept in the
data folder's SQLite file, in PostgreSQL (`_token_table`) when the pool has a
``database_url``, or in memory. `GrantStore` is one server's view of them for one user
(None: the pool's own grant, ``nativemcp auth login``'s): the SDK's provider asks for a
server's tokens before it knows the issuer, so a store finds its row by the server's URL
(and the configured client id, if any), the most recently written first.

Every read and write runs in a worker thread (``anyio.to_thread``): a row may be a
PostgreSQL round trip away, and the event loop serves every other call meanwhile.
Every write is a compare-and-set on the row's version, retried on a fresh read when
another replica wrote first (`StaleGrant`), so no write loses another's.

A refresh is single-flight per grant, across replicas (`refresh_once`): the refresher
first claims the row (a compare-and-set that marks it as being refreshed, for at most
`REFRESH_CLAIM_SECONDS`); a replica that finds it claimed waits for the claim to end,
and a replica that finds tokens newer than its own (another refreshed meanwhile) takes
those instead of spending its refresh token, which an issuer that rotates them has
already invalidated. The new tokens are written, and the claim ended, before the SDK
sees them. An access token's expiry is kept as a time (``expires_at``), so a pool
started later refreshes a token that expired meanwhile rather than sending it.
Nothing here logs a token.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread

from ._grant_rows import DPOP_KEY, Grant, GrantDatabase, GrantKey, GrantPlace, StaleGrant

if TYPE_CHECKING:
    # The SDK loads only when a pool uses OAuth (nativemcp.proxy imports without it).
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["REFRESH_CLAIM_SECONDS", "GrantStore", "describe", "place_of"]

T = TypeVar("T")

WRITE_TRIES: Final = 20
"""Compare-and-set attempts before a write gives up (each after a fresh read)."""
REFRESH_CLAIM_SECONDS: Final = 45.0
"""How long a refresh holds its grant: longer than a token request may take (30 s,
`_refresh_on_401.ANSWER_SECONDS`), so a replica that died mid-refresh blocks no other
for longer."""
CLAIM_POLL_SECONDS: Final = (0.02, 0.5)
"""How often a replica looks whether a claimed refresh is over: first, and at most."""
FRESH_MARGIN: Final = 5.0
"""An access token expiring within this many seconds is not taken from another replica."""


def place_of(folder: Path | GrantPlace | None) -> GrantPlace:
    """The `GrantPlace` of a grant files' folder (its SQLite file), a place, or memory."""
    if folder is None or isinstance(folder, Path):
        return GrantDatabase(folder)
    return folder


def describe(grant: Grant) -> dict[str, Any]:
    """What `nativemcp auth status` shows of a grant: never a token."""
    tokens = grant.tokens
    return {
        "user": grant.key.user,
        "issuer": grant.key.issuer,
        "client_id": grant.key.client_id,
        "resource": grant.key.resource,
        "scope": tokens.get("scope"),
        "expires_at": tokens.get("expires_at"),
        "refreshable": bool(tokens.get("refresh_token")),
        "authorized": bool(tokens.get("access_token")),
    }


def _record(tokens: OAuthToken) -> dict[str, Any]:
    """The kept form of the SDK's tokens: ``expires_in`` as a time."""
    record = tokens.model_dump(mode="json", exclude_none=True)
    expires_in = record.pop("expires_in", None)
    if expires_in is not None:
        record["expires_at"] = time.time() + float(expires_in)
    return record


def _with_field(extra: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    """``extra`` with ``name`` set to ``value`` (None: without ``name``)."""
    changed = {k: v for k, v in extra.items() if k != name}
    if value is not None:
        changed[name] = value
    return changed


def _jwk(value: Any) -> dict[str, Any] | None:
    """A kept DPoP key, as `GrantStore.dpop_key` holds it (None: none kept)."""
    return value if isinstance(value, dict) else None


def _fresh(tokens: dict[str, Any]) -> bool:
    """Whether kept tokens hold an access token that does not expire within the margin."""
    expires_at = tokens.get("expires_at")
    if not tokens.get("access_token"):
        return False
    return not isinstance(expires_at, int | float) or expires_at > time.time() + FRESH_MARGIN


class GrantStore:
    """The SDK's ``TokenStorage`` for one MCP server and one user, over grant rows.

    Args:
        folder: the grants' folder (its SQLite file), or a `GrantPlace` (a PostgreSQL
            table); None keeps the grant in memory.
        resource: the MCP server's URL.
        user: whom the grant acts for (None: the pool's own grant).
        client_id: the configured client id, if any: only a grant of that client is used.
        issuer: what the provider has discovered as the issuer (None: not yet); a grant
            whose issuer is not known yet is filed under the server's origin.
        fixed_client: the client of the configuration, if any.
    """

    def __init__(
        self,
        folder: Path | GrantPlace | None,
        resource: str,
        *,
        user: str | None = None,
        client_id: str | None = None,
        issuer: Callable[[], str | None] = lambda: None,
        fixed_client: OAuthClientInformationFull | None = None,
    ) -> None:
        self.place = place_of(folder)
        self.resource = resource
        self.user = user
        self._client_id = client_id
        self._issuer = issuer
        self.fixed_client = fixed_client
        """The configured client, if any: it is the client, whatever a row says, and
        its secret stays in the configuration (never written here)."""
        self.id = secrets.token_hex(8)
        """Who this store is when it claims a refresh (one per provider and process)."""
        self._handed_out: str | None = None  # the access token this store last used
        self.dpop_key: dict[str, Any] | None = None
        """The private JWK the tokens last read or written here are bound to (DPoP,
        RFC 9449; None: bearer tokens). It is kept in the grant's `extra` as
        `DPOP_KEY`, written in the same compare-and-set as the tokens bound to it, and
        dropped with them."""

    # -- blocking reads and writes (run in a thread) -------------------------------------

    def read(self) -> Grant | None:
        """The server's grant for this user, read now; blocks (call it in a thread)."""
        found = self.place.find(self.user, self.resource, self._client_id)
        return found[0] if found else None

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` (a read and a compare-and-set) again while another wrote first."""
        for _ in range(WRITE_TRIES - 1):
            try:
                return attempt()
            except StaleGrant:
                continue
        return attempt()

    def _new_key(self, client: dict[str, Any], issuer: str | None) -> GrantKey:
        if not issuer:
            issuer = self._issuer()
        if not issuer:
            parts = urlsplit(self.resource)
            issuer = f"{parts.scheme}://{parts.netloc}"
        return GrantKey(self.user, issuer, str(client.get("client_id") or ""), self.resource)

    def _set_tokens(self, record: dict[str, Any], key: dict[str, Any] | None) -> None:
        grant = self.read()
        if grant is None:
            fixed = self.fixed_client
            client = (
                fixed.model_dump(mode="json", exclude_none=True, exclude={"client_secret"})
                if fixed is not None
                else {}
            )
            issuer = fixed.issuer if fixed is not None else None
            grant = Grant(self._new_key(client, issuer), client=client)
        elif _same_tokens(grant.tokens, record) and _jwk(grant.extra.get(DPOP_KEY)) == key:
            return  # kept already (the tokens `refresh_once` wrote or took)
        if grant.refreshing_by == self.id:
            grant = dataclasses.replace(grant, refreshing_by=None, refreshing_until=0.0)
        # Another's claim stays: its refresh is under way, and until it ends no other
        # replica may send the refresh token it holds.
        self.place.write(_bound(grant, record, key))

    def _set_client(self, client: dict[str, Any], issuer: str | None) -> None:
        key = self._new_key(client, issuer)
        same = self.place.read(key)
        if same is not None:
            self.place.write(dataclasses.replace(same, client=client))
        else:
            self.place.write(Grant(key, client=client))
        for other in self.place.find(self.user, self.resource, self._client_id):
            if other.key != key:
                # Another client's (or an unknown issuer's) tokens are not this one's.
                self.place.delete(other.key)

    def _forget_tokens(self) -> bool:
        grant = self.read()
        if grant is None or not grant.tokens:
            return False
        kept = grant.tokens.get("access_token")
        if kept and self._handed_out is not None and kept != self._handed_out:
            return True  # newer than the ones refused here: the next use tries them
        self.place.write(_bound(grant, {}, None))  # the key goes with its tokens
        self.dpop_key = None
        return True

    def _forget(self) -> bool:
        grant = self.read()
        if grant is None:
            return False
        if not self.place.delete(grant.key, grant.version):
            raise StaleGrant(grant.key)
        return True

    async def _off_loop(self, attempt: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(self._retrying, attempt)

    # -- the SDK's TokenStorage ---------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The server's kept tokens, ``expires_in`` counted from now (None: none)."""
        grant = await anyio.to_thread.run_sync(self.read)
        stored = grant.tokens if grant is not None else {}
        self.dpop_key = _jwk(grant.extra.get(DPOP_KEY)) if grant is not None else None
        if not stored.get("access_token"):
            return None
        self._handed_out = stored["access_token"]
        return _as_token(stored)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens for the server (with their expiry as a time), and with them
        `dpop_key`, the key they are bound to (None: none, any kept one dropped)."""
        record, key = _record(tokens), self.dpop_key
        await self._off_loop(lambda: self._set_tokens(record, key))
        self._handed_out = tokens.access_token

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registration the server's grant was made with (None: none)."""
        if self.fixed_client is not None:
            return self.fixed_client
        return await self.stored_client()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a new registration: its issuer and client id name the grant."""
        client = client_info.model_dump(mode="json", exclude_none=True)
        await self._off_loop(lambda: self._set_client(client, client_info.issuer))

    # -- the rest, off the loop too -----------------------------------------------------

    async def stored_client(self) -> OAuthClientInformationFull | None:
        """The kept registration, read now (None: none kept)."""
        grant = await anyio.to_thread.run_sync(self.read)
        if grant is None or not grant.client:
            return None
        from mcp.shared.auth import OAuthClientInformationFull

        return OAuthClientInformationFull.model_validate(grant.client)

    async def status(self) -> dict[str, Any] | None:
        """The server's grant as `nativemcp auth status` shows it (None: none)."""
        grant = await anyio.to_thread.run_sync(self.read)
        return describe(grant) if grant is not None else None

    async def forget_tokens(self) -> bool:
        """Drop the server's tokens, keeping the registration (True: there were some).

        Tokens another process kept since this one last read or wrote them (a replica's
        refresh, an ``auth login``) are newer than the ones refused here: they stay,
        and the next use of the server tries them.
        """
        return await self._off_loop(self._forget_tokens)

    async def forget(self) -> bool:
        """Drop the server's grant for this user: tokens and registration (True: there
        was one)."""
        self.dpop_key = None
        return await self._off_loop(self._forget)

    async def extra(self) -> dict[str, Any]:
        """The grant's other fields (`Grant.extra`: DPoP key material, say), read now
        (empty: none, or no grant kept)."""
        grant = await anyio.to_thread.run_sync(self.read)
        return dict(grant.extra) if grant is not None else {}

    async def set_extra(self, name: str, value: Any) -> bool:
        """Keep ``value`` (JSON) as the grant's field ``name`` (None drops it), beside
        whatever another replica wrote meanwhile; False: no grant is kept to hold it."""

        def attempt() -> bool:
            grant = self.read()
            if grant is None:
                return False
            extra = _with_field(grant.extra, name, value)
            self.place.write(dataclasses.replace(grant, extra=extra))
            return True

        return await self._off_loop(attempt)

    # -- a refresh, once per grant across replicas --------------------------------------

    async def refresh_once(
        self,
        request: httpx2.Request,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]],
        *,
        refused: bool = False,
    ) -> httpx2.Response:
        """Send the refresh ``request`` with ``send``, unless another replica refreshed
        the grant meanwhile: then its tokens are the answer (or its newer refresh token
        is sent in place of this one). While another replica refreshes, this waits for
        it; the new tokens are kept before they are returned (see the module's text).

        Without ``refused`` (the server refused the access token: it must be replaced),
        kept tokens that are not about to expire are the answer too: the provider's
        idea of their expiry came from an older read."""
        import httpx2

        poll = CLAIM_POLL_SECONDS[0]
        while True:
            sent = _refresh_token_of(request)
            kind, grant = await self._off_loop(functools.partial(self._claim, sent, refused))
            if kind == "theirs":
                assert grant is not None
                self._handed_out = grant.tokens.get("access_token")
                self.dpop_key = _jwk(grant.extra.get(DPOP_KEY))  # what they are bound to
                if _fresh(grant.tokens):
                    answer = _token_answer(grant.tokens)
                    return httpx2.Response(200, json=answer, request=request)
                request = _with_refresh_token(request, str(grant.tokens["refresh_token"]))
                continue
            if kind == "wait":
                await anyio.sleep(poll)
                poll = min(poll * 2, CLAIM_POLL_SECONDS[1])
                continue
            break
        if kind == "none":
            return await send(request)  # nothing kept to claim (dropped meanwhile)
        try:
            response = await send(request)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._off_loop(self._release)
            raise
        record = _refreshed(response)
        with anyio.CancelScope(shield=True):  # a claim is never left behind
            if record is None:
                await self._off_loop(self._release)
            else:
                key = self.dpop_key  # as the answer left it (`_dpop` reads each one)
                await self._off_loop(lambda: self._keep_refreshed(record, key))
                self._handed_out = record.get("access_token")
        return response

    def _claim(self, sent: str | None, refused: bool) -> tuple[str, Grant | None]:
        """``("claimed", grant)``: this store refreshes now; ``("theirs", grant)``:
        newer tokens are kept; ``("wait", None)``: another is refreshing; ``("none",
        None)``: no grant is kept."""
        grant = self.read()
        if grant is None:
            return "none", None
        now = time.time()
        stored = grant.tokens
        newer_refresh = stored.get("refresh_token") and stored["refresh_token"] != sent
        newer_access = stored.get("access_token") not in (None, self._handed_out)
        if newer_refresh or ((newer_access or not refused) and _fresh(stored)):
            return "theirs", grant
        if grant.refreshing_by not in (None, self.id) and grant.refreshing_until > now:
            return "wait", None
        claim = dataclasses.replace(
            grant, refreshing_by=self.id, refreshing_until=now + REFRESH_CLAIM_SECONDS
        )
        return "claimed", self.place.write(claim)

    def _release(self) -> None:
        grant = self.read()
        if grant is not None and grant.refreshing_by == self.id:
            self.place.write(dataclasses.replace(grant, refreshing_by=None, refreshing_until=0))

    def _keep_refreshed(self, record: dict[str, Any], key: dict[str, Any] | None) -> None:
        grant = self.read()
        if grant is None:
            return  # logged out meanwhile: not brought back
        # RFC 6749 §6: an answer may leave out the scope and refresh token (unchanged).
        for carried in ("refresh_token", "scope"):
            if carried not in record and carried in grant.tokens:
                record[carried] = grant.tokens[carried]
        bound = _bound(grant, record, key)
        self.place.write(dataclasses.replace(bound, refreshing_by=None, refreshing_until=0))


def _bound(grant: Grant, tokens: dict[str, Any], key: dict[str, Any] | None) -> Grant:
    """``grant`` holding ``tokens``, bound to the DPoP ``key`` (None: bearer tokens)."""
    return dataclasses.replace(grant, tokens=tokens, extra=_with_field(grant.extra, DPOP_KEY, key))


def _same_tokens(kept: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether ``record`` holds the tokens kept (its expiry, counted anew, aside)."""
    fields = ("access_token", "refresh_token")
    return all(kept.get(name) == record.get(name) for name in fields)


def _as_token(stored: dict[str, Any]) -> OAuthToken:
    from mcp.shared.auth import OAuthToken

    return OAuthToken.model_validate(_token_answer(stored))


def _token_answer(stored: dict[str, Any]) -> dict[str, Any]:
    """Kept tokens as a token endpoint answers them: ``expires_in`` counted from now."""
    fields = {k: v for k, v in stored.items() if k != "expires_at"}
    expires_at = stored.get("expires_at")
    if isinstance(expires_at, int | float):
        fields["expires_in"] = int(expires_at - time.time())
    return fields


def _form(request: httpx2.Request) -> dict[str, list[str]]:
    return parse_qs(request.content.decode("latin-1"))


def _refresh_token_of(request: httpx2.Request) -> str | None:
    found = _form(request).get("refresh_token")
    return found[0] if found else None


def _with_refresh_token(request: httpx2.Request, refresh_token: str) -> httpx2.Request:
    """``request`` with ``refresh_token`` in place of the one it carried."""
    import httpx2

    form = {name: values[0] for name, values in _form(request).items()}
    form["refresh_token"] = refresh_token
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    return httpx2.Request(request.method, request.url, data=form, headers=headers)


def _refreshed(response: httpx2.Response) -> dict[str, Any] | None:
    """The kept form of a refresh's answer (None: it is no token answer)."""
    from mcp.shared.auth import OAuthToken
    from pydantic import ValidationError

    if response.status_code != 200:
        return None
    try:
        return _record(OAuthToken.model_validate_json(response.content))
    except ValidationError:
        return None
