"""A worker process's guards against outliving the process that started it.

`die_with_parent` sets them up once, at the worker's start: the kernel's parent-death
signal where there is one (Linux), and everywhere a watchdog thread that waits on the
parent and leaves at once when it is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
from typing import Final

__all__ = ["die_with_parent"]

_PARENT_POLL: Final = 0.1
"""Seconds between parent checks where the parent cannot be waited on (no pidfd)."""
_PR_SET_PDEATHSIG: Final = 1
"""prctl(2) option: the signal this process gets when its parent thread exits."""


def _exit_now() -> None:
    """Leave at once, whatever the other threads are doing (the parent is gone)."""
    os._exit(1)


def _parent_alive(parent_pid: int, first_ppid: int) -> bool:
    if os.getppid() != first_ppid:  # reparented: whoever started us has exited
        return False
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        return True
    return True


def _watch_parent(parent_pid: int, first_ppid: int) -> None:
    """Watchdog thread body: exit the process as soon as the pool's process is gone."""
    try:
        pidfd = os.pidfd_open(parent_pid)
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= 0:
        # A pidfd turns readable when its process exits: no polling, no wake-ups.
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll():
            pass
        _exit_now()
    while _parent_alive(parent_pid, first_ppid):
        threading.Event().wait(_PARENT_POLL)
    _exit_now()


def die_with_parent(parent_pid: int) -> None:
    """Make this process exit within moments of ``parent_pid``'s death, whatever it runs.

    Two guards: on Linux the kernel's parent-death signal (SIGKILL when the thread that
    started this process exits: the parent keeps one long-lived thread for starting
    workers), which works even while a C call holds the interpreter; and everywhere a
    daemon watchdog thread waiting on the parent (a pidfd, else a short poll), which
    also covers a worker started through a forkserver.
    """
    first_ppid = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if not _parent_alive(parent_pid, first_ppid):  # died before the guards were set
        _exit_now()
    threading.Thread(
        target=_watch_parent,
        args=(parent_pid, first_ppid),
        name="nativemcp-parent-watchdog",
        daemon=True,
    ).start()
