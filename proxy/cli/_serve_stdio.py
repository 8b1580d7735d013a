"""``nativemcp serve`` over stdio: serve until the client closes stdin, or end at once on
the client's SIGTERM.

A host ends a stdio server by closing its stdin, then SIGTERM, then SIGKILL, a short
while apart (the SDK's stdio client: 2 s each). Serve's own stdio servers get the same
steps from serve, and one that does not exit on its closed stdin (npm's
server-everything) would hold serve in its grace until the host's SIGKILL, and then
outlive serve in a session of its own. So on SIGTERM serve stops waiting: each stdio
server is ended at once (`hurry_stops`) and the pool closes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from ..external import hurry_stops

__all__ = ["run_stdio"]


def run_stdio(
    pool: Callable[[], AbstractAsyncContextManager[Any]],
    serve: Callable[[Any], Awaitable[None]],
) -> None:
    """Run ``serve`` on the pool ``pool`` makes, on a new event loop, until it returns
    (stdin closed) or SIGTERM comes (then every stdio server is ended at once)."""

    async def main() -> None:
        failed: list[Exception] = []
        async with anyio.create_task_group() as group:
            # Signals reach the main thread only (a test may run serve in another).
            if threading.current_thread() is threading.main_thread():
                group.start_soon(_end_on_sigterm, group.cancel_scope)
            try:
                async with pool() as opened:
                    await serve(opened)
            except Exception as exc:  # raised below as it is (a usage error), not grouped
                failed.append(exc)
            group.cancel_scope.cancel()
        if failed:
            raise failed[0]

    anyio.run(main)


async def _end_on_sigterm(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            hurry_stops()  # before the pool's (shielded) close reaches its servers
            scope.cancel()
            return
