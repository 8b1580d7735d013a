"""A remote server that waits for someone to authorize nativemcp, and its way back.

While a server needs authorization its supervisor sleeps on an `AuthorizationWait`:
nothing polls the grant files, nothing reconnects. Whoever uses the server next (a
call, the pool's listing, `WorkerPool.authorize`) asks `retry_authorization`: when a
grant is kept now (``nativemcp auth login`` in another process wrote it) or a person
can be asked, the supervisor connects again with a fresh provider, which reads the
kept grant anew, and the caller waits for that one attempt to settle: connected, or
waiting again (a grant that does not work is dropped by the provider, so a second use
does not try it again).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread

from nativemcp.protocol import Tool

from ._oauth import NeedsAuthorization, RedirectHook, ServerAuthorization, unavailable_tool

__all__ = ["AuthorizationWait", "WaitsForAuthorization", "first_of", "retry_authorization"]

_logger = logging.getLogger("nativemcp.external")


class AuthorizationWait:
    """One spell of waiting for authorization: why, the call to try again, and the end
    of the attempt that call started."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.retry = anyio.Event()
        """Set by a user of the server: the supervisor connects again."""
        self.settled = anyio.Event()
        """Set when the attempt is over: connected, waiting again, failed or closed."""


async def retry_authorization(
    wait: AuthorizationWait | None,
    authorization: ServerAuthorization | None,
    redirect: RedirectHook | None = None,
) -> None:
    """Have the supervisor waiting on ``wait`` connect again if it can succeed now (a
    grant is kept, or ``redirect`` can ask a person), and wait until that attempt is
    over. Users that come while an attempt runs wait for the same one.

    ``redirect`` is for this attempt only (None: the pool's hook, if it has one; without
    one, only a kept grant makes an attempt).
    """
    if wait is None or authorization is None:
        return
    if not wait.retry.is_set():
        # Read in a thread: the grant may be a PostgreSQL row, a round trip away, and
        # this runs at every use of the server while it waits.
        if redirect is None and not await anyio.to_thread.run_sync(authorization.has_grant):
            return  # nothing new: the answer stays "needs authorization"
        authorization.start_over()
        with authorization.asking(redirect):
            wait.retry.set()
            await wait.settled.wait()
        return
    await wait.settled.wait()


async def first_of(*events: anyio.Event) -> None:
    """Return when the first of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def one(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(one, event)


class WaitsForAuthorization:
    """`ExternalServer`'s waiting for a grant (a mixin over the server's state): its
    supervisor waits here instead of reconnecting, and its users bring it back."""

    name: str
    authorization: ServerAuthorization | None
    needs_authorization: str | None
    _tools: list[Tool]
    _waiting: AuthorizationWait | None
    _stop: anyio.Event
    _closing: bool

    async def _wait_for_authorization(self, exc: NeedsAuthorization, on_ready: Any) -> bool:
        """List the server as needing authorization and wait: for a user of the server
        to find a grant kept (True: connect again), or for the pool to close (False)."""
        _logger.warning("%s", exc)
        self.needs_authorization = exc.reason
        self._tools = [unavailable_tool(self.name, exc.reason)]
        wait = AuthorizationWait(exc.reason)
        self._settle_waiters(wait)
        on_ready()
        await first_of(self._stop, wait.retry)
        return not self._closing

    def _settle_waiters(
        self, wait: AuthorizationWait | None = None, *, authorized: bool = False
    ) -> None:
        """End the attempt users of the server wait on; ``wait`` is the next spell of
        waiting (None: none, or the last one stands unless ``authorized``)."""
        ended = self._waiting
        if wait is not None or authorized:
            self._waiting = wait
        if ended is not None:
            ended.settled.set()

    async def reauthorize(self, redirect: RedirectHook | None = None) -> bool:
        """If the server waits for authorization, connect again when a grant is kept
        now (another process's ``nativemcp auth login``) or ``redirect`` can ask a
        person, and wait for that attempt; whether the server is authorized now."""
        await retry_authorization(self._waiting, self.authorization, redirect)
        return self.needs_authorization is None
