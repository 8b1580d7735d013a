"""The worker's reading threads: frames in, and sync tools run where their call was read.

One thread at a time reads the parent's socket (the *leader*) with plain blocking reads
(an event loop's wake-ups and callbacks cost more than a small call itself). What it
reads, it routes:

- a message the event loop must see (async tools, pings, context switches, ...) is
  passed to the loop, in order, once per batch read;
- an inline tool runs on the spot, as it would have on the loop;
- a sync tool runs on the reading thread itself (leader/followers): the call's own
  thread reads, runs and replies, with no hand-off to another thread on the call's
  path. At most ``limit`` such calls run at once; more wait their turn, in order.

The reading passes to an idle thread before the tool runs when more frames are already
read or other calls are running. Otherwise (a lone call, the usual case) it passes only
if bytes arrive while the tool runs: one idle thread waits on the socket for exactly
that time (an epoll descriptor armed and disarmed around the tool, two system calls
that wake nobody), and when bytes come it reads them itself. Waking the next reader up
front costs two thread wake-ups on the call's path (the reader, then the interpreter
lock going to it), more than the call's own work; waking it only when something
arrives keeps "a slow tool never holds up another call" at no cost to the calls that
come one at a time. Without epoll (not Linux) the reading always passes up front.

A call abandoned by its caller (a `Cancel` frame: timeout or cancellation) gives its
slot back at once; its thread runs on (a thread cannot be interrupted) and its reply
is dropped. So the threads running tools may outnumber ``limit`` (by the abandoned calls
still running); once they end, at most ``limit`` threads stay idle and the rest exit.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import msgspec

from nativemcp.protocol import ProtocolError

from ._frame_writer import FrameWriter
from .channel import FrameReader

__all__ = ["Job", "ReaderThreads"]

_logger = logging.getLogger("nativemcp.worker")


class Job:
    """One sync tool call to run on a worker thread: ``run`` returns its reply frame."""

    __slots__ = ("abandoned", "id", "run")

    def __init__(self, call_id: int, run: Callable[[], bytes]) -> None:
        self.id = call_id
        self.run = run
        self.abandoned = False


_GAVE_UP: Final = Job(-1, lambda: b"")
"""`_lead`'s answer when the leader ran a tool and the reading passed on meanwhile."""


class ReaderThreads:
    """Reads frames from ``sock`` on a small group of threads (see the module docstring).

    ``route`` gets every message on the reading thread and returns a `Job` for a call
    to run on a tool thread, or None when it dealt with the message itself. ``cancel``
    ids are matched against running and waiting jobs first (`abandon`). ``on_end`` is
    called once, from a reading thread, when the stream ends: None at end of file, the
    error otherwise.
    """

    def __init__(
        self,
        sock: socket.socket,
        decoder: msgspec.msgpack.Decoder[Any],
        max_frame: int,
        writer: FrameWriter,
        route: Callable[[Any], Job | None],
        on_undecodable: Callable[[bytes, msgspec.MsgspecError], None],
        after_batch: Callable[[], None],
        on_end: Callable[[BaseException | None], None],
        limit: int,
        thread_setup: Callable[[], contextlib.AbstractContextManager[Any]],
    ) -> None:
        self._sock = sock
        self._frames = FrameReader(decoder, max_frame, self._on_message, on_undecodable)
        self._writer = writer
        self._route = route
        self._after_batch = after_batch
        self._on_end = on_end
        self._limit = limit
        self._thread_setup = thread_setup
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._leading = False  # a thread holds the reading
        self._idle = 0  # threads waiting for the reading or a job
        self._busy = 0  # jobs holding a slot
        self._waiting: deque[Job] = deque()  # jobs waiting for a slot
        self._ready: deque[Job] = deque()  # jobs given a slot, waiting for a thread
        self._jobs: dict[int, Job] = {}  # every job not yet finished, by call id
        self._picked: Job | None = None  # the job the leader takes for itself
        self._ended = False
        # The job the leader runs while it still holds the reading (see the module doc),
        # and whether an idle thread waits on the watch for bytes meanwhile.
        self._keeping: Job | None = None
        self._watching = False
        self._watch = select.epoll() if hasattr(select, "epoll") else None
        if self._watch is not None:
            self._watch.register(sock.fileno(), 0)  # disarmed until a tool runs

    def start(self) -> None:
        """Start reading (one thread), and watching (a second, where there is epoll)."""
        self._spawn()
        if self._watch is not None:
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._main, name="nativemcp-reader", daemon=True).start()

    # -- the reading thread's routing ---------------------------------------------------

    def _on_message(self, message: Any) -> None:
        try:
            job = self._route(message)
        except Exception:  # a bug in routing must not end the reading
            _logger.exception("could not route a %s message", type(message).__name__)
            return
        if job is None:
            return
        with self._lock:
            self._jobs[job.id] = job
            if self._busy < self._limit:
                self._busy += 1
                self._picked = job
            else:
                self._waiting.append(job)

    def _took_job(self) -> bool:
        return self._picked is not None

    def abandon(self, call_id: int) -> bool:
        """A `Cancel` for ``call_id``: True when it was one of these jobs (its slot is
        given back and its reply dropped); False when the event loop runs that call."""
        with self._lock:
            job = self._jobs.pop(call_id, None)
            if job is None:
                return False
            job.abandoned = True
            if job in self._waiting:
                self._waiting.remove(job)  # never started, never will; holds no slot
                return True
            if job in self._ready:
                self._ready.remove(job)  # given a slot, not started: it never will
            self._release()
            return True

    def _release(self, *, find_thread: bool = True) -> None:
        # Under the lock: a slot passes straight to the first waiting job, which an idle
        # (or new) thread runs, unless the releasing thread is free to run it itself.
        if self._waiting:
            self._ready.append(self._waiting.popleft())
            if not find_thread:
                return
            if self._idle:
                self._wake.notify()
            else:
                self._spawn()
        else:
            self._busy -= 1

    # -- threads ------------------------------------------------------------------------

    def _main(self) -> None:
        with self._thread_setup():
            while True:
                with self._lock:
                    watching = False
                    while self._leading and not self._ready and not self._ended:
                        if self._watch is not None and not self._watching:
                            self._watching = watching = True  # this idle thread watches
                            break
                        if self._idle >= self._limit:
                            return  # enough threads wait already: a storm's extras end
                        self._idle += 1
                        self._wake.wait()
                        self._idle -= 1
                    if self._ended:
                        return
                    job = None
                    if not watching:
                        job = self._ready.popleft() if self._ready else None
                        if job is None:
                            self._leading = True
                if watching and not self._watch_once():
                    continue  # woken for nothing, or the worker is ending
                if job is None:
                    job = self._lead()
                    if job is None:
                        return
                    if job is _GAVE_UP:  # ran a tool while the reading passed on
                        continue
                self._run(job)

    def _watch_once(self) -> bool:
        """Wait on the watch (as the idle thread that watches): True when bytes came
        while the leader ran a tool, and this thread has taken the reading over."""
        watch = self._watch
        assert watch is not None
        with contextlib.suppress(OSError):  # closed: the worker is ending
            watch.poll()
        with self._lock:
            self._watching = False
            if self._ended or self._keeping is None:  # the tool ended first
                return False
            # Already awake, this thread reads on: the reading passes with no other
            # thread to wake. The tool's thread finds it gone when it ends.
            self._keeping = None
            return True

    def _lead(self) -> Job | None:
        """Read and route until a job is taken (it is returned, and the reading handed
        on), the leader ran one and lost the reading meanwhile (`_GAVE_UP`), or the
        stream ends (None)."""
        frames = self._frames
        nbytes = 0
        while True:
            job = None
            # Nothing read and nothing left over (a kept tool ran, the usual lone call):
            # straight back to the socket, with no batch to open and close.
            if nbytes or frames.unread:
                self._picked = None
                self._writer.cork()
                try:
                    error = frames.buffer_updated(nbytes, self._took_job)
                finally:
                    self._writer.uncork()
                    self._after_batch()
                job = self._picked
                if error is not None:
                    self._end(error)
                    return None
            if job is not None:
                kept = (
                    self._run_keeping(job, self._watch)
                    if self._watch is not None and not frames.unread
                    else None
                )
                if kept is None:  # hand the reading on first, then run the tool
                    self._pass_reading()
                    return job
                if not kept:
                    return _GAVE_UP
                nbytes = 0
                continue
            try:
                nbytes = self._sock.recv_into(frames.get_buffer())
            except OSError as exc:
                self._end(None if self._ended else exc)
                return None
            if not nbytes:
                self._end(None)
                return None

    def _pass_reading(self) -> None:
        """Give up the reading to an idle (or new) thread."""
        with self._lock:
            self._leading = False
            if self._idle:
                self._wake.notify()
            else:
                self._spawn()

    def _run_keeping(self, job: Job, watch: select.epoll) -> bool | None:
        """Run ``job`` on the leader, the watch armed: True when the leader still holds
        the reading afterwards, False when bytes came and the watching thread took it
        over; None (nothing run) when no thread watches or other calls are running."""
        fd = self._sock.fileno()
        # The watch is armed and disarmed under the lock, and only by the thread that
        # holds the reading: once the watch passed it on, the next leader may have
        # armed it for its own tool.
        with self._lock:
            # Only a call running alone keeps the reading: under concurrent calls the
            # next bytes are moments away, and a reader already waiting for them (the
            # hand-over up front) serves them sooner than the watch can.
            if not self._watching or self._busy > 1:
                return None
            self._keeping = job
            # Level-triggered: bytes already waiting fire the watch at once.
            watch.modify(fd, select.EPOLLIN | select.EPOLLONESHOT)
        try:
            frame = self._compute(job)
        finally:
            # Disarmed before the reply goes out: the caller's next call, sent as soon as
            # the reply lands, must find this thread still reading, not the watch armed
            # (which would wake the watching thread and pass the reading on every call).
            with self._lock:
                kept = self._keeping is job
                if kept:
                    self._keeping = None
                    # Not contextlib.suppress: this runs on every lone call, and a
                    # suppress object (0.17 us) costs a third of the call it guards.
                    try:  # noqa: SIM105 - see above
                        watch.modify(fd, 0)
                    except OSError:  # closed: the worker is ending
                        pass
        self._finish(job, frame)
        return kept

    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            self._wake.notify_all()
        if self._watch is not None:
            # The socket is at its end, so the armed watch fires and its thread leaves.
            with contextlib.suppress(OSError):
                self._watch.modify(self._sock.fileno(), select.EPOLLIN | select.EPOLLONESHOT)
        if isinstance(error, ProtocolError):
            _logger.error("the channel to the parent is out of step: %s", error)
        self._on_end(error)

    def _run(self, job: Job) -> None:
        self._finish(job, self._compute(job))

    def _compute(self, job: Job) -> bytes | None:
        """Run ``job``: its reply frame (None after a bug, logged)."""
        try:
            return job.run()
        except Exception:  # run turns tool errors into replies; this is a bug
            _logger.exception("job for call %d failed", job.id)
            return None

    def _finish(self, job: Job, frame: bytes | None) -> None:
        """Give ``job``'s slot back and send its reply (unless its caller gave up)."""
        with self._lock:
            if job.abandoned:  # its caller gave up and its slot was passed on already
                return
            del self._jobs[job.id]
            self._release(find_thread=False)  # this thread runs the next job itself
        if frame is not None:
            self._writer.write(frame)
