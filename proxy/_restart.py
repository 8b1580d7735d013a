"""How a crashed server is restarted: the one policy of every supervisor (a worker
process, a blocking pool's worker, an external MCP server)."""

from __future__ import annotations

import time

import msgspec

from nativemcp.protocol import ServerStartError

__all__ = ["RestartPolicy"]


class RestartPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a crashed worker is restarted: at most ``max_restarts`` per ``window`` seconds,
    waiting ``backoff`` seconds, doubled each time up to ``max_backoff``.

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
        """Record a restart now in ``recent`` (restart times, pruned here to the window)
        and say whether it stays within ``max_restarts`` per ``window`` seconds.

        The one budget rule for every supervisor: worker, blocking worker, external server.
        """
        now = time.monotonic()
        recent[:] = [t for t in recent if now - t < self.window]
        recent.append(now)
        return len(recent) <= self.max_restarts

    def gave_up(self, what: str, server: str, cause: object = None) -> ServerStartError:
        """The error once the budget is spent: ``what`` (how the logs name the
        supervised thing) stopped restarting, and the crash or start failure last seen."""
        reason = f": {cause}" if cause is not None else ""
        return ServerStartError(
            f"{what} stopped restarting after {self.max_restarts} restarts in "
            f"{self.window:g} s{reason}",
            server=server,
        )
