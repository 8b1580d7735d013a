"""64 callers against one worker for 10 s, mixing good calls, malformed calls, timeouts
and cancellations: every good call answers correctly, the worker's pid never changes,
and its memory stays flat."""

from __future__ import annotations

import itertools
import time
from typing import Any

import anyio
import msgspec
import pytest

from nativemcp.protocol.wire import Reply
from nativemcp.proxy import ArgumentsError, CallTimeout, WorkerPool
from nativemcp.proxy._worker import WorkerProcess
from nativemcp.workers.channel import Inbox

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


CALLERS = 64
SECONDS = 10.0


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.timeout(120)
async def test_sixty_four_callers_mixing_good_and_bad_calls_never_hurt_the_worker() -> None:
    async with WorkerPool(["_servers:server"], timeout=30) as pool:
        testing = pool.server("testing")
        handle = testing._handle
        assert isinstance(handle, WorkerProcess)
        pid = await testing.pid()
        wrong: list[str] = []
        counts = {"good": 0, "malformed": 0, "undecodable": 0, "timeout": 0, "cancelled": 0}
        serial = itertools.count()
        rss: list[float] = []

        async def undecodable() -> None:
            conn = await handle._connection("stress")
            call_id = conn.new_id()
            inbox: Inbox[Any] = Inbox()
            conn.pending[call_id] = ("raw", inbox)
            payload = msgspec.msgpack.encode(["call", call_id, "echo", {1: "x"}, False])
            conn.send(len(payload).to_bytes(4, "big") + payload)
            try:
                with anyio.fail_after(30):
                    item = await inbox.get()
            finally:
                conn.pending.pop(call_id, None)
            if not isinstance(item, Reply):
                wrong.append(f"undecodable call answered with {item!r}")

        async def caller(number: int, deadline: float) -> None:
            for turn in itertools.count():
                if time.monotonic() >= deadline:
                    return
                kind = (number + turn) % 8
                if kind == 0:
                    with pytest.raises(ArgumentsError):
                        await testing.call_tool("echo", {number: "x"})  # type: ignore[dict-item]
                    counts["malformed"] += 1
                elif kind == 1:
                    await undecodable()
                    counts["undecodable"] += 1
                elif kind == 2:
                    with pytest.raises(CallTimeout):
                        await testing.sleepy(
                            key=f"stress-{next(serial)}", seconds=5, call_timeout=0.01
                        )
                    counts["timeout"] += 1
                elif kind == 3:
                    with anyio.move_on_after(0.01):
                        await testing.hang(key=f"stress-{next(serial)}")
                    counts["cancelled"] += 1
                else:
                    text = f"caller {number} turn {turn}"
                    reply = await testing.echo(text=text)
                    if reply != text:
                        wrong.append(f"{text!r} came back as {reply!r}")
                    counts["good"] += 1

        async def sample_rss(deadline: float) -> None:
            while time.monotonic() < deadline:
                rss.append(_rss_mb(pid))
                await anyio.sleep(0.5)

        deadline = time.monotonic() + SECONDS
        with anyio.fail_after(SECONDS + 60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sample_rss, deadline)
                for number in range(CALLERS):
                    tg.start_soon(caller, number, deadline)
        assert wrong == []
        assert counts["good"] > CALLERS and all(counts.values()), counts
        assert await testing.pid() == pid
        # Flat: the second half of the run holds no more than the first half's peak
        # plus a margin for allocator noise (a leak per call would be hundreds of MB).
        half = len(rss) // 2
        assert max(rss[half:]) <= max(rss[:half]) + 16, rss
