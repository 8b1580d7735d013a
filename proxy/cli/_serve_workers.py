"""``nativemcp serve --transport http --workers N``: N server processes on one port.

The supervisor binds the listening socket once and starts N server processes (spawned,
never forked) that all accept on it: the kernel hands each new connection to whichever
process calls ``accept`` first, so an idle process takes the next client. Each process
runs its own `WorkerPool` (its own worker processes) and serves statelessly, since two
requests of one client may reach two processes.

Signals: SIGTERM or SIGINT to the supervisor is forwarded once as SIGTERM to every
server process, which drains its in-flight calls (``--grace``) and exits; a second
signal is forwarded too and stops them at once. The server processes sit in their own
process group, so a terminal's Ctrl-C reaches them only through the supervisor (one
signal each, not two). A server process that dies (a crash, SIGKILL) is started again
under the pool's `RestartPolicy`; a supervisor that dies takes its server processes
with it (they drain and exit when its lifeline closes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

import multiprocess
from multiprocess.connection import wait

from .._restart import RestartPolicy

__all__ = ["serve_processes"]

_FORWARDED: Final = (signal.SIGTERM, signal.SIGINT)
"""The signals the supervisor forwards (as SIGTERM) to its server processes."""
_STOP_TIMEOUT: Final = 5.0
"""Seconds a server process gets past its own grace period before it is killed."""

_log = logging.getLogger("nativemcp.serve")


def _leave_with(lifeline: Any) -> None:
    """Thread body: SIGTERM this process (a graceful drain) once the supervisor is gone,
    which closes the lifeline's other end."""
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv()
    os.kill(os.getpid(), signal.SIGTERM)


def _server_process(
    target: Callable[[socket.socket], None], sock: socket.socket, lifeline: Any
) -> None:
    """A server process's body: its own process group (signals come from the supervisor
    only), a watch on the supervisor, then ``target`` serving on the shared socket."""
    os.setpgid(0, 0)
    threading.Thread(target=_leave_with, args=(lifeline,), daemon=True).start()
    target(sock)


def serve_processes(
    count: int,
    target: Callable[[socket.socket], None],
    sock: socket.socket,
    *,
    restart: RestartPolicy | None = None,
) -> int:
    """Run ``target(sock)`` in ``count`` spawned processes until a signal stops them.

    ``target`` must be picklable (a module-level function, or a `functools.partial` of
    one): each process gets it and the shared listening socket. Returns the exit status:
    0 after a signal, 1 when a server process kept dying past the restart budget.
    """
    policy = restart or RestartPolicy()
    context = multiprocess.get_context("spawn")
    # The supervisor holds the only writing end: when it dies, every reader sees EOF.
    lifeline, keep_alive = context.Pipe(duplex=False)
    processes: list[Any] = []
    started: dict[int, float] = {}
    stopping = False

    def start() -> Any:
        process = context.Process(
            target=_server_process,
            args=(target, sock, lifeline),
            name="nativemcp-serve",
        )
        process.start()
        started[process.pid] = time.monotonic()
        return process

    def forward(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in processes:
            if process.is_alive():
                os.kill(process.pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED}
    status = 0
    try:
        processes.extend(start() for _ in range(count))
        restarts: list[float] = []
        backoff = policy.backoff
        while processes:
            ready = set(wait([process.sentinel for process in processes]))
            for process in [p for p in processes if p.sentinel in ready]:
                process.join()
                processes.remove(process)
                if stopping:
                    continue
                if time.monotonic() - started.pop(process.pid) >= policy.healthy_after:
                    # It served a good while: its crash does not count against the next.
                    restarts.clear()
                    backoff = policy.backoff
                if not policy.allow_restart(restarts):
                    _log.error("server process %d keeps dying: stopping", process.pid)
                    status = 1
                    forward(signal.SIGTERM, None)
                    continue
                _log.warning(
                    "server process %d exited (%s): starting another",
                    process.pid,
                    process.exitcode,
                )
                time.sleep(backoff)
                backoff = min(backoff * 2, policy.max_backoff)
                processes.append(start())
    finally:
        for process in processes:  # only left here on an error of the supervisor itself
            process.kill()
            process.join(_STOP_TIMEOUT)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        keep_alive.close()
        lifeline.close()
    return status
