"""The floors of bench.roundtrip: what moving the reply between two processes costs with
no framework at all, blocking (`RawPipe`) and on an event loop (`AsyncioEcho`).

Both children send the same bytes: the 20 items encoded once with msgpack; the parent
decodes them into ``list[Item]``, as a typed nativemcp call does.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from typing import Any, Final

import msgspec
import multiprocess

from bench._roundtrip_servers import Item, make_items

__all__ = ["CALLERS", "REQUEST", "AsyncioEcho", "RawPipe"]

CALLERS: Final = 64
"""Concurrent callers in the throughput runs."""
REQUEST: Final = b"list_items"
"""The request both floors send."""
_BUFFER: Final = 64 * 1024
"""Bytes of the asyncio floor's read buffer (every frame here fits)."""


def _raw_child(conn: Any) -> None:
    encoder = msgspec.msgpack.Encoder()
    items = make_items()
    while True:
        request = conn.recv_bytes()
        if not request:
            return
        conn.send_bytes(encoder.encode(items))


class RawPipe:
    """The blocking floor: a multiprocess pipe, msgpack, nothing else."""

    def __init__(self) -> None:
        context = multiprocess.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_raw_child, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.decoder = msgspec.msgpack.Decoder(list[Item])
        self.reply_bytes = 0

    def call(self) -> list[Item]:
        self.conn.send_bytes(REQUEST)
        reply = self.conn.recv_bytes()
        self.reply_bytes = len(reply)
        return self.decoder.decode(reply)

    def pipelined(self, total: int) -> float:
        """Calls/s with ``CALLERS`` requests in flight at a time."""
        start = time.perf_counter()
        done = 0
        while done < total:
            for _ in range(CALLERS):
                self.conn.send_bytes(REQUEST)
            for _ in range(CALLERS):
                self.decoder.decode(self.conn.recv_bytes())
            done += CALLERS
        return done / (time.perf_counter() - start)

    def close(self) -> None:
        self.conn.send_bytes(b"")
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


class _Frames(asyncio.BufferedProtocol):
    """Length-prefixed frames in, each handed to ``on_frame``.

    Read into one reused buffer: a plain `asyncio.Protocol` gets a fresh 256 KiB
    buffer per read (a memory mapping and its page faults), which costs a small call
    more than everything else an asyncio caller does, and would make the floor a
    measure of that allocation.
    """

    def __init__(self, on_frame: Any) -> None:
        self.on_frame = on_frame
        self.buffer = bytearray(_BUFFER)
        self.end = 0
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)[self.end :]

    def buffer_updated(self, nbytes: int) -> None:
        buffer = self.buffer
        self.end += nbytes
        start = 0
        while self.end - start >= 4:
            size = int.from_bytes(buffer[start : start + 4], "big")
            if self.end - start - 4 < size:
                break
            self.on_frame(bytes(buffer[start + 4 : start + 4 + size]))
            start += 4 + size
        if start:
            buffer[: self.end - start] = buffer[start : self.end]
            self.end -= start

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


async def _echo_serve(sock: socket.socket) -> None:
    reply = _frame(msgspec.msgpack.encode(make_items()))
    loop = asyncio.get_running_loop()

    def answer(_: bytes) -> None:
        # The protocol exists before the first frame can arrive (the transport may read
        # before connect_accepted_socket returns).
        assert protocol.transport is not None
        protocol.transport.write(reply)

    protocol = _Frames(answer)
    await loop.connect_accepted_socket(lambda: protocol, sock=sock)
    await protocol.lost


def _echo_child(sock: socket.socket) -> None:
    # On uvloop where it is installed: the cheapest event loop to answer from.
    try:
        import uvloop

        uvloop.run(_echo_serve(sock))
    except ImportError:  # pragma: no cover
        asyncio.run(_echo_serve(sock))


class AsyncioEcho:
    """The async floor: a bare asyncio protocol to a child process on an event loop."""

    def __init__(self) -> None:
        context = multiprocess.get_context("spawn")
        self._sock, child = socket.socketpair()
        self.process = context.Process(target=_echo_child, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.decoder = msgspec.msgpack.Decoder(list[Item])
        self._waiters: deque[asyncio.Future[bytes]] = deque()
        self._protocol: _Frames | None = None
        self._request = _frame(REQUEST)

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        _, self._protocol = await loop.connect_accepted_socket(
            lambda: _Frames(self._on_reply), sock=self._sock
        )

    def _on_reply(self, payload: bytes) -> None:
        self._waiters.popleft().set_result(payload)

    async def call(self) -> list[Item]:
        assert self._protocol is not None and self._protocol.transport is not None
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._protocol.transport.write(self._request)
        return self.decoder.decode(await waiter)

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        else:
            self._sock.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
