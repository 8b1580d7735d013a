"""What a running tool sees of its call: ids, session scope, progress and logging."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

__all__ = ["Context", "LogLevel", "LogNotification", "Notification", "ProgressNotification"]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The MCP logging levels (RFC 5424 names)."""

_PY_LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ProgressNotification(msgspec.Struct, tag="progress", kw_only=True, omit_defaults=True):
    """Progress of a running call (MCP ``notifications/progress``)."""

    progress: float
    total: float | None = None
    message: str | None = None


class LogNotification(msgspec.Struct, tag="log", kw_only=True, omit_defaults=True):
    """A log message from a running call (MCP ``notifications/message``)."""

    level: LogLevel
    data: Any
    logger: str | None = None


Notification = ProgressNotification | LogNotification
"""What a tool can send to its caller while it runs."""

Notify = Callable[[Notification], Awaitable[None]]


async def _drop(_: Notification) -> None:
    return None


class Context:
    """Handed to a tool that declares a parameter annotated ``Context``.

    Progress and log messages reach the caller in order, before the result.
    """

    def __init__(
        self,
        *,
        server_name: str,
        tool_name: str,
        request_id: int | str | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
        data_dir: Path | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.server_name = server_name
        self.tool_name = tool_name
        self.request_id = request_id
        self.session_id = session_id
        self.thread_id = thread_id
        self.data_dir = data_dir
        self._notify = notify or _drop
        self._logger = logging.getLogger(f"nativemcp.server.{server_name}")
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled (its caller timed out or gave up).

        A sync tool runs in a worker thread that cannot be interrupted: a long one
        checks this between steps and returns early (its result is discarded).
        """
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (done by the server when the call is cancelled)."""
        self._cancelled = True

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call has come (``progress`` of ``total``)."""
        await self._notify(ProgressNotification(progress=progress, total=total, message=message))

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a log message to the caller (and to this process's ``logging``)."""
        self._logger.log(_PY_LEVELS.get(level, logging.INFO), "%s: %s", self.tool_name, data)
        await self._notify(LogNotification(level=level, data=data, logger=logger))

    async def debug(self, data: Any) -> None:
        """`log` at debug level."""
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        """`log` at info level."""
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        """`log` at warning level."""
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        """`log` at error level."""
        await self.log("error", data)
