"""How many Streamable HTTP sessions one client may hold open at once.

The SDK's session manager bounds the sessions of the whole server (``max_sessions``)
and ends idle ones (``session_idle_timeout``); neither stops one client from opening
sessions until the others find the server full. `ClientSessions` counts, per client
address, the sessions the manager opened for it, and answers a client at its limit
429 when it asks for another (an ``initialize``: only 2025-11-25 has sessions; a
2026-07-28 request stands alone and is never counted nor refused here), until one of
its sessions ends: deleted by the client
(``DELETE``), found expired (the manager answered 404), or idle for the manager's own
idle timeout (no request in flight for that long, the rule the manager ends it by).

The client is the authenticated caller under OAuth (its subject: users behind one
proxy or NAT each have their own limit), else ``scope["client"]``: the peer address, or
behind a proxy whose address uvicorn trusts (``--forwarded-allow-ips``), the address it
forwards.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Final

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._request_ids import read_request
from .auth import caller_from_scope

__all__ = ["ClientSessions"]

_SESSION_HEADER: Final = b"mcp-session-id"


@dataclass
class _Session:
    client: str
    in_flight: int = 0
    last_seen: float = 0.0


class ClientSessions:
    """Wraps a session manager's ASGI app: at most ``limit`` open sessions per client."""

    def __init__(self, limit: int, idle_timeout: float | None) -> None:
        if limit <= 0:
            raise ValueError(f"sessions per client must be a positive number, not {limit}")
        self._limit = limit
        self._idle = math.inf if idle_timeout is None else idle_timeout
        self._sessions: dict[str, _Session] = {}
        self._opening: dict[str, int] = {}

    def held(self, client: str) -> int:
        """The sessions ``client`` holds (or is opening) now."""
        now = time.monotonic()
        for session_id, session in list(self._sessions.items()):
            if session.in_flight == 0 and now - session.last_seen >= self._idle:
                del self._sessions[session_id]  # the manager has ended it too
        mine = sum(1 for session in self._sessions.values() if session.client == client)
        return mine + self._opening.get(client, 0)

    async def __call__(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request through ``app``, counting the sessions it opens or ends."""
        headers = dict(scope["headers"])
        session_id = headers.get(_SESSION_HEADER, b"").decode("latin-1")
        caller = caller_from_scope(scope)
        address = str((scope.get("client") or ("unknown",))[0])
        # Spaces cannot start an address: a subject never counts as one.
        client = f" user {caller.subject}" if caller is not None else address
        if session_id:
            await self._in_session(app, session_id, scope, receive, send)
            return
        if scope["method"] != "POST" or not _opens_session(scope):
            # No session, no new one (a 2026-07-28 request; else the manager says why).
            await app(scope, receive, send)
            return
        if self.held(client) >= self._limit:
            await _too_many(self._limit)(scope, receive, send)
            return
        opened: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                found = (v for k, v in message.get("headers", []) if k == _SESSION_HEADER)
                opened.extend(v.decode("latin-1") for v in found)
            await send(message)

        # Counted while it opens: concurrent openings must not pass the limit together.
        self._opening[client] = self._opening.get(client, 0) + 1
        try:
            await app(scope, receive, watch)
        finally:
            self._opening[client] -= 1
            if not self._opening[client]:
                del self._opening[client]
            for new in opened:
                self._sessions[new] = _Session(client, last_seen=time.monotonic())

    async def _in_session(
        self, app: ASGIApp, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            await app(scope, receive, send)
            return
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        session.in_flight += 1
        try:
            await app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.last_seen = time.monotonic()
            ended = status and (
                status[0] == 404 or (scope["method"] == "DELETE" and status[0] < 400)
            )
            if ended:
                self._sessions.pop(session_id, None)


def _opens_session(scope: Scope) -> bool:
    """Whether this POST asks for a session: an ``initialize`` (what `RequestIds` read of
    its body; a body it did not read, too large, the manager refuses)."""
    read = read_request(scope)
    message = read.message if read is not None else None
    return isinstance(message, dict) and message.get("method") == "initialize"


def _too_many(limit: int) -> JSONResponse:
    message = (
        f"this client holds {limit} open sessions, the most it may: end one "
        "(DELETE with its mcp-session-id) or let one expire"
    )
    error = {"code": -32600, "message": message}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, 429)
