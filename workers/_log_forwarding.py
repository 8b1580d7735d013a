"""A worker's logging and printed output, sent to the parent as `Log` frames.

Stdout and stderr are not the channel: `forward_output` routes every log record of the
worker process through `_ForwardHandler` and replaces ``sys.stdout``/``sys.stderr`` with
`_LogWriter`s, so each printed line becomes a log record in the parent's ``logging``.
"""

from __future__ import annotations

import io
import logging
import sys
import traceback

from nativemcp.protocol.wire import Log, encode_frame

from ._frame_writer import FrameWriter
from .telemetry import current_ids

__all__ = ["forward_output"]


class _ForwardHandler(logging.Handler):
    """Sends every log record to the parent as a `Log` frame."""

    def __init__(self, writer: FrameWriter) -> None:
        super().__init__()
        self._writer = writer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + "".join(traceback.format_exception(*record.exc_info))
            trace_id, span_id = current_ids()  # the call's, when it is traced
            frame = encode_frame(
                Log(
                    name=record.name,
                    level=record.levelno,
                    message=message,
                    trace_id=trace_id,
                    span_id=span_id,
                )
            )
        except Exception:  # a broken record must never take the worker down
            self.handleError(record)
            return
        self._writer.write(frame)


class _LogWriter(io.TextIOBase):
    """Stands in for stdout/stderr: each printed line becomes a log record."""

    def __init__(self, logger: logging.Logger, level: int) -> None:
        self._logger = logger
        self._level = level
        self._buffer = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buffer += text
        *lines, self._buffer = self._buffer.split("\n")
        for line in lines:
            self._logger.log(self._level, "%s", line)
        return len(text)

    def flush(self) -> None:
        if self._buffer:
            self._logger.log(self._level, "%s", self._buffer)
            self._buffer = ""


def forward_output(writer: FrameWriter, level: int) -> None:
    """Send this process's log records (at ``level`` and above) and printed lines to the
    parent through ``writer``."""
    root = logging.getLogger()
    root.handlers[:] = [_ForwardHandler(writer)]
    root.setLevel(level)
    sys.stdout = _LogWriter(logging.getLogger("nativemcp.worker.stdout"), logging.INFO)
    sys.stderr = _LogWriter(logging.getLogger("nativemcp.worker.stderr"), logging.WARNING)
