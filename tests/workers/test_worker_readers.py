"""The worker's reading threads: a lone caller's calls are read and run by one thread.

A sync tool runs on the thread that read its call, with an idle thread watching the
socket meanwhile in case another call arrives. The reply must go out only once the
watch is disarmed: a caller sends its next call the moment the reply lands, and a watch
still armed then would wake the idle thread and pass the reading to it on every call
(two threads, a wake-up more and twice the cache traffic per call).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from typing import Any

import msgspec
import pytest

from nativemcp.protocol.wire import Call, ToWorker, encode_frame
from nativemcp.workers._readers import Job, ReaderThreads

CALLS = 6


class _InstantCaller:
    """The worker's writer, standing in for a caller that sends its next call as soon
    as a reply lands (and then gives the worker's threads time to react to it)."""

    def __init__(self, caller: socket.socket) -> None:
        self.caller = caller
        self.readers: ReaderThreads | None = None
        self.replies = 0
        self.done = threading.Event()

    def cork(self) -> None:
        pass

    def uncork(self) -> None:
        pass

    def write(self, frame: bytes) -> bool:
        self.replies += 1
        if self.replies == CALLS:
            self.done.set()
            return True
        self.caller.sendall(encode_frame(Call(id=self.replies + 1, tool="t", arguments={})))
        # Long enough for an armed watch to fire and its thread to take the reading.
        assert self.readers is not None
        deadline = time.monotonic() + 1.0
        while self.readers._keeping is not None and time.monotonic() < deadline:
            time.sleep(0.001)
        return True


@pytest.mark.skipif(not hasattr(select, "epoll"), reason="the watch needs epoll (Linux)")
def test_a_lone_callers_calls_are_all_read_and_run_by_one_thread() -> None:
    worker, caller = socket.socketpair()
    ran_on: list[int] = []
    writer = _InstantCaller(caller)
    ended = threading.Event()

    def route(message: Any) -> Job:
        def run() -> bytes:
            ran_on.append(threading.get_ident())
            return b"reply"

        return Job(message.id, run)

    readers = ReaderThreads(
        worker,
        msgspec.msgpack.Decoder(ToWorker),
        1 << 20,
        writer,  # type: ignore[arg-type]  # a FrameWriter's cork/uncork/write
        route=route,
        on_undecodable=lambda payload, error: None,
        after_batch=lambda: None,
        on_end=lambda error: ended.set(),
        limit=4,
        thread_setup=contextlib.nullcontext,
    )
    writer.readers = readers
    readers.start()
    try:
        # The watching thread is idle on the watch before the first call arrives.
        deadline = time.monotonic() + 5
        while not readers._watching:
            assert time.monotonic() < deadline, "no thread watches"
            time.sleep(0.001)
        caller.sendall(encode_frame(Call(id=1, tool="t", arguments={})))
        assert writer.done.wait(10)
        assert len(ran_on) == CALLS
        assert len(set(ran_on)) == 1, "the reading passed to another thread between calls"
    finally:
        caller.close()  # end of stream: the reading threads leave
        assert ended.wait(10)
        worker.close()
