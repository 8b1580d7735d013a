"""What both handles of a worker process share (the async `WorkerProcess`, the blocking
`SyncWorker`): how it starts and the name and tools it last gave (`WorkerBase`), the
frame limit on a call, its log records re-emitted in the app's ``logging``
(`emit_log`), and the grace times of its stop escalation.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from nativemcp.protocol import Tool
from nativemcp.protocol.wire import Log, Ready, frame_fits, payload_size
from nativemcp.workers import FrameTooLarge
from nativemcp.workers.telemetry import mark_log_record

from ._worker_start import WorkerSettings

__all__ = [
    "EXIT_STATUS_WAIT",
    "KILL_GRACE",
    "SHUTDOWN_GRACE",
    "TERMINATE_GRACE",
    "WorkerBase",
    "emit_log",
]

SHUTDOWN_GRACE: Final = 3.0
"""Seconds a worker has to exit after the shutdown message."""
TERMINATE_GRACE: Final = 2.0
"""Seconds a worker has to exit after SIGTERM before SIGKILL."""
KILL_GRACE: Final = 2.0
"""Seconds to wait for the kernel to reap a killed worker."""
EXIT_STATUS_WAIT: Final = 1.0
"""Seconds to wait for the exit status of a worker whose channel closed."""


def emit_log(server: str, message: Log) -> None:
    """Re-emit a worker's log record through the app's ``logging`` (under the record's
    logger, or ``nativemcp.worker.<server>`` for the worker's root logger)."""
    logger = logging.getLogger(
        message.name if message.name != "root" else f"nativemcp.worker.{server}"
    )
    if logger.isEnabledFor(message.level):
        record = logger.makeRecord(
            logger.name, message.level, f"<worker {server}>", 0, "%s", (message.message,), None
        )
        record.worker = server
        if message.trace_id:  # logged during a traced call
            mark_log_record(record, message.trace_id, message.span_id)
        logger.handle(record)


class WorkerBase:
    """What both handles of a worker process hold (the async `WorkerProcess`, the
    blocking `SyncWorker`): how it starts, and the name and tools it last gave."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.backend = settings.backend
        self._settings = settings
        self._restart = settings.restart
        self._max_frame = settings.max_frame
        self.label = settings.label
        """The name the pool gave it (until READY gives the server's own)."""
        self.name = settings.label
        self.description = ""
        self._tools: list[Tool] = []

    @property
    def tools(self) -> list[Tool]:
        """The tools listed at the last handshake (or the last `take_tools`)."""
        return self._tools

    def take_ready(self, ready: Ready) -> None:
        """Take the server's name, description and tools from its READY."""
        self.name = ready.name
        self.description = ready.description
        self._tools = ready.tools

    def take_tools(self, value: Any) -> list[Tool]:
        """Take a ``tools/list`` answer as the current tools (and return them)."""
        self._tools = msgspec.convert(value, list[Tool])
        return self._tools

    def check_call_frame(self, frame: bytes, tool: str) -> None:
        """Refuse a call to ``tool`` whose frame is over the limit, before it is sent.

        Raises:
            FrameTooLarge: naming the server, the size and the limit.
        """
        if not frame_fits(payload_size(frame), self._max_frame):
            raise FrameTooLarge(
                server=self.name,
                size=payload_size(frame),
                limit=self._max_frame,
                what=f"the call to {tool!r}",
            )
