"""The channel's I/O, public to both ends: frames off a byte stream (`FrameReader`, used
by every reader of a worker channel), and the proxy's channel on an asyncio transport
(`FrameChannel`): no task hop and no syscall per message beyond the socket's own read
and write.

Both ends speak length-prefixed msgpack frames (`nativemcp.protocol.wire`). Reads go into the
reader's own reusable buffer; frames are decoded as they complete and handed to a
callback at once. Writing never blocks the loop: frames queue and go out together on
the loop's next pass (the transport buffers whatever the peer has not read yet).
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar, cast

import msgspec

from nativemcp.protocol import ProtocolError
from nativemcp.protocol.wire import HEADER_SIZE, frame_fits

__all__ = ["FrameChannel", "FrameReader", "Inbox", "open_channel"]

T = TypeVar("T")

_BATCH: Final = 4
"""Frames queued before they go out without waiting for the end of the loop pass."""


_CHUNK: Final = 64 * 1024
"""Free space offered to each socket read. The receive buffer is allocated once and
reused: a fresh 256 KiB buffer per read (what ``sock.recv`` and asyncio's default
transport read into) costs a memory mapping and page faults on every message, more
than the rest of a small call."""


class FrameReader:
    """Splits a byte stream into frames and decodes each as it completes.

    Transport-free, so that every channel (the asyncio protocol below, the blocking
    client, the proxy's anyio stream for other backends) reads frames by the same rules.
    Reads go straight into the reader's own buffer (`get_buffer`, then `buffer_updated`);
    `feed` takes bytes read elsewhere.
    """

    __slots__ = (
        "_buffer",
        "_decoder",
        "_end",
        "_max_frame",
        "_on_message",
        "_on_undecodable",
        "_start",
        "_view",
    )

    def __init__(
        self,
        decoder: msgspec.msgpack.Decoder[Any],
        max_frame: int,
        on_message: Callable[[Any], None],
        on_undecodable: Callable[[bytes, msgspec.MsgspecError], None] | None = None,
    ) -> None:
        self._decoder = decoder
        self._max_frame = max_frame
        self._on_message = on_message
        self._on_undecodable = on_undecodable
        self._buffer = bytearray(_CHUNK)
        self._view = memoryview(self._buffer)  # made once per buffer, not per read
        self._start = 0  # the unread bytes are _buffer[_start:_end]
        self._end = 0

    @property
    def unread(self) -> int:
        """Bytes read and not yet handed on (the start of frames still to come)."""
        return self._end - self._start

    def get_buffer(self) -> memoryview:
        """Free space for the next read: at least `_CHUNK` bytes, or room for the whole
        frame being received when the length prefix says it is bigger."""
        if not self._end:  # empty (the usual case between messages): all of it is free
            return self._view
        needed = _CHUNK
        pending = self._end - self._start
        if pending >= HEADER_SIZE:
            size = int.from_bytes(self._buffer[self._start : self._start + HEADER_SIZE], "big")
            if frame_fits(size, self._max_frame):  # else buffer_updated reports it
                needed = max(needed, HEADER_SIZE + size - pending)
        if len(self._buffer) - self._end < needed:
            self._make_room(pending + needed)
        return self._view[self._end :]

    def _make_room(self, capacity: int) -> None:
        # The caller may still hold a view of the buffer, so it is never resized in
        # place: the unread bytes move to the front, or to a new, bigger buffer.
        buffer, start, end = self._buffer, self._start, self._end
        if capacity <= len(buffer):
            buffer[: end - start] = buffer[start:end]
        else:
            bigger = bytearray(max(capacity, 2 * len(buffer)))
            bigger[: end - start] = buffer[start:end]
            self._buffer = bigger
            self._view = memoryview(bigger)
        self._start, self._end = 0, end - start

    def buffer_updated(
        self, nbytes: int, stop: Callable[[], bool] = lambda: False
    ) -> ProtocolError | None:
        """``nbytes`` were read into the last `get_buffer`: hand every complete frame
        to the callbacks.

        Returns the error that puts the stream out of step (an oversized or, without
        ``on_undecodable``, an undecodable frame), after which nothing more is read.
        ``stop`` is asked after each message: True ends the reading early.
        """
        self._end += nbytes
        return self._parse(stop)

    def feed(self, data: bytes, stop: Callable[[], bool] = lambda: False) -> ProtocolError | None:
        """As `buffer_updated`, for ``data`` read into a buffer of its own."""
        size = len(data)
        if len(self._buffer) - self._end < size:
            self._make_room(self._end - self._start + size)
        self._buffer[self._end : self._end + size] = data
        return self.buffer_updated(size, stop)

    def _parse(self, stop: Callable[[], bool]) -> ProtocolError | None:
        position, end = self._start, self._end
        error: ProtocolError | None = None
        view = self._view
        while end - position >= HEADER_SIZE:
            size = int.from_bytes(view[position : position + HEADER_SIZE], "big")
            if not frame_fits(size, self._max_frame):
                error = ProtocolError(f"incoming frame of {size} bytes exceeds {self._max_frame}")
                break
            frame_end = position + HEADER_SIZE + size
            if frame_end > end:
                break
            # A copy: decoded messages may keep the payload (`msgspec.Raw`), and the
            # buffer is reused.
            payload = bytes(view[position + HEADER_SIZE : frame_end])
            position = frame_end
            try:
                message = self._decoder.decode(payload)
            except msgspec.MsgspecError as exc:
                if self._on_undecodable is None:
                    error = ProtocolError(f"undecodable frame: {exc}")
                    break
                # The length prefix was valid, so the stream is still in step: only
                # this one message is bad, and the receiver answers or drops it.
                self._on_undecodable(payload, exc)
            else:
                self._on_message(message)
            if stop():
                break
        if position == end:
            self._start = self._end = 0
            if len(self._buffer) > _CHUNK:  # a big frame has gone: give its memory back
                self._buffer = bytearray(_CHUNK)
                self._view = memoryview(self._buffer)
        else:
            self._start = position
        return error


class FrameChannel(asyncio.BufferedProtocol):
    """One end of a worker channel: ``reader`` decodes frames as they arrive; writes frames."""

    def __init__(self, reader: FrameReader) -> None:
        self._reader = reader
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[BaseException | None] = self._loop.create_future()
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False
        self._receiving = False
        self._is_closed = self.closed.done

    # -- asyncio.BufferedProtocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        # Frames written while these messages are handled (replies of inline tools) go
        # out together when the batch is read, not a loop pass later.
        self._receiving = True
        try:
            error = self._reader.buffer_updated(nbytes, self._is_closed)
        finally:
            self._receiving = False
        if error is not None:
            self._fail(error)
        elif self._outgoing:
            self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(exc)

    # -- use -----------------------------------------------------------------------------

    def _fail(self, error: BaseException) -> None:
        # The stream is out of step: nothing after this point can be trusted.
        if not self.closed.done():
            self.closed.set_result(error)
        if self._transport is not None:
            self._transport.abort()

    @property
    def is_open(self) -> bool:
        """False once the channel closed or failed."""
        return not self.closed.done() and self._transport is not None

    def write(self, frame: bytes, *, alone: bool = False) -> bool:
        """Queue a frame; False when the channel is closed.

        Frames go out in small batches: every `_BATCH` frames, and whatever is left at
        the end of the loop pass (or of the batch of incoming frames being handled).
        Many concurrent calls (or many replies to one batch of frames) then cost a few
        system calls, not one each, while the peer can start on the first frames before
        this side has queued the last. ``alone``: the writer knows no other frame is
        coming in this pass (a lone call, the reply to the only running call): it goes
        out at once, a loop pass sooner.
        """
        transport = self._transport
        if transport is None or transport.is_closing() or self.closed.done():
            return False
        if alone and not self._outgoing and not self._receiving:
            transport.write(frame)
            return True
        self._outgoing.append(frame)
        if len(self._outgoing) >= _BATCH:
            self._flush()
        elif not self._flush_scheduled and not self._receiving:
            self._flush_scheduled = True
            self._loop.call_soon(self._end_of_pass)
        return True

    def _end_of_pass(self) -> None:
        self._flush_scheduled = False
        self._flush()

    def _flush(self) -> None:
        frames, self._outgoing = self._outgoing, []
        transport = self._transport
        if frames and transport is not None and not transport.is_closing():
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))

    def close(self) -> None:
        """Close the transport after sending what is queued."""
        self._flush()
        if self._transport is not None:
            self._transport.close()


async def open_channel(sock: socket.socket, reader: FrameReader) -> FrameChannel:
    """Wrap a connected stream socket in a `FrameChannel` on the running asyncio loop,
    its incoming frames read by ``reader`` (see `FrameReader` for what it calls)."""
    loop = asyncio.get_running_loop()
    _, channel = await loop.connect_accepted_socket(lambda: FrameChannel(reader), sock=sock)
    return channel


class Inbox(Generic[T]):
    """Items for one waiting task, delivered in order; `put` never blocks.

    A waiting task awaits a bare future, and `put` hands the item straight into it: no
    coroutine of the inbox's own to step through on the way in and out of each wait.
    ``loop``: the event loop it is used on, when the maker knows it (the running one
    otherwise): one look-up saved per wait, which on Python 3.11 is a system call.
    """

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        # Made when an item first has to wait (rare for a call's inbox): a deque is
        # over 600 bytes, an allocation per call otherwise.
        self._items: deque[T] | None = None
        self._waiter: asyncio.Future[T] | None = None
        self._loop = loop

    def put(self, item: T) -> None:
        """Hand ``item`` to the waiting task, or queue it (event loop thread only)."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # else its task was cancelled while it waited
                waiter.set_result(item)
                return
        if self._items is None:
            self._items = deque()
        self._items.append(item)

    def __len__(self) -> int:
        return len(self._items) if self._items is not None else 0

    def get(self) -> asyncio.Future[T]:
        """The next item, to await: a future that the next `put` completes (one task
        waits at a time)."""
        future = (self._loop or asyncio.get_running_loop()).create_future()
        if self._items:
            future.set_result(self._items.popleft())
        else:
            self._waiter = future
        return future
