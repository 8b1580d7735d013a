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

from ._oauth import NeedsAuthorization, RedirectHook, ServerAuthorization

__all__ = ["AuthorizationWait", "GrantWait", "first_of", "retry_authorization"]

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


class GrantWait:
    """A server's waiting for a grant (a part `ExternalServer` holds): why it waits,
    the spell of waiting its supervisor sleeps on, and the attempt its users wait for.

    ``name``: the server's; ``authorization``: its OAuth client (None: it signs in with
    no OAuth, and never waits here).
    """

    def __init__(self, name: str, authorization: ServerAuthorization | None) -> None:
        self._name = name
        self._authorization = authorization
        self.reason: str | None = None
        """Why the server is unavailable until someone authorizes it (None: it is not)."""
        self._waiting: AuthorizationWait | None = None

    async def wait(self, exc: NeedsAuthorization, *, on_ready: Any, stop: anyio.Event) -> None:
        """Note the server as needing authorization (``exc`` says why) and wait: for a
        user of the server to find a grant kept (then connect again), or for ``stop``."""
        _logger.warning("%s", exc)
        self.reason = exc.reason
        wait = AuthorizationWait(exc.reason)
        self._settle(wait)
        on_ready()
        await first_of(stop, wait.retry)

    def authorized(self) -> None:
        """The server connected: it waits no more, and its users stop waiting."""
        self.reason = None
        self._settle(authorized=True)

    def settle(self) -> None:
        """End the attempt users of the server wait on (it failed, or the server closed)."""
        self._settle()

    def _settle(self, wait: AuthorizationWait | None = None, *, authorized: bool = False) -> None:
        """End the attempt users of the server wait on; ``wait`` is the next spell of
        waiting (None: none, or the last one stands unless ``authorized``)."""
        ended = self._waiting
        if wait is not None or authorized:
            self._waiting = wait
        if ended is not None:
            ended.settled.set()

    async def retry(self, redirect: RedirectHook | None = None) -> bool:
        """If the server waits for authorization, connect again when a grant is kept
        now (another process's ``nativemcp auth login``) or ``redirect`` can ask a
        person, and wait for that attempt; whether the server is authorized now."""
        await retry_authorization(self._waiting, self._authorization, redirect)
        return self.reason is None
