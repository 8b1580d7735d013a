"""How a crashed server is restarted: the one policy of every supervisor (a worker
process, a blocking pool's worker, an external MCP server), and what the async
supervisors' callers wait on (`Supervised`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import msgspec

from nativemcp.protocol import ServerClosed, ServerStartError

from .telemetry import record_restart, waiting_span

__all__ = ["RestartPolicy", "Supervised"]

T = TypeVar("T")


class RestartPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a crashed worker is restarted, and how often.

    At most ``max_restarts`` per ``window`` seconds, waiting ``backoff`` seconds, doubled
    each time up to ``max_backoff``.

    A worker that served ``healthy_after`` seconds before it crashed earns the whole
    budget back (its earlier crashes are forgotten, the backoff starts over): a server
    that runs for days is not given up on for a few crashes spread over them.
    """

    max_restarts: int = 5
    window: float = 60.0
    backoff: float = 0.05
    max_backoff: float = 2.0
    healthy_after: float = 30.0

    def allow_restart(self, recent: list[float]) -> bool:
        """Record a restart now in ``recent``; whether it stays within the budget.

        ``recent`` holds the restart times, pruned here to the window; the budget is
        ``max_restarts`` per ``window`` seconds.

        The one budget rule for every supervisor: worker, blocking worker, external server.
        """
        now = time.monotonic()
        recent[:] = [t for t in recent if now - t < self.window]
        recent.append(now)
        return len(recent) <= self.max_restarts

    def gave_up(self, what: str, server: str, cause: object = None) -> ServerStartError:
        """The error once the budget is spent.

        It says that ``what`` (how the logs name the supervised thing) stopped restarting,
        and the crash or start failure last seen."""
        reason = f": {cause}" if cause is not None else ""
        return ServerStartError(
            f"{what} stopped restarting after {self.max_restarts} restarts in "
            f"{self.window:g} s{reason}",
            server=server,
        )


class Supervised:
    """What callers of a supervised async server wait on (a worker process, an external
    MCP server): whether it is closing, the failure that ended its restarts, and an event
    set whenever a connection comes up or either of those changes. ``what`` names the
    server in messages (``worker for server 'x'``, ``MCP server 'x'``)."""

    name: str
    _restart: RestartPolicy
    _logger: logging.Logger

    def _init_supervision(self) -> None:
        self._closing = False
        self._failure: ServerStartError | None = None
        self._connected = anyio.Event()
        self._finished = anyio.Event()
        self.restarts = 0

    def _what(self) -> str:
        raise NotImplementedError

    def _restarted(self) -> None:
        """Count a restart (and in the restarts metric, when the app records metrics)."""
        self.restarts += 1
        record_restart(self.name)

    async def _live(self, current: Callable[[], T | None], doing: str) -> T:
        """What ``current`` gives once it gives something: the live connection.

        Raises:
            ServerClosed: the server is closing (``doing``: what could not be done).
            ServerStartError: its restarts ran out.
        """
        value = self._now_live(current, doing)
        if value is not None:
            return value
        # A call that waits for a (re)start or (re)connect: its trace shows the wait.
        with waiting_span(self.name):
            while value is None:
                await self._connected.wait()
                value = self._now_live(current, doing)
        return value

    def _now_live(self, current: Callable[[], T | None], doing: str) -> T | None:
        if self._closing:
            raise ServerClosed(f"{self._what()} is closed; cannot {doing}", server=self.name)
        if self._failure is not None:
            raise self._failure
        return current()

    def _retry(self, failed: ServerStartError, recent: list[float], backoff: float) -> bool:
        """After a restart that failed to start: whether to try again (logged, with the
        ``backoff`` to wait), or not, the budget spent (then it has given up)."""
        if not self._restart.allow_restart(recent):
            self._give_up(failed)
            return False
        self._logger.error("%s; retrying in %.2f s", failed, backoff)
        return True

    def _give_up(self, cause: Exception) -> None:
        """Stop restarting: every waiting and later caller gets the failure."""
        self._failure = self._restart.gave_up(self._what(), self.name, cause)
        self._logger.error("%s", self._failure)
        self._connected.set()
