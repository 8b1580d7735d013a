"""The proxy's end of a worker channel, on whichever async library the caller runs.

A `Link` carries frames to and from one worker process; an `Inbox` hands items from the
link's callbacks to one waiting task; `call_at` runs a callback at a deadline. This
module holds the interface and the backend-neutral implementation (anyio streams, tasks
and events: trio and anything else anyio runs on). The asyncio fast path in
`_asyncio_link` implements the same interface; `_worker` chooses between the two, so
neither implementation imports the other.
"""

from __future__ import annotations

import math
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import anyio
import anyio.abc

from nativemcp.workers.channel import FrameReader

__all__ = ["AnyioBackend", "Backend", "Deadlines", "Inbox", "Link", "Timer"]

T = TypeVar("T")


class Timer(Protocol):
    """A pending `Backend.call_at` callback."""

    def cancel(self) -> None: ...


class Inbox(Protocol[T]):
    """Items for one waiting task, in order; `put` never blocks (event loop thread only)."""

    def put(self, item: T) -> None: ...

    def __len__(self) -> int: ...

    def get(self) -> Awaitable[T]: ...


class Link(Protocol):
    """One open channel to a worker: frames out (never blocking), frames in by callback."""

    @property
    def is_open(self) -> bool: ...

    def write(self, frame: bytes, *, alone: bool = False) -> bool: ...

    def close(self) -> None: ...

    def on_closed(self, callback: Callable[[], None]) -> None: ...

    async def wait_closed(self) -> BaseException | None: ...


class Backend(Protocol):
    """What the worker handle needs from the async library it runs on."""

    def now(self) -> float: ...

    def inbox(self) -> Inbox[Any]: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...

    async def open(self, sock: socket.socket, reader: FrameReader) -> Link: ...


class Deadlines(Generic[T]):
    """The deadlines of many calls, kept by one timer.

    A timer per call costs a handle (on trio, a task), a heap push and a cancel on every
    call. Calls mostly share one time limit, so each new deadline falls after the one
    the timer waits for: the timer moves only when an earlier deadline comes, and when
    it fires it expires whatever is due and waits for the next one.
    """

    __slots__ = ("_backend", "_due", "_expire", "_timer", "_when")

    _EARLY: float = 1e-3
    """Seconds a deadline may be expired early: a loop's timer may fire that much ahead."""

    def __init__(self, backend: Backend, expire: Callable[[T], None]) -> None:
        self._backend = backend
        self._expire = expire
        self._due: dict[int, tuple[float, T]] = {}
        self._timer: Timer | None = None
        self._when = math.inf

    def add(self, key: int, deadline: float, item: T) -> None:
        """Expire ``item`` at ``deadline`` unless ``key`` is discarded before."""
        self._due[key] = (deadline, item)
        if deadline < self._when:
            self._arm(deadline)

    def discard(self, key: int) -> None:
        """``key`` is done: no expiry for it."""
        self._due.pop(key, None)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._when = when
        self._timer = self._backend.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._when = math.inf
        now = self._backend.now() + self._EARLY
        due = [key for key, (deadline, _) in self._due.items() if deadline <= now]
        for key in due:
            self._expire(self._due.pop(key)[1])
        if self._due:
            self._arm(min(deadline for deadline, _ in self._due.values()))


class _EventInbox(Generic[T]):
    __slots__ = ("_event", "_items")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._event: anyio.Event | None = None

    def put(self, item: T) -> None:
        self._items.append(item)
        if self._event is not None:
            self._event.set()

    def __len__(self) -> int:
        return len(self._items)

    async def get(self) -> T:
        while not self._items:
            self._event = anyio.Event()
            try:
                await self._event.wait()
            finally:
                self._event = None
        return self._items.popleft()


class _ScopeTimer:
    __slots__ = ("cancelled", "scope")

    def __init__(self, when: float) -> None:
        self.scope = anyio.CancelScope(deadline=when)
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.scope.cancel()


class _StreamLink:
    """A link over an anyio socket stream: one reader task, one writer task."""

    def __init__(self, stream: anyio.abc.SocketStream, reader: FrameReader) -> None:
        self._stream = stream
        self._reader = reader
        self._outgoing: list[bytes] = []
        self._wake = anyio.Event()
        self._closing = False
        self._done = False
        self._error: BaseException | None = None
        self._finished = anyio.Event()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def is_open(self) -> bool:
        return not self._done and not self._closing

    def write(self, frame: bytes, *, alone: bool = False) -> bool:
        if not self.is_open:
            return False
        self._outgoing.append(frame)
        self._wake.set()
        return True

    def close(self) -> None:
        # The writer sends what is queued, then closes the stream.
        self._closing = True
        self._wake.set()

    def on_closed(self, callback: Callable[[], None]) -> None:
        if self._done:
            callback()
        else:
            self._callbacks.append(callback)

    async def wait_closed(self) -> BaseException | None:
        await self._finished.wait()
        return self._error

    def _finish(self, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        self._error = error
        self._wake.set()
        self._finished.set()
        for callback in self._callbacks:
            callback()

    def _stopped(self) -> bool:
        return self._done

    async def read(self) -> None:
        try:
            while not self._done:
                data = await self._stream.receive()
                error = self._reader.feed(data, self._stopped)
                if error is not None:
                    self._finish(error)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._finish(None)
        except (anyio.BrokenResourceError, OSError) as exc:
            self._finish(exc)
        finally:
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()

    async def write_frames(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                frames, self._outgoing = self._outgoing, []
                if frames and not self._done:
                    await self._stream.send(frames[0] if len(frames) == 1 else b"".join(frames))
                if self._done:
                    return
                if self._closing:
                    await self._stream.send_eof()
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._finish(exc)


class AnyioBackend:
    """Links as anyio tasks in ``task_group``: runs on trio (and asyncio)."""

    def __init__(self, task_group: anyio.abc.TaskGroup) -> None:
        self._task_group = task_group

    def now(self) -> float:
        return anyio.current_time()

    def inbox(self) -> Inbox[Any]:
        return _EventInbox()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _ScopeTimer(when)

        async def fire() -> None:
            with timer.scope:
                await anyio.sleep_forever()
            if not timer.cancelled:
                callback()

        self._task_group.start_soon(fire)
        return timer

    async def open(self, sock: socket.socket, reader: FrameReader) -> Link:
        stream = await anyio.abc.UNIXSocketStream.from_socket(sock)
        link = _StreamLink(stream, reader)
        self._task_group.start_soon(link.read)
        self._task_group.start_soon(link.write_frames)
        return link
