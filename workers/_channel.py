"""The frame channel on an asyncio transport: no task hop and no syscall per message
beyond the socket's own read and write.

Both ends speak length-prefixed msgpack frames (see `_wire`). Incoming frames are
decoded in ``data_received`` and handed to a callback at once; writing never blocks
the loop: frames queue and go out together on the loop's next pass (the transport
buffers whatever the peer has not read yet).
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar, cast

import msgspec

from nativemcp.protocol import ProtocolError

from ._wire import HEADER_SIZE, frame_fits

__all__ = ["FrameChannel", "FrameReader", "Inbox", "open_channel"]

T = TypeVar("T")

_BATCH: Final = 4
"""Frames queued before they go out without waiting for the end of the loop pass."""


class FrameReader:
    """Splits a byte stream into frames and decodes each as it completes.

    Transport-free, so that every channel (the asyncio protocol below, the proxy's
    anyio stream for other backends) reads frames by the same rules.
    """

    __slots__ = ("_buffer", "_decoder", "_max_frame", "_on_message", "_on_undecodable")

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
        self._buffer = bytearray()

    def feed(self, data: bytes, stop: Callable[[], bool] = lambda: False) -> ProtocolError | None:
        """Hand every complete frame in ``data`` (and what came before) to the callbacks.

        Returns the error that puts the stream out of step (an oversized or, without
        ``on_undecodable``, an undecodable frame), after which nothing more is read.
        ``stop`` is asked after each message: True ends the reading early.
        """
        buffer = self._buffer
        buffer += data
        position = 0
        available = len(buffer)
        while available - position >= HEADER_SIZE:
            size = int.from_bytes(buffer[position : position + HEADER_SIZE], "big")
            if not frame_fits(size, self._max_frame):
                return ProtocolError(f"incoming frame of {size} bytes exceeds {self._max_frame}")
            end = position + HEADER_SIZE + size
            if end > available:
                break
            payload = bytes(buffer[position + HEADER_SIZE : end])
            position = end
            try:
                message = self._decoder.decode(payload)
            except msgspec.MsgspecError as exc:
                if self._on_undecodable is None:
                    return ProtocolError(f"undecodable frame: {exc}")
                # The length prefix was valid, so the stream is still in step: only
                # this one message is bad, and the receiver answers or drops it.
                self._on_undecodable(payload, exc)
            else:
                self._on_message(message)
            if stop():
                return None
        if position:
            del buffer[:position]
        return None


class FrameChannel(asyncio.Protocol):
    """One end of a worker channel: decodes frames as they arrive, writes frames."""

    def __init__(
        self,
        decoder: msgspec.msgpack.Decoder[Any],
        max_frame: int,
        on_message: Callable[[Any], None],
        on_undecodable: Callable[[bytes, msgspec.MsgspecError], None] | None = None,
    ) -> None:
        self._reader = FrameReader(decoder, max_frame, on_message, on_undecodable)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[BaseException | None] = self._loop.create_future()
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False
        self._receiving = False
        self._is_closed = self.closed.done

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        # Frames written while these messages are handled (replies of inline tools) go
        # out together when the batch is read, not a loop pass later.
        self._receiving = True
        try:
            error = self._reader.feed(data, self._is_closed)
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


async def open_channel(
    sock: socket.socket,
    decoder: msgspec.msgpack.Decoder[Any],
    max_frame: int,
    on_message: Callable[[Any], None],
    on_undecodable: Callable[[bytes, msgspec.MsgspecError], None] | None = None,
) -> FrameChannel:
    """Wrap a connected stream socket in a `FrameChannel` on the running asyncio loop.

    ``on_undecodable`` gets each well-framed message that does not decode; without it
    such a message fails the channel.
    """
    loop = asyncio.get_running_loop()
    _, channel = await loop.connect_accepted_socket(
        lambda: FrameChannel(decoder, max_frame, on_message, on_undecodable), sock=sock
    )
    return channel


class Inbox(Generic[T]):
    """Items for one waiting task, delivered in order; `put` never blocks."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: T) -> None:
        """Queue ``item`` and wake the reader (event loop thread only)."""
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __len__(self) -> int:
        return len(self._items)

    async def get(self) -> T:
        """The next item, waiting for it if needed."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()
