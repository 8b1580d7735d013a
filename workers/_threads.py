"""Worker threads for sync tools: a lean pool that never blocks the event loop.

`anyio.to_thread.run_sync` costs a cancel scope, a capacity limiter and a task state per
call; at 64 concurrent callers that overhead is most of a tiny tool's time. This pool
keeps only what a tool call needs: a job queue, a future per call, and a count of the
calls holding a slot.

- At most ``limit`` calls hold a slot; more wait their turn, in order.
- A call abandoned by its caller (timeout, cancellation) gives its slot back at once:
  its thread runs on (a thread cannot be interrupted) and the result is dropped, but it
  no longer holds up the calls behind it. Threads are daemons, reused once idle; at
  most ``limit`` stay idle, so the extra threads a storm of abandoned calls needed end
  with their calls.
- Each job runs in a copy of the caller's context variables, and inside anyio's worker
  thread marker, so ``anyio.from_thread.run(...)`` works from a tool as it does in an
  ``anyio.to_thread`` thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import sniffio

__all__ = ["ToolThreads", "loop_thread_marker"]

T = TypeVar("T")

_claim: Callable[[Any, Any], contextlib.AbstractContextManager[Any]] | None
try:  # anyio's marker of its own worker threads (private; present throughout anyio 4)
    from anyio._backends._asyncio import AsyncIOBackend as _Backend
    from anyio._core._eventloop import claim_worker_thread

    _claim = claim_worker_thread
except ImportError:  # pragma: no cover - then anyio.from_thread needs an explicit token
    _claim = None


def loop_thread_marker(loop: asyncio.AbstractEventLoop) -> contextlib.AbstractContextManager[Any]:
    """Marks the current thread as a worker thread of ``loop``'s anyio (as its own
    ``to_thread`` threads are), so a tool can call ``anyio.from_thread.run(...)``."""
    if _claim is None:  # pragma: no cover - see the import above
        return contextlib.nullcontext()
    return _claim(_Backend, loop)


_Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


def _deliver(future: asyncio.Future[Any], ok: bool, outcome: Any) -> None:
    if future.done():  # the caller gave up: nobody wants this result
        return
    if ok:
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


class ToolThreads:
    """Runs sync callables in daemon threads, at most ``limit`` live calls at once."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread; cancelling the caller abandons the call.

        Raises:
            Exception: whatever ``fn`` raised.
        """
        if sniffio.current_async_library() != "asyncio":
            # An in-process server called from trio (say): anyio's own thread pool.
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        loop = asyncio.get_running_loop()
        if self._active >= self._limit or self._waiters:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # handed a slot just as it was cancelled: pass it on
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                raise
        else:
            self._active += 1
        try:
            future: asyncio.Future[T] = loop.create_future()
            context = contextvars.copy_context()
            with self._lock:
                spawn = self._idle == 0
                if not spawn:
                    self._idle -= 1
            self._jobs.put((lambda: context.run(fn), future, loop))
            if spawn:
                threading.Thread(target=self._work, name="nativemcp-tool", daemon=True).start()
            return await future
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes straight to the next caller
                return
        self._active -= 1

    def _work(self) -> None:
        loop: asyncio.AbstractEventLoop | None = None
        marker: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        while True:
            fn, future, job_loop = self._jobs.get()
            if job_loop is not loop:
                marker.__exit__(None, None, None)
                loop, marker = job_loop, loop_thread_marker(job_loop)
                marker.__enter__()
            try:
                outcome, ok = fn(), True
            except BaseException as exc:  # delivered to the caller, raised there
                outcome, ok = exc, False
            try:  # noqa: SIM105 - not contextlib.suppress: 0.17 us per call, for nothing
                job_loop.call_soon_threadsafe(_deliver, future, ok, outcome)
            except RuntimeError:  # the loop closed: the worker is exiting
                pass
            del fn, future, outcome
            with self._lock:
                if self._idle >= self._limit:
                    break  # enough threads wait already: a storm's extras end
                self._idle += 1
        marker.__exit__(None, None, None)
