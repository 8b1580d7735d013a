"""A server in its own worker process, driven with blocking I/O from any thread.

The worker is the same process the async pool runs (`worker_main`, the same frames);
only this end differs. A call writes its frame straight to the socket and reads the
reply on the calling thread: no event loop and no thread hop.

Several threads may call at once. Frames go out under a send lock; replies come back in
any order, so one caller at a time reads the socket (the *reader*) and hands every reply
it meets to the call that waits for it; the others sleep on their own lock. When the
reader has its own reply it passes the socket on to a caller still waiting
(leader/followers): a lone caller never waits for anybody, and no reply is lost.

With many threads the cost is the GIL, not the work: every system call made through
Python's socket methods lets go of it, and when other threads are waiting for it the
caller loses it there and sleeps to get it back (a context switch, which on a VM costs
more than the rest of a small call). So while other calls are in flight a call's frame
is written without letting go (`_send_holding_gil`: a non-blocking ``send(2)`` of a few
microseconds), and the reader wakes the callers whose replies it found only once the
whole read is decoded, just before it reads again (letting go of the GIL then), rather
than one by one while it still holds the GIL they need. From 8 threads that takes a
fifth to a third of the context switches off each call (bench.roundtrip's 20-item tool).

A worker that dies fails every waiting call with `ServerCrashed`; the next call starts a
new one (at most ``restart.max_restarts`` in ``restart.window`` seconds).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import msgspec

from nativemcp.protocol import NativeMCPResponse
from nativemcp.protocol.wire import (
    Answer,
    Ask,
    Call,
    Cancel,
    FromWorker,
    Log,
    Ready,
    Reply,
    Result,
    Shutdown,
    Spans,
    StartFailed,
    encode_frame,
    unpack_reply,
)
from nativemcp.workers import (
    CallTimeout,
    ServerClosed,
    ServerCrashed,
    ServerError,
)
from nativemcp.workers.channel import FrameReader

from ._handle import Expected
from ._worker_base import (
    EXIT_STATUS_WAIT,
    KILL_GRACE,
    SHUTDOWN_GRACE,
    TERMINATE_GRACE,
    WorkerBase,
    emit_log,
)
from ._worker_start import WorkerSettings
from .telemetry import TRACING, emit_worker_spans, record_restart, wire_context

__all__ = ["SyncWorker"]

_decoder: Final = msgspec.msgpack.Decoder(FromWorker)

_SEND_FLAGS: Final = socket.MSG_DONTWAIT | getattr(socket, "MSG_NOSIGNAL", 0)
"""Never block holding the GIL (a full socket buffer returns at once, and the rest goes
out through `socket.sendall`, which lets go); a gone peer is an error, not SIGPIPE."""

_GIL_SEND_MAX: Final = 64 * 1024
"""Frames up to this size are written holding the GIL: the copy into the socket buffer
takes microseconds. Bigger ones take as long as the other threads' turn would."""


def _load_send() -> Callable[[int, bytes, int, int], int] | None:
    """The C library's ``send(2)`` called through `ctypes.PyDLL`, which keeps the GIL for
    the call, unlike every socket method; None where there is no such symbol."""
    try:
        send = ctypes.PyDLL(None).send  # this process's own symbols: the C library's
    except (OSError, AttributeError, TypeError):  # pragma: no cover - not a Unix
        return None
    send.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int)
    send.restype = ctypes.c_ssize_t
    return send


_send_holding_gil: Final = _load_send()


class _Slot:
    """One call waiting for its answer."""

    __slots__ = ("answer", "done", "parked", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self.done = False
        self.answer: Reply | Result | BaseException | None = None
        # A held lock the waiting caller blocks on and a waker releases: a bare lock
        # rather than a threading.Event, whose Condition adds a new lock, a waiter list
        # and two more lock round trips to every wait and wake. Made only when this
        # caller has to wait for another reader: a lone caller never sleeps.
        self.parked: Any = None

    def wake(self) -> None:
        """Wake the caller (a wake-up while it is not asleep is kept for its next wait,
        as an Event's would be until cleared)."""
        with contextlib.suppress(RuntimeError):  # released already: a wake-up is pending
            self.parked.release()

    def settle(self, answer: Reply | Result | BaseException) -> bool:
        """Record the answer; True when the caller may be asleep, to be woken (`wake`)."""
        self.answer = answer
        self.done = True
        return self.parked is not None

    def wait(self, timeout: float, reading: threading.Lock) -> None:
        """Sleep until answered, woken to take over the reading, or ``timeout`` passes."""
        if self.parked is None:
            parked = threading.Lock()
            parked.acquire()
            self.parked = parked
            # An answer or a hand-off that came before the lock existed found nobody
            # to wake. Both happen before they look for the lock, so looking at them
            # after making it misses neither (the interpreter runs these steps in order).
            if self.done or not reading.locked():
                return
        self.parked.acquire(timeout=timeout)


class _Connection:
    """One live worker process and its socket."""

    def __init__(self, process: Any, sock: socket.socket, label: str, max_frame: int) -> None:
        self.process = process
        self.sock = sock
        self.label = label
        self.ready: Ready | None = None
        self.alive = True
        self.pending: dict[int, _Slot] = {}
        self.ids = itertools.count(1)
        self.send_lock = threading.Lock()
        self.read_lock = threading.Lock()
        self._read_timeout = 0.0  # the socket's SO_RCVTIMEO, in seconds (0: none)
        self._inbox: list[Any] = []
        self.reader = FrameReader(_decoder, max_frame, self._inbox.append)

    def send(self, frame: bytes) -> bool:
        """Write a whole frame; False when the worker is gone."""
        size = len(frame)
        try:
            with self.send_lock:
                # Only while other calls are in flight: a lone caller has nobody to lose
                # the GIL to, and the socket method is the cheaper call (by 0.5 µs).
                # The fd is asked for each time: closed, the socket says -1 (EBADF), and
                # no other thread can close it in between (this one keeps the GIL).
                sent = (
                    _send_holding_gil(self.sock.fileno(), frame, size, _SEND_FLAGS)
                    if len(self.pending) > 1
                    and _send_holding_gil is not None
                    and size <= _GIL_SEND_MAX
                    else 0
                )
                if sent <= 0:  # not tried, a full buffer, or an error sendall will raise
                    self.sock.sendall(frame)
                elif sent < size:
                    self.sock.sendall(memoryview(frame)[sent:])
        except OSError:
            return False
        return True

    def receive(self, timeout: float) -> int | None:
        """Read into the frame reader, waiting at most ``timeout`` s: the bytes read (0
        when the channel closed), None when nothing came.

        One blocking read with the kernel's receive timeout (SO_RCVTIMEO), not a poll
        and then a read: a system call fewer on every call, and here a system call
        costs more than the rest of the caller's side of a small call.
        """
        # Waits are at most a second (callers loop); below that the exact timeout is
        # set, so the usual wait changes nothing and costs no extra system call.
        timeout = min(max(timeout, 0.001), 1.0)
        if timeout != self._read_timeout:
            seconds = int(timeout)
            self.sock.setsockopt(
                socket.SOL_SOCKET,
                socket.SO_RCVTIMEO,
                struct.pack("ll", seconds, int((timeout - seconds) * 1_000_000)),
            )
            self._read_timeout = timeout
        try:
            return self.sock.recv_into(self.reader.get_buffer())
        except (BlockingIOError, InterruptedError):  # the receive timeout passed
            return None
        except OSError:
            return 0

    def read_once(self, timeout: float) -> bool:
        """Read what is there within ``timeout`` s and settle the calls it answers; False
        when the channel closed (every pending call is then failed)."""
        nbytes = self.receive(timeout)
        if nbytes is None:
            return True
        error = self.reader.buffer_updated(nbytes) if nbytes else None
        asleep: list[_Slot] = []
        for message in self._inbox:
            if isinstance(message, Log):
                emit_log(self.ready.name if self.ready else self.label, message)
            elif isinstance(message, Reply | Result):
                slot = self.pending.pop(message.id, None)
                # (None: a late answer to a call that gave up)
                if slot is not None and slot.settle(message):
                    asleep.append(slot)
            elif isinstance(message, Spans):  # sent before its call's reply
                emit_worker_spans(message)
            elif isinstance(message, Ask):
                # A tool asks its client (sampling, elicitation): nobody here can answer,
                # so say so at once rather than let the tool wait.
                self.send(
                    encode_frame(
                        Answer(
                            id=message.id,
                            error="a SyncWorkerPool has no client to answer "
                            f"{message.method!r}; use WorkerPool with a handler",
                        )
                    )
                )
            # Progress (`Notify`) is for async callers with callbacks: dropped here.
        self._inbox.clear()
        # Woken now, not as each reply was decoded: until this reader lets go of the GIL
        # (reading again, or returning to its own caller) they could only wait for it.
        for slot in asleep:
            slot.wake()
        if not nbytes or error is not None:
            self.fail_all()
            return False
        return True

    def fail_all(self) -> None:
        self.alive = False
        process = self.process
        for slot in list(self.pending.values()):
            crashed = ServerCrashed(
                server=self.label, exitcode=process.exitcode, pid=process.pid, tool=slot.what
            )
            if slot.settle(crashed):
                slot.wake()
        self.pending.clear()

    def hand_off(self) -> None:
        """Wake one waiting call to take over reading (after the read lock is released).

        A waiting call with no lock yet needs no waking: it looks at the read lock
        after making its lock (`_Slot.wait`).
        """
        for slot in list(self.pending.values()):
            if not slot.done and slot.parked is not None:
                slot.wake()
                return


def _stop(process: Any, grace: float) -> None:
    """Escalate until the process is gone: (grace) → terminate → kill → reap."""
    process.join(grace)
    if process.exitcode is not None:
        return
    process.terminate()
    process.join(TERMINATE_GRACE)
    if process.exitcode is not None:
        return
    process.kill()
    process.join(KILL_GRACE)


class SyncWorker(WorkerBase):
    """A server in its own process, called with blocking I/O; safe to share between threads.

    Raises (from `start`):
        ServerStartError: the worker could not start.
    """

    def __init__(self, settings: WorkerSettings) -> None:
        super().__init__(settings)
        self._conn: _Connection | None = None
        self._conn_lock = threading.Lock()
        self._closed = False
        self._recent: list[float] = []

    # -- lifecycle -------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The live worker's process id (None before start and after a crash)."""
        conn = self._conn
        return conn.process.pid if conn is not None and conn.alive else None

    def spawn(self) -> _Connection:
        """Start the worker process (the handshake is `finish_start`'s).

        Raises:
            ServerStartError: the server cannot be sent to a worker process.
        """
        process, parent_sock = self._settings.launch()
        return _Connection(process, parent_sock, self.label, self._max_frame)

    def finish_start(self, conn: _Connection) -> None:
        """Wait for READY within the start timeout and make ``conn`` the live connection.

        Raises:
            ServerStartError: the worker failed, exited or did not answer in time.
        """
        limit = self._settings.start_timeout
        deadline = math.inf if limit is None else time.monotonic() + limit
        ready: Ready | None = None
        try:
            while ready is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._settings.timeout_error()
                ready = self._read_handshake(conn, remaining)
        except BaseException:
            conn.sock.close()
            _stop(conn.process, 0.5)
            raise
        conn.ready = ready
        self.take_ready(ready)
        conn.label = ready.name
        self._conn = conn

    def _read_handshake(self, conn: _Connection, timeout: float) -> Ready | None:
        nbytes = conn.receive(timeout)
        if nbytes is None:
            return None
        if not nbytes:
            conn.process.join(EXIT_STATUS_WAIT)
            raise self._settings.exited_error(conn.process.exitcode)
        conn.reader.buffer_updated(nbytes)
        messages, conn._inbox[:] = list(conn._inbox), []
        ready: Ready | None = None
        for message in messages:
            if isinstance(message, StartFailed):
                raise self._settings.failed_error(message)
            if isinstance(message, Ready):
                ready = message
            elif isinstance(message, Log):
                emit_log(self.label, message)
        return ready

    def close(self) -> None:
        """Shut the worker down: shutdown message → grace → terminate → kill. Idempotent."""
        with self._conn_lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.send(encode_frame(Shutdown()))
        _stop(conn.process, SHUTDOWN_GRACE)
        conn.fail_all()
        conn.sock.close()

    def _connection(self, what: str) -> _Connection:
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        with self._conn_lock:
            if self._closed:
                raise ServerClosed(
                    f"server {self.name!r} is closed; cannot {what}", server=self.name
                )
            conn = self._conn
            if conn is not None and conn.alive:
                return conn
            if conn is not None:  # it crashed: reap it, then start another
                conn.sock.close()
                _stop(conn.process, 0.5)
                self._conn = None
            if not self._restart.allow_restart(self._recent):
                raise self._restart.gave_up(f"worker for server {self.name!r}", self.name)
            record_restart(self.name)
            fresh = self.spawn()
            self.finish_start(fresh)
            return fresh

    # -- calls -----------------------------------------------------------------------

    def call(
        self, tool: str, arguments: dict[str, Any], *, timeout: float | None
    ) -> NativeMCPResponse[Any]:
        """Run ``tool`` in the worker and return its full response (text included).

        Raises:
            CallTimeout: no reply within ``timeout`` (the call is cancelled in the worker).
            ServerCrashed: the worker died before replying.
            ServerClosed: the pool is closed.
            FrameTooLarge: the arguments exceed the frame limit.
        """
        return unpack_reply(self._call(tool, arguments, timeout, value_only=False))

    def call_value(
        self, tool: str, arguments: dict[str, Any], expected: Expected, *, timeout: float | None
    ) -> Any:
        """Run ``tool`` and return its value as ``expected.type`` (the worker sends no text).

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the value does not convert to ``expected.type``.
            ServerError: as `call`.
        """
        reply = self._call(tool, arguments, timeout, value_only=True)
        return expected.from_reply(reply, tool)

    def _call(
        self, tool: str, arguments: dict[str, Any], timeout: float | None, *, value_only: bool
    ) -> Reply:
        conn = self._connection(f"call {tool!r}")
        call_id = next(conn.ids)
        frame = encode_frame(
            Call(
                id=call_id,
                tool=tool,
                arguments=arguments,
                value_only=value_only,
                trace=None if TRACING.tracer is None else wire_context(call_id),
            )
        )
        self.check_call_frame(frame, tool)
        answer = self._exchange(conn, call_id, frame, tool, timeout)
        if isinstance(answer, Reply):
            return answer
        raise ServerError(f"server {self.name!r} answered a call with {answer!r}", server=self.name)

    def request(self, make: Callable[[int], Any], what: str, timeout: float | None) -> Any:
        """Send a non-call request and return its `Result` value.

        Raises:
            ServerError: the worker could not answer, timed out, crashed or is closed.
        """
        conn = self._connection(what)
        call_id = next(conn.ids)
        answer = self._exchange(conn, call_id, encode_frame(make(call_id)), what, timeout)
        if not isinstance(answer, Result):
            raise ServerError(
                f"server {self.name!r} answered {what} with {answer!r}", server=self.name
            )
        if answer.error is not None:
            raise ServerError(
                f"server {self.name!r} could not {what}: {answer.error}", server=self.name
            )
        return answer.value

    def _exchange(
        self, conn: _Connection, call_id: int, frame: bytes, what: str, timeout: float | None
    ) -> Reply | Result:
        slot = _Slot(what)
        conn.pending[call_id] = slot
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        if not conn.send(frame):
            conn.pending.pop(call_id, None)
            conn.fail_all()
            slot.settle(
                ServerCrashed(
                    server=self.name,
                    exitcode=conn.process.exitcode,
                    pid=conn.process.pid,
                    tool=what,
                )
            )
        while not slot.done:
            if not conn.alive:  # it died after this call was registered
                conn.pending.pop(call_id, None)
                process = conn.process
                raise ServerCrashed(
                    server=self.name, exitcode=process.exitcode, pid=process.pid, tool=what
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                conn.pending.pop(call_id, None)
                if not slot.done:  # answered at the last moment: take the answer
                    conn.send(encode_frame(Cancel(id=call_id)))  # the worker stops the tool
                    raise CallTimeout(server=self.name, tool=what, timeout=timeout or 0.0)
                break
            if conn.read_lock.acquire(blocking=False):
                try:
                    while not slot.done and conn.alive:
                        wait = min(deadline - time.monotonic(), 1.0)
                        if wait <= 0:
                            break
                        conn.read_once(wait)
                finally:
                    conn.read_lock.release()
                    conn.hand_off()
            else:
                slot.wait(min(remaining, 1.0), conn.read_lock)
        answer = slot.answer
        if isinstance(answer, BaseException):
            raise answer
        assert answer is not None
        return answer
