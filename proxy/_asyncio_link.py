"""The asyncio fast path of the proxy's worker link: the one proxy module that uses asyncio
directly (anyio runs the rest).

On asyncio (and uvloop) a link is a protocol on the loop's own transport, as in the worker
(`nativemcp.workers.channel`): frames are decoded in ``data_received`` with no task hop,
a waiting call is a bare future, and a call's deadline is a timer handle, a tenth of the
cost of a cancel scope. The neutral implementation in `_link` serves every other backend.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from nativemcp.workers.channel import FrameChannel, FrameReader, open_channel
from nativemcp.workers.channel import Inbox as _FutureInbox

from ._link import Inbox, Link, Timer

__all__ = ["AsyncioBackend"]


class _ChannelLink:
    """A `FrameChannel` seen through the `Link` interface."""

    __slots__ = ("_channel", "write")

    def __init__(self, channel: FrameChannel) -> None:
        self._channel = channel
        self.write = channel.write

    @property
    def is_open(self) -> bool:
        return self._channel.is_open

    def close(self) -> None:
        self._channel.close()

    def on_closed(self, callback: Callable[[], None]) -> None:
        self._channel.closed.add_done_callback(lambda _: callback())

    async def wait_closed(self) -> BaseException | None:
        return await self._channel.closed


class AsyncioBackend:
    """Links on the running asyncio loop."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()

    def now(self) -> float:
        return self._loop.time()

    def inbox(self) -> Inbox[Any]:
        return _FutureInbox(self._loop)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return self._loop.call_at(when, callback)

    async def open(self, sock: socket.socket, reader: FrameReader) -> Link:
        return _ChannelLink(await open_channel(sock, reader))
