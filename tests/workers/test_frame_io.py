"""Frames in and out of a worker: the reused receive buffer, the writer that never
blocks, and the reading threads' limit on sync tools running at once.

The reader and writer run on real socket pairs; the limit is checked on a real worker.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest

from nativemcp.protocol import ProtocolError
from nativemcp.protocol.wire import FromWorker, Reply, encode_frame
from nativemcp.proxy import CallTimeout, ServerProxy, WorkerPool
from nativemcp.workers._frame_writer import FrameWriter
from nativemcp.workers._server import TOOL_THREADS
from nativemcp.workers.channel import FrameReader, Inbox

pytestmark = pytest.mark.anyio_backends("asyncio")

_CHUNK = 64 * 1024


def _reply(call_id: int, size: int) -> bytes:
    return encode_frame(Reply(id=call_id, response=msgspec.Raw(msgspec.msgpack.encode("x" * size))))


def _reader(max_frame: int = 1 << 26) -> tuple[FrameReader, list[Any]]:
    messages: list[Any] = []
    return FrameReader(msgspec.msgpack.Decoder(FromWorker), max_frame, messages.append), messages


def test_frames_split_anywhere_decode_whole() -> None:
    stream = b"".join(_reply(i, 10 * i) for i in range(1, 40))
    reader, messages = _reader()
    for index in range(len(stream)):  # one byte per read: every possible split
        view = reader.get_buffer()
        view[:1] = stream[index : index + 1]
        assert reader.buffer_updated(1) is None
    assert [m.id for m in messages] == list(range(1, 40))
    assert [len(msgspec.msgpack.decode(m.response)) for m in messages] == [
        10 * i for i in range(1, 40)
    ]


def test_decoded_payloads_survive_the_reuse_of_the_buffer() -> None:
    # A Reply keeps its response as msgspec.Raw; the reader's buffer is reused for the
    # next reads, so what was decoded earlier must not point into it.
    reader, messages = _reader()
    first = _reply(1, 100)
    reader.feed(first)
    kept = bytes(messages[0].response)
    for i in range(2, 200):
        reader.feed(_reply(i, 1000))
    assert bytes(messages[0].response) == kept
    assert msgspec.msgpack.decode(messages[0].response) == "x" * 100


def test_a_frame_bigger_than_the_buffer_is_read_into_room_made_for_it() -> None:
    big = _reply(7, 3 * 1024 * 1024)
    reader, messages = _reader()
    sent = 0
    reads = 0
    while sent < len(big):
        view = reader.get_buffer()
        # Once the length prefix is in, the free space offered covers the whole frame.
        if sent >= 4:
            assert len(view) >= len(big) - sent
        size = min(len(view), 50_000, len(big) - sent)
        view[:size] = big[sent : sent + size]
        reader.buffer_updated(size)
        sent += size
        reads += 1
    assert [m.id for m in messages] == [7]
    assert len(msgspec.msgpack.decode(messages[0].response)) == 3 * 1024 * 1024
    # The big buffer is let go once its frame is out: the next read is offered the
    # usual chunk again.
    assert len(reader.get_buffer()) == _CHUNK


def test_an_oversized_length_prefix_is_an_error_not_an_allocation() -> None:
    reader, messages = _reader(max_frame=1000)
    error = reader.feed((10**9).to_bytes(4, "big") + b"\x00" * 10)
    assert isinstance(error, ProtocolError)
    assert "exceeds 1000" in str(error)
    assert messages == []
    assert len(reader.get_buffer()) <= 2 * _CHUNK  # no room was made for the claim


@pytest.mark.anyio
async def test_an_inbox_hands_items_over_in_order_and_keeps_one_a_cancelled_waiter_missed() -> None:
    inbox: Inbox[int] = Inbox()
    inbox.put(1)  # before any wait: queued
    assert await inbox.get() == 1
    got: list[int] = []

    async def take(count: int) -> None:
        for _ in range(count):
            got.append(await inbox.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(take, 2)
        await anyio.wait_all_tasks_blocked()
        inbox.put(2)  # handed straight to the waiting task
        inbox.put(3)  # queued behind it
    assert got == [2, 3] and len(inbox) == 0
    with anyio.move_on_after(0):  # a waiter cancelled before anything came
        await inbox.get()
    inbox.put(4)
    assert len(inbox) == 1 and await inbox.get() == 4


def test_the_writer_never_blocks_and_keeps_each_writers_order() -> None:
    ours, theirs = socket.socketpair()
    writer = FrameWriter(ours)
    frames_per_thread, size = 1500, 5000  # 22 MB: far more than the socket holds
    took: list[float] = []

    def write_all(thread: int) -> None:
        for i in range(frames_per_thread):
            frame = encode_frame(
                Reply(
                    id=thread * 100_000 + i,
                    response=msgspec.Raw(msgspec.msgpack.encode(b"y" * size)),
                )
            )
            start = time.perf_counter()
            assert writer.write(frame)
            took.append(time.perf_counter() - start)

    threads = [threading.Thread(target=write_all, args=(t,)) for t in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Nobody has read a byte yet, and every write has returned.
    assert not any(thread.is_alive() for thread in threads)
    assert max(took) < 1.0

    reader, messages = _reader()
    theirs.settimeout(10)
    while len(messages) < 3 * frames_per_thread:
        view = reader.get_buffer()
        reader.buffer_updated(theirs.recv_into(view))
    by_thread: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for message in messages:
        by_thread[message.id // 100_000].append(message.id % 100_000)
    assert all(ids == list(range(frames_per_thread)) for ids in by_thread.values())
    writer.close(1.0)
    assert theirs.recv(10) == b""  # closed after the last frame
    ours.close()
    theirs.close()


def test_the_writer_stops_quietly_once_the_peer_is_gone() -> None:
    ours, theirs = socket.socketpair()
    writer = FrameWriter(ours)
    theirs.close()
    results = [writer.write(_reply(i, 10)) for i in range(3)]
    assert results[-1] is False and not writer.is_open
    writer.close(0.1)
    ours.close()


@pytest.fixture
async def testing() -> AsyncIterator[ServerProxy]:
    """The runtime tests' server in a worker of its own, its `crowd` record cleared."""
    async with WorkerPool(["_servers:server"], timeout=30) as pool:
        proxy = pool.server("testing")
        await proxy.crowd_seen()
        yield proxy


async def _crowd_call(testing: ServerProxy, seconds: float, index: int) -> None:
    await testing.crowd(seconds=seconds, index=index)


@pytest.mark.anyio
@pytest.mark.real_process
async def test_sync_calls_past_the_limit_wait_their_turn_in_order(testing: ServerProxy) -> None:
    calls = TOOL_THREADS + 8
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for index in range(calls):
                tg.start_soon(_crowd_call, testing, 0.3, index)
                await anyio.sleep(0.002)  # sent in this order
            await anyio.sleep(0.1)
            # Every thread is taken: a ping still answers (the event loop's), and so
            # does an inline tool (the reading thread's).
            with anyio.fail_after(2):
                await testing.ping()
                assert (await testing.rendered_listing_inline(count=1)).total == 1
    seen = await testing.crowd_seen()
    assert seen["most"] == TOOL_THREADS
    assert sorted(seen["order"]) == list(range(calls))
    # The ones that waited started in the order they were sent.
    waited = seen["order"][TOOL_THREADS:]
    assert waited == sorted(waited)


@pytest.mark.anyio
@pytest.mark.real_process
async def test_calls_abandoned_while_waiting_never_start(testing: ServerProxy) -> None:
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for index in range(TOOL_THREADS):
                tg.start_soon(_crowd_call, testing, 2.0, index)
            await anyio.sleep(0.3)
            for index in range(TOOL_THREADS, TOOL_THREADS + 10):
                with pytest.raises(CallTimeout):
                    await testing.crowd(seconds=2.0, index=index, call_timeout=0.05)
    seen = await testing.crowd_seen()
    assert sorted(seen["order"]) == list(range(TOOL_THREADS))


@pytest.mark.real_process
@pytest.mark.parametrize("anyio_backend", [("asyncio", {"use_uvloop": True})])
@pytest.mark.anyio
async def test_a_caller_on_uvloop_reads_small_and_big_replies(anyio_backend: Any) -> None:
    # uvloop hands the channel's reusable buffer to its own reads (BufferedProtocol).
    async with WorkerPool(["_servers:server"], timeout=30) as pool:
        testing = pool.server("testing")
        for count in (1, 20, 30_000, 3):
            listing = await testing.listing(count=count)
            assert listing.total == count and len(listing.contents) == count


@pytest.mark.anyio
@pytest.mark.real_process
async def test_a_call_that_arrives_while_lone_tools_run_is_read_at_once(
    testing: ServerProxy,
) -> None:
    # A lone sync call runs on the thread that read it, which keeps the reading; bytes
    # arriving meanwhile pass the reading on. Here the first tool ends while the second
    # still runs: the third call must still be read at once, not when the second ends.
    answered: dict[str, float] = {}
    start = anyio.current_time()

    async def block(label: str, seconds: float) -> None:
        await testing.block(seconds=seconds)
        answered[label] = anyio.current_time() - start

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(block, "first", 1.0)
            await anyio.sleep(0.3)
            tg.start_soon(block, "second", 4.0)
            await anyio.sleep(1.5)  # the first has ended; the second runs on
            assert "first" in answered
            with anyio.fail_after(1):
                assert await testing.echo(text="read at once") == "read at once"
                await testing.ping()
            answered["echo"] = anyio.current_time() - start
    assert answered["echo"] < answered["second"] - 1.5
