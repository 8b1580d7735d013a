"""The fast path's watch over an answer that runs long: asyncio only (uvicorn's loop).

An answer that is quick (nearly all) must not pay for a task: starting and cancelling one
per request through anyio costs about as much as the rest of the fast path together
(85 us measured). So a timer of the event loop waits instead, and the watching task
starts only when the window passes without an answer. anyio has no timer callback,
hence asyncio here; the fast path serves only under asyncio (else the SDK path does).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

__all__ = ["Window"]


class Window:
    """Runs ``watch()`` as a task once ``seconds`` pass, unless closed first.

    Args:
        seconds: how long a quick answer may take.
        watch: makes the coroutine to run once they pass (it runs until closed).
    """

    def __init__(self, seconds: float, watch: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._watch = watch
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(seconds, self._open)

    def _open(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def aclose(self) -> None:
        """Stop the timer, or cancel the watching task and wait for it to end."""
        self._timer.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # Shielded: the watch ends promptly once cancelled, and is never left behind.
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task])
