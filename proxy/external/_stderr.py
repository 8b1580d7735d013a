"""A stdio server's stderr: a pipe read on the event loop, each line to `logging` (with
the entry's secrets redacted), and a tail kept for error messages."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Final

import anyio

__all__ = ["STDERR_TAIL_LINES", "Stderr"]

STDERR_TAIL_LINES: Final = 20
"""Lines of a stdio server's stderr kept for error messages."""
_STDERR_CHUNK: Final = 65536


class Stderr:
    """A stdio server's stderr: a pipe read on the loop, lines to `logging`, a tail kept."""

    def __init__(self, server: str, redact: Callable[[str], str]) -> None:
        self.server = server
        self._redact = redact
        self.read_fd, write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.writer = os.fdopen(write_fd, "w")
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._logger = logging.getLogger(f"nativemcp.external.{server}")
        self._partial = b""

    def close_writer(self) -> None:
        """Close our copy of the write end once the child holds its own."""
        with contextlib.suppress(OSError):
            self.writer.close()

    async def pump(self) -> None:
        """Read until every writer is gone (the child and anything it spawned exited)."""
        try:
            while True:
                try:
                    chunk = os.read(self.read_fd, _STDERR_CHUNK)
                except BlockingIOError:
                    await anyio.wait_readable(self.read_fd)
                    continue
                if not chunk:
                    break
                *lines, self._partial = (self._partial + chunk).split(b"\n")
                for line in lines:
                    self._line(line)
            if self._partial:
                self._line(self._partial)
        finally:
            self.close_writer()
            with contextlib.suppress(OSError):
                os.close(self.read_fd)

    def _line(self, raw: bytes) -> None:
        # A server may echo its command line or environment: no secret of ours is kept.
        text = self._redact(raw.decode("utf-8", "replace").rstrip())
        if text:
            self.tail.append(text)
            self._logger.info("%s", text, extra={"mcp_server": self.server})

    def text(self) -> str:
        """The stderr tail, or a note that there was none."""
        return "\n".join(self.tail) if self.tail else "(no stderr output)"
