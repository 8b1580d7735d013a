"""A server whose worker clears its own parent-death signal, leaving the parent
watchdog as the only guard; a module so worker processes can import it.

Under spawn the kernel's parent-death signal ends a worker the moment its parent dies,
before the watchdog thread (`nativemcp.workers._parent_watch`) sees the parent go, so a test of
the watchdog itself first takes that signal away, here, from the server's own code: the
worker host and production behaviour stay as they are.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from typing import Final

import anyio

from nativemcp.workers import Server

server = Server("orphan", description="A worker that only its parent watchdog can end")

_PR_SET_PDEATHSIG: Final = 1
_PR_GET_PDEATHSIG: Final = 2


@server.tool
async def disarm_and_block(seconds: float, marker: str) -> str:
    """Clear the parent-death signal, write ``{"pid", "ppid", "armed"}`` to ``marker``
    (``armed``: the signal that was set), then block the event loop for ``seconds``.

    Async, so it runs on the event loop's thread: the worker's main thread, the one that
    armed the signal. The setting belongs to the thread that set it (a new thread starts
    with none), so ``armed`` reads SIGKILL only where clearing it takes it away.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    armed = ctypes.c_int(0)
    if libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(armed), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_GET_PDEATHSIG) failed")
    if libc.prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG, 0) failed")
    state = {"pid": os.getpid(), "ppid": os.getppid(), "armed": armed.value}
    await anyio.Path(marker + ".tmp").write_text(json.dumps(state))
    # No await from here on: once the marker is in place (whole, renamed in one step)
    # the parent may be killed, and by then the loop must already be held, or it could
    # handle the closed channel and end the worker without the watchdog.
    os.replace(marker + ".tmp", marker)
    time.sleep(seconds)  # noqa: ASYNC251  (blocking the loop is the point)
    return "done"
