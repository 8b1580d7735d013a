"""How a server's worker process is started: its settings, the one thread that spawns it,
and the errors of a start that did not reach READY (the same for both pools).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pickle
import socket
from typing import Any, Final

from nativemcp.protocol import BackendType
from nativemcp.protocol.wire import StartFailed
from nativemcp.workers import (
    ServerConfig,
    ServerSource,
    ServerStartError,
    describe_exit,
    worker_main,
)

from ._bootstrap import EXIT_NO_MAIN_GUARD, no_main_guard_message
from ._restart import RestartPolicy

__all__ = ["WorkerSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class WorkerSettings:
    """How to start and keep one server's worker process: the same for the async pool
    (`WorkerProcess`) and the blocking one (`SyncWorker`)."""

    source: ServerSource
    config: ServerConfig
    mp_context: Any
    start_timeout: float | None
    """Seconds to become ready; None: no limit."""
    max_frame: int
    restart: RestartPolicy
    label: str
    pool: str = "WorkerPool"
    """The pool class that starts the worker, as the user's script names it."""
    backend: BackendType = BackendType.BUILTIN_WEB
    """A built-in server's worker, or (`BackendType.USER_WORKER`) the user's own."""

    def launch(self) -> tuple[Any, socket.socket]:
        """Start a worker process: ``(process, the parent's socket)``.

        Blocking (it waits for `_SPAWNER`); the async and the blocking pools both start
        their workers here. The handshake is the caller's.

        Raises:
            ServerStartError: the server cannot be sent to a worker process.
        """
        label = self.label
        parent_sock, child_sock = socket.socketpair()
        process = self.mp_context.Process(
            target=worker_main,
            args=(child_sock, self.source, self.config, self.max_frame, os.getpid()),
            name=f"nativemcp-worker-{label}",
            daemon=True,
        )
        try:
            # From the one long-lived thread: see `_SPAWNER` (the parent-death signal).
            _SPAWNER.submit(process.start).result()
        except (TypeError, AttributeError, pickle.PicklingError) as exc:
            parent_sock.close()
            # `Server.__reduce__` already names the server and the fix: say it once.
            reason = str(exc)
            if not reason.startswith(f"server {label!r}"):
                reason = f"server {label!r} cannot be sent to a worker process: {reason}"
            raise ServerStartError(reason, server=label) from exc
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        return process, parent_sock

    # The errors of a start that did not reach READY, worded alike for both pools.

    def exited_error(self, exitcode: int | None) -> ServerStartError:
        """The worker exited (with ``exitcode``) before it was ready."""
        if exitcode == EXIT_NO_MAIN_GUARD:
            return ServerStartError(no_main_guard_message(self.label, self.pool), server=self.label)
        return ServerStartError(
            f"worker for {self.label!r} {describe_exit(exitcode)} during start-up",
            server=self.label,
        )

    def failed_error(self, message: StartFailed) -> ServerStartError:
        """The server's own start-up failed (the worker said why)."""
        return ServerStartError(
            f"server {self.label!r} failed to start: {message.message}", server=self.label
        )

    def timeout_error(self) -> ServerStartError:
        """No READY within the start timeout."""
        return ServerStartError(
            f"worker for {self.label!r} did not become ready within {self.start_timeout:g} s",
            server=self.label,
        )


_SPAWNER: Final = concurrent.futures.ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="nativemcp-spawner"
)
"""Starts every worker process, from one thread that lives as long as this process: a
worker's parent-death signal fires when the thread that started it exits (Linux), so
that thread must not be a pooled one that retires when idle."""
