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

import anyio
import anyio.to_thread

from ._oauth import RedirectHook, ServerAuthorization

__all__ = ["AuthorizationWait", "retry_authorization"]


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
