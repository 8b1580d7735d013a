"""The HTTP clients of bench.roundtrip's concurrent sections, in processes of their own.

One process of SDK clients is a load generator with one interpreter lock: at about
2.5 ms of client CPU per call it drives at most some 400 calls/s, whatever serves them,
so a server that scales past that would look flat. `drive` splits the clients over
several processes, started and connected first, then told to call at once.

Run as ``python -m bench._roundtrip_load URL CLIENTS CALLS`` (by `drive`): it opens
CLIENTS sessions, prints ``ready``, waits for a line on stdin, has each session make
CALLS calls at once, and prints the CPU seconds the calls took in this process.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Any, NamedTuple

import anyio
import anyio.abc
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from bench._roundtrip_cpu import tree_cpu_s
from bench._roundtrip_servers import ITEMS

__all__ = ["Load", "drive"]


class Load(NamedTuple):
    """What clients calling at once measured: calls/s, and CPU µs per call of the
    clients (all their processes) and of the server (its whole process tree)."""

    calls_per_s: float
    client_us: float
    server_us: float

    @property
    def cpus_busy(self) -> float:
        """The CPUs the clients and the server kept busy between them."""
        return self.calls_per_s * (self.client_us + self.server_us) / 1e6


async def drive(url: str, server_pid: int, clients: int, calls_each: int, processes: int) -> Load:
    """``clients`` SDK clients, a session each, over ``processes`` processes, each
    client making ``calls_each`` calls to the server at ``url`` (process ``server_pid``)
    at once.

    Raises:
        RuntimeError: a client process failed (its error is on stderr).
    """
    shares = [clients // processes + (n < clients % processes) for n in range(processes)]
    async with contextlib.AsyncExitStack() as stack:
        loaders = []
        for share in filter(None, shares):
            argv = [sys.executable, "-m", __name__, url, str(share), str(calls_each)]
            loader = await stack.enter_async_context(await anyio.open_process(argv, stderr=None))
            stack.callback(_stop, loader)  # runs first: a failed run leaves none behind
            loaders.append(loader)
        replies = [BufferedByteReceiveStream(_stdout(loader)) for loader in loaders]
        for reply in replies:
            await _expect(reply, b"ready")
        server_cpu = tree_cpu_s(server_pid)
        start = time.perf_counter()
        for loader in loaders:
            assert loader.stdin is not None
            await loader.stdin.send(b"go\n")
        client_cpu = 0.0
        for reply in replies:
            client_cpu += float(await _expect(reply))
        elapsed = time.perf_counter() - start
        server_cpu = tree_cpu_s(server_pid) - server_cpu
    calls = clients * calls_each
    return Load(calls / elapsed, client_cpu / calls * 1e6, server_cpu / calls * 1e6)


def _stdout(loader: Process) -> anyio.abc.ByteReceiveStream:
    assert loader.stdout is not None
    return loader.stdout


def _stop(loader: Process) -> None:
    if loader.returncode is None:
        loader.kill()


async def _expect(reply: BufferedByteReceiveStream, line: bytes | None = None) -> bytes:
    """The next line a client process wrote (which must be ``line``, if given)."""
    try:
        got = await reply.receive_until(b"\n", 256)
    except (anyio.IncompleteRead, anyio.EndOfStream):
        raise RuntimeError("a client process ended early (its error is above)") from None
    if line is not None and got != line:
        raise RuntimeError(f"a client process wrote {got!r}, not {line!r}")
    return got


async def _calls(url: str, clients: int, calls_each: int) -> None:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]

        async def run(session: Any) -> None:
            for _ in range(calls_each):
                await session.call_tool("list_items", {"count": ITEMS})

        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        cpu = time.process_time()
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(run, session)
        print(time.process_time() - cpu, flush=True)


if __name__ == "__main__":
    # One line per HTTP request is noise.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    anyio.run(_calls, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
