"""Runtime errors: the worker broke, as opposed to the tool returning an error.

```
NativeMCPError                        (nativemcp.protocol)
└── WorkerError                       a worker process failed us
    ├── WorkerStartError              it did not start (import error, handshake timeout)
    ├── WorkerCrashed                 it died with calls in flight
    ├── WorkerTimeout                 a call did not finish in time (also a TimeoutError)
    ├── WorkerClosed                  the pool is closed or closing
    └── FrameTooLarge                 a message exceeds the frame size limit
```
"""

from __future__ import annotations

import signal

from nativemcp.protocol import NativeMCPError

__all__ = [
    "FrameTooLarge",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerStartError",
    "WorkerTimeout",
    "describe_exit",
]


def describe_exit(exitcode: int | None) -> str:
    """``exited with code 1``, ``was killed by SIGKILL``, or ``is gone`` (code unknown)."""
    if exitcode is None:
        return "is gone (exit status unknown)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with code {exitcode}"


class WorkerError(NativeMCPError):
    """A worker process failed: it did not start, crashed, timed out or is closed."""

    def __init__(self, message: str, *, server: str) -> None:
        self.server = server
        super().__init__(message)


class WorkerStartError(WorkerError):
    """A worker did not start: its server failed to load or the handshake timed out."""


class WorkerCrashed(WorkerError):
    """A worker died while calls were in flight; every pending call gets this error."""

    def __init__(
        self, *, server: str, exitcode: int | None, pid: int | None, tool: str | None = None
    ) -> None:
        self.exitcode = exitcode
        self.pid = pid
        self.tool = tool
        call = f" during a call to {tool!r}" if tool else ""
        super().__init__(
            f"worker for server {server!r} (pid {pid}) {describe_exit(exitcode)}{call}",
            server=server,
        )


class WorkerTimeout(WorkerError, TimeoutError):
    """A call did not finish within its timeout; its late reply is dropped."""

    def __init__(self, *, server: str, tool: str, timeout: float) -> None:
        self.tool = tool
        self.timeout = timeout
        super().__init__(
            f"call to {server}.{tool} did not finish within {timeout:g} s", server=server
        )


class WorkerClosed(WorkerError):
    """The pool (or this worker) is closed or closing; no new calls are taken."""


class FrameTooLarge(WorkerError):
    """A message exceeds the frame size limit; nothing was sent."""

    def __init__(self, *, server: str, size: int, limit: int, what: str) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} for server {server!r} is {size} bytes; the frame limit is {limit} bytes",
            server=server,
        )
