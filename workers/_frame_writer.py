"""Frames out of the worker: one socket, written from any thread, never blocking the writer.

The event loop (answers, notifications), the threads that run sync tools (their
replies) and logging (records from anywhere) all write to the parent through one
`FrameWriter`. A frame goes straight to the socket when nothing waits before it; what
the socket cannot take yet (the parent is not reading) waits in order and is sent by
a drain thread when it can. No writer ever blocks on the parent, so a worker whose
parent stops reading cannot deadlock with it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import deque
from typing import Final

__all__ = ["FrameWriter"]

_MSG_DONTWAIT: Final = getattr(socket, "MSG_DONTWAIT", 0)
"""Send without blocking on a blocking socket (the reader threads read it blocking)."""


class FrameWriter:
    """Writes whole frames to a connected, blocking socket, in order, from any thread.

    ``cork``/``uncork`` gather the frames of one burst (the replies to a batch of calls
    read together) into one send.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._backlog: deque[bytes | memoryview] = deque()
        self._draining = False  # the drain thread is sending a chunk it took
        self._drainer: threading.Thread | None = None
        self._corked: list[bytes] | None = None
        self._closed = False

    @property
    def is_open(self) -> bool:
        """False once the parent is gone or the writer was closed."""
        return not self._closed

    def write(self, frame: bytes) -> bool:
        """Send ``frame`` (after any frame written before it); False once closed."""
        with self._lock:
            if self._closed:
                return False
            if self._corked is not None:
                self._corked.append(frame)
            else:
                self._send(frame)
            return True

    def cork(self) -> None:
        """Hold frames until `uncork`; they then go out in one send."""
        with self._lock:
            if self._corked is None:
                self._corked = []

    def uncork(self) -> None:
        """Send what `cork` held."""
        with self._lock:
            frames, self._corked = self._corked, None
            if frames and not self._closed:
                self._send(frames[0] if len(frames) == 1 else b"".join(frames))

    def _send(self, data: bytes) -> None:
        # Under the lock: frames go out in the order they were written.
        if self._backlog or self._draining:
            self._backlog.append(data)
            self._changed.notify_all()
            return
        try:
            sent = self._sock.send(data, _MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:  # the parent is gone: nothing more can be sent
            self._closed = True
            self._changed.notify_all()
            return
        if sent < len(data):
            self._backlog.append(memoryview(data)[sent:])
            if self._drainer is None:
                self._drainer = threading.Thread(
                    target=self._drain, name="nativemcp-writer", daemon=True
                )
                self._drainer.start()
            self._changed.notify_all()

    def _drain(self) -> None:
        """Drain thread body: send the backlog as the parent reads, blocking only itself."""
        while True:
            with self._lock:
                while not self._backlog and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                chunk = b"".join(self._backlog)
                self._backlog.clear()
                self._draining = True
            try:
                self._sock.sendall(chunk)
            except OSError:
                with self._lock:
                    self._closed = True
                    self._draining = False
                    self._backlog.clear()
                    self._changed.notify_all()
                return
            with self._lock:
                self._draining = False
                self._changed.notify_all()

    def close(self, timeout: float) -> None:
        """Send what is waiting (for at most ``timeout`` s), then shut the socket down,
        which also ends the reading side. Idempotent."""
        with self._lock:
            if self._corked:
                self._send(b"".join(self._corked))
            self._corked = None
            self._changed.wait_for(
                lambda: self._closed or not (self._backlog or self._draining), timeout
            )
            self._closed = True
            self._backlog.clear()
            self._changed.notify_all()
        with contextlib.suppress(OSError):  # already disconnected
            self._sock.shutdown(socket.SHUT_RDWR)
