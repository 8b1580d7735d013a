"""What following a task to its end means in both eras' clients (`call_as_task` for
2025-11-25, `TasksClaim` for the 2026-07-28 extension): its new status messages as the
call's progress, a pause at the interval the server asks for, and a cancel that is sent
even when the caller was cancelled, bounded in time."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio

from nativemcp.protocol import resolved

if TYPE_CHECKING:
    from .._handle import ProgressCallback

__all__ = ["DEFAULT_POLL_MS", "TASK_CANCEL_TIMEOUT", "StatusMessages", "cancel_task", "poll_pause"]

TASK_CANCEL_TIMEOUT: Final = 5.0
"""Seconds a ``tasks/cancel`` for an abandoned task may take (it is sent shielded)."""
DEFAULT_POLL_MS: Final = 1000
"""How often a task is polled when the server suggests no poll interval."""


class StatusMessages:
    """A task's status messages, each new one reported as the call's next progress step."""

    def __init__(self, report: ProgressCallback | None) -> None:
        self._report = report
        self._seen: str | None = None
        self._steps = 0

    async def saw(self, message: str | None) -> None:
        """Report ``message`` if it is new (a task repeats its message on every poll)."""
        if not message or message == self._seen:
            return
        self._seen = message
        self._steps += 1
        if self._report is not None:
            await resolved(self._report(float(self._steps), None, message))


async def poll_pause(interval_ms: int | None) -> None:
    """Wait the interval the server asked for between two polls (1 s if it named none)."""
    await anyio.sleep((interval_ms or DEFAULT_POLL_MS) / 1000)


async def cancel_task(send: Callable[[], Awaitable[object]]) -> None:
    """Send a ``tasks/cancel`` (``send``), shielded and bounded; its failure is not the
    caller's (the task may have ended meanwhile)."""
    with (
        anyio.CancelScope(shield=True),
        anyio.move_on_after(TASK_CANCEL_TIMEOUT),
        contextlib.suppress(Exception),
    ):
        await send()
