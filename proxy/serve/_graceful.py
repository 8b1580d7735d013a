"""Uvicorn that lets the tool calls in flight finish before it shuts down."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

import uvicorn

from ._transports import Drain

__all__ = ["ANSWER_GRACE", "GracefulServer"]

ANSWER_GRACE: Final = 2.0
"""Seconds the calls stopped after the grace get to send their error answers."""


class GracefulServer(uvicorn.Server):
    """On the first SIGTERM/SIGINT: refuse new requests (503) and let those in flight
    finish, up to ``grace`` seconds; then stop the calls still running (``stop_calls``:
    each answers its client with a JSON-RPC error) and shut down as uvicorn does. A
    second signal exits at once.

    Uvicorn's own graceful shutdown is not enough here: the SSE responses that carry
    tool calls close as soon as uvicorn starts exiting (sse-starlette watches it).
    """

    def __init__(
        self,
        config: uvicorn.Config,
        drain: Drain,
        grace: float,
        stop_calls: Callable[[str], int] | None = None,
    ) -> None:
        super().__init__(config)
        self._drain = drain
        self._grace = grace
        self._stop_calls = stop_calls
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False

    async def serve(self, sockets: list[Any] | None = None) -> None:
        """Serve until told to exit (remembering the loop the signal handler needs)."""
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Drain first; a second signal (or no grace) exits now."""
        loop = self._loop
        if self._draining or loop is None or self._grace <= 0:
            super().handle_exit(sig, frame)
            return
        self._draining = True

        async def drain_then_exit() -> None:
            if not await self._drain.wait_idle(self._grace):
                logging.getLogger("nativemcp.serve").warning(
                    "%d call(s) still running after %g s; stopping anyway",
                    self._drain.in_flight,
                    self._grace,
                )
                if self._stop_calls is not None:
                    # Each cut call answers its client with a JSON-RPC error, not a
                    # dropped connection; the answers get a moment to go out.
                    self._stop_calls(
                        f"the server is shutting down: the call was still running after "
                        f"its {self._grace:g} s of grace; call it again"
                    )
                    await self._drain.wait_idle(ANSWER_GRACE)
            super(GracefulServer, self).handle_exit(sig, frame)

        # Signal handlers run between bytecodes: schedule, do not await, from here.
        loop.call_soon_threadsafe(lambda: loop.create_task(drain_then_exit()))
