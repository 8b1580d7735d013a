"""Round-trip cost of one 20-item list call: nativemcp against bare floors and the SDK.

Contenders, measured in the same run on the same list-shaped result:

- ``raw_pipe``: a bare multiprocess pipe; the child encodes the list with msgpack, the
  parent decodes it into the typed list. No framework at all: the blocking floor.
- ``asyncio_echo``: the same reply bytes over a bare asyncio protocol between two
  processes (the child on uvloop, the fastest loop there is): the async floor.
- ``nativemcp_value``: a typed proxy method call to a worker process, as app code makes
  it: value-only (the worker skips the model's text). The tool is sync and runs in one
  of the worker's threads, the default.
- ``nativemcp_text``: ``call_tool``, the LLM's path: the full response with the rich text.
- ``nativemcp_full``: a typed call that still has the text rendered and sent (round 1's
  typed path), for comparison with ``nativemcp_value``.
- ``nativemcp_inline``: value-only, the tool declared ``inline=True`` (no thread hop).
- ``nativemcp_sync`` / ``nativemcp_sync_inline``: the same typed calls through
  `SyncWorkerPool` (blocking I/O on the worker's socket, no event loop in the caller).
- ``sdk_inprocess``: the official ``mcp.Client`` against an equivalent ``MCPServer``
  in the same process; ``sdk_stdio``: the same over stdio (a child process).
- ``pool_external_stdio``: the same SDK server over stdio as an external server of a
  `WorkerPool` (``mcp_servers=``), called through its typed proxy: what the pool adds
  on top of the SDK client (goal: at most 10%).
- ``fastmcp``: FastMCP's in-memory client against an equivalent FastMCP server (when
  FastMCP is installed: ``pip install -e '.[bench]'``).

CPU time per call, caller plus worker (`bench._roundtrip_cpu`, over 20,000 calls in a
row per contender, the median of 3 interleaved runs; 1 with ``--quick``): the measure
that throughput and cost depend on. ``asyncio_echo`` is there too: what any asyncio
caller pays (its loop's two passes and its wake-up per call), which a blocking caller
such as ``raw_pipe`` does not. Measured with both processes on one CPU (JSON key
``cpu_us_per_call``: steady from run to run; the goal is judged on it) and free
(``cpu_us_per_call_free``: cross-CPU wake-ups included, which swing with the machine).

Also: calls/s with 64 concurrent callers (raw pipe pipelined, nativemcp async, and the
sync pool from 64 threads; ``--replicas N`` adds a pool with N replicas of the server),
the sync pool from 1 and from 8 threads (calls/s, and the caller's and the worker's CPU
per call: on 2 shared vCPUs the calls/s swing with where the scheduler puts the threads,
the CPU much less; JSON ``concurrent.sync_pool_cpu_us_per_call``; with the CPUs they
keep busy, and the most calls/s this machine's CPUs allow at 8 threads' CPU per call),
bytes on the wire per call for each path, worker cold start to ready, and idle RSS.

The MCP boundary (`bench._roundtrip_bridge`): the official SDK client calling the tool
through ``nativemcp serve`` (``bridge_stdio``, ``bridge_http``) next to the SDK's own
``MCPServer`` over stdio and Streamable HTTP, and 64 concurrent HTTP clients
(`bench._roundtrip_load`: in ``--client-processes N`` processes, by default one per two
cores, with the clients' and the servers' CPU per call and the most calls/s the
machine's CPUs allow at that cost).

``--think US``: the caller works US µs (a busy loop, not timed) before each sequential
call, as an app does between calls. On a VM whose idle vCPUs halt at once, back-to-back
calls keep the peer's vCPU awake, and any work between calls (including a framework's
own) puts each wake-up on the slow path: the floors are then measured on terms nobody
calls on.

Run: ``python -m bench.roundtrip [--quick] [--json] [--uvloop] [--replicas N] [--think US]
[--client-processes N]``
(``--uvloop``: the calling process runs on uvloop).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio

from bench._report import emit_json, parse_args, print_table, ratio
from bench._roundtrip_cpu import cpu_meter, cpu_us_per_call, process_cpu_s
from bench._roundtrip_floor import CALLERS, REQUEST, AsyncioEcho, RawPipe
from bench._roundtrip_servers import ITEMS, Item
from nativemcp.protocol import NativeMCPResponse, unwrap
from nativemcp.protocol.wire import Call, encode_frame, pack_reply, reply_value
from nativemcp.proxy import CallOptions, SyncWorkerPool, WorkerPool

_SERVER = "bench._roundtrip_servers:server"


async def _per_call_us(
    call: Callable[[], Awaitable[object]], number: int, think_us: float = 0.0
) -> float:
    """Mean µs per call over ``number`` calls. With ``think_us`` the caller first works
    that long before each call (a busy loop, not timed), as an app does between calls."""
    if not think_us:
        start = time.perf_counter()
        for _ in range(number):
            await call()
        return (time.perf_counter() - start) / number * 1e6
    total = 0.0
    for _ in range(number):
        _busy(think_us)
        start = time.perf_counter()
        await call()
        total += time.perf_counter() - start
    return total / number * 1e6


def _busy(microseconds: float) -> None:
    # Busy, not asleep: the caller's CPU stays awake, as it does while an app works.
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


async def _concurrent(call: Callable[[], Awaitable[object]], total: int) -> float:
    per_caller = max(1, total // CALLERS)

    async def caller() -> None:
        for _ in range(per_caller):
            await call()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(CALLERS):
            tg.start_soon(caller)
    return per_caller * CALLERS / (time.perf_counter() - start)


async def _cold_start_ms(repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        async with WorkerPool([_SERVER]):
            samples.append((time.perf_counter() - start) * 1000)
    return samples


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def _payload_bytes() -> dict[str, int]:
    from bench._roundtrip_servers import server

    response = await server.call_tool("list_items", {"count": ITEMS})
    value = await server.call_tool("list_items", {"count": ITEMS}, value_only=True)
    call = encode_frame(Call(id=1, tool="list_items", arguments={"count": ITEMS}))
    return {
        "nativemcp_request": len(call),
        "nativemcp_text_reply (call_tool)": len(encode_frame(pack_reply(1, response))),
        "nativemcp_value_reply (typed call)": len(encode_frame(pack_reply(1, value))),
    }


def _threads_concurrent(call: Callable[[], object], total: int, threads: int = CALLERS) -> float:
    """Calls/s with ``threads`` threads calling at once (the sync pool, shared).

    The clock starts once every thread is up: starting them is not the pool's work (for
    a short run of 8 threads it was a tenth of the time measured).
    """
    per_caller = max(1, total // threads)
    start_line = threading.Barrier(threads + 1)

    def caller() -> None:
        start_line.wait()
        for _ in range(per_caller):
            call()

    with ThreadPoolExecutor(threads) as executor:
        running = [executor.submit(caller) for _ in range(threads)]
        start_line.wait()
        start = time.perf_counter()
        for future in running:
            future.result()
        elapsed = time.perf_counter() - start
    return per_caller * threads / elapsed


def _sync_threads(
    call: Callable[[], object], worker_pid: int, quick: bool
) -> dict[int, tuple[float, float, float]]:
    """SyncWorkerPool from 1 and from 8 threads: ``{threads: (median calls/s, caller µs,
    worker µs)}``, the runs interleaved, the CPU per call over all of a count's runs."""
    runs, calls = (3, 4_000) if quick else (5, 20_000)
    rates: dict[int, list[float]] = {1: [], 8: []}
    cpu = dict.fromkeys(rates, (0.0, 0.0))
    for _ in range(runs):
        for threads in rates:
            caller, worker = time.process_time(), process_cpu_s(worker_pid)
            rates[threads].append(_threads_concurrent(call, calls, threads))
            used = (time.process_time() - caller, process_cpu_s(worker_pid) - worker)
            cpu[threads] = (cpu[threads][0] + used[0], cpu[threads][1] + used[1])
    per_call = 1e6 / (runs * calls)
    return {
        n: (statistics.median(rates[n]), cpu[n][0] * per_call, cpu[n][1] * per_call) for n in rates
    }


async def _replicas_concurrent(replicas: int, total: int) -> float:
    async with WorkerPool([_SERVER], timeout=60, replicas={_SERVER: replicas}) as pool:
        proxy = pool.server("bench")

        async def call() -> object:
            return await proxy.list_items(count=ITEMS)

        await _concurrent(call, CALLERS * 4)  # warm every replica
        return await _concurrent(call, total)


async def main(
    quick: bool,
    as_json: bool,
    replicas: int = 1,
    think_us: float = 0.0,
    client_processes: int | None = None,
) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from bench._roundtrip_sdk import fastmcp_server, sdk_server

    has_fastmcp = importlib.util.find_spec("fastmcp") is not None
    rounds = 5 if quick else 15
    number = 100 if quick else 400
    slow_number = max(10, number // 8)
    concurrent_total = CALLERS * (40 if quick else 300)

    raw = RawPipe()
    echo = AsyncioEcho()
    await echo.open()
    sync_pool = SyncWorkerPool([_SERVER], timeout=60)
    sync_pool.start()
    samples: dict[str, list[float]] = {}
    try:
        stdio = StdioServerParameters(command=sys.executable, args=["-m", "bench._roundtrip_sdk"])
        async with contextlib.AsyncExitStack() as stack:
            pool = await stack.enter_async_context(WorkerPool([_SERVER], timeout=60))
            sdk_local = await stack.enter_async_context(Client(sdk_server()))  # type: ignore[arg-type]
            sdk_remote = await stack.enter_async_context(Client(stdio))
            external = {"command": sys.executable, "args": ["-m", "bench._roundtrip_sdk"]}
            external_pool = await stack.enter_async_context(
                WorkerPool(mcp_servers={"sdk": external}, timeout=60)
            )
            external_proxy = external_pool.server("sdk")
            fast: Any = None
            if has_fastmcp:
                from fastmcp import Client as FastClient

                fast = await stack.enter_async_context(FastClient(fastmcp_server()))
            proxy = pool.server("bench")
            sync_proxy = sync_pool.server("bench")
            # Round 1's typed path (text rendered, sent, skipped on arrival), reached
            # through the worker handle's private call: only for this comparison.
            worker: Any = pool._handles["bench"]
            schema = proxy.list_items.tool.output_schema

            async def raw_call() -> object:
                return raw.call()

            async def value_call() -> object:
                return await proxy.list_items(count=ITEMS)

            async def text_call() -> NativeMCPResponse[Any]:
                return await proxy.call_tool("list_items", {"count": ITEMS})

            async def full_call() -> object:
                reply = await worker._call(
                    "list_items", {"count": ITEMS}, CallOptions(timeout=60.0), value_only=False
                )
                return reply_value(reply, list[Item], tool="list_items", output_schema=schema)

            async def inline_call() -> object:
                return await proxy.list_items_inline(count=ITEMS)

            async def sync_call() -> object:
                return sync_proxy.list_items(count=ITEMS)

            async def sync_inline_call() -> object:
                return sync_proxy.list_items_inline(count=ITEMS)

            async def sdk_local_call() -> object:
                return await sdk_local.call_tool("list_items", {"count": ITEMS})

            async def sdk_remote_call() -> object:
                return await sdk_remote.call_tool("list_items", {"count": ITEMS})

            async def external_call() -> object:
                return await external_proxy.list_items(count=ITEMS)

            async def fastmcp_call() -> object:
                return await fast.call_tool("list_items", {"count": ITEMS})

            contenders: list[tuple[str, Callable[[], Awaitable[object]], int]] = [
                ("raw_pipe", raw_call, number),
                ("asyncio_echo", echo.call, number),
                ("nativemcp_value", value_call, number),
                ("nativemcp_text", text_call, number),
                ("nativemcp_full", full_call, number),
                ("nativemcp_inline", inline_call, number),
                ("nativemcp_sync", sync_call, number),
                ("nativemcp_sync_inline", sync_inline_call, number),
                ("sdk_inprocess", sdk_local_call, number // 4),
                ("sdk_stdio", sdk_remote_call, slow_number),
                ("pool_external_stdio", external_call, slow_number),
            ]
            if fast is not None:
                contenders.append(("fastmcp", fastmcp_call, slow_number))
            samples = {name: [] for name, _, _ in contenders}
            for _, call, count in contenders:  # warm up
                await _per_call_us(call, max(5, count // 10), think_us)
            # Interleaved rounds spread machine noise over every contender alike; the
            # order flips each round, so no contender always runs after the same one.
            for round_ in range(rounds):
                for name, call, count in contenders if round_ % 2 else contenders[::-1]:
                    samples[name].append(await _per_call_us(call, count, think_us))

            value_pid, sync_pid = await proxy.pid(), sync_proxy.pid()
            cpu_contenders = [
                ("raw_pipe", raw_call, raw.process.pid),
                ("asyncio_echo", echo.call, echo.process.pid),
                ("nativemcp_value", value_call, value_pid),
                ("nativemcp_inline", inline_call, value_pid),
                ("nativemcp_sync", sync_call, sync_pid),
                ("nativemcp_sync_inline", sync_inline_call, sync_pid),
            ]
            cpu_samples: dict[str, list[tuple[float, float]]] = {
                n: [] for n, _, _ in cpu_contenders
            }
            cpu_free: dict[str, list[tuple[float, float]]] = {n: [] for n, _, _ in cpu_contenders}
            for round_ in range(1 if quick else 3):
                for name, call, pid in cpu_contenders[:: 1 if round_ % 2 else -1]:
                    cpu_samples[name].append(await cpu_us_per_call(call, pid, one_cpu_only=True))
                    cpu_free[name].append(await cpu_us_per_call(call, pid))

            # CPU beside calls/s: calls/s needs free cores, which a shared machine
            # does not have; the CPU a call costs under load is steadier.
            with cpu_meter(value_pid) as value_cpu:
                value_concurrent = await _concurrent(value_call, concurrent_total)
            with cpu_meter(value_pid) as inline_cpu:
                inline_concurrent = await _concurrent(inline_call, concurrent_total)
            with cpu_meter(sync_pid) as sync_cpu:
                sync_concurrent = _threads_concurrent(
                    lambda: sync_proxy.list_items(count=ITEMS), concurrent_total
                )
            with cpu_meter(raw.process.pid) as raw_cpu:
                raw_concurrent = raw.pipelined(concurrent_total)
            sync_threads = _sync_threads(
                lambda: sync_proxy.list_items(count=ITEMS), sync_pid, quick
            )
            idle_rss = _rss_mb(await proxy.pid())
            sdk_result = await sdk_local.call_tool("list_items", {"count": ITEMS})
            sdk_bytes = len(sdk_result.model_dump_json(by_alias=True, exclude_none=True)) + 120
            # The same value both ways: the value-only call skips only the text.
            full = unwrap(await text_call(), list[Item])
            assert full == await value_call() == sync_proxy.list_items(count=ITEMS)
    finally:
        raw.close()
        echo.close()
        sync_pool.close()

    replicas_concurrent = (
        await _replicas_concurrent(replicas, concurrent_total) if replicas > 1 else None
    )
    cold = await _cold_start_ms(3 if quick else 7)
    payload = await _payload_bytes()
    payload["raw_pipe_request"] = len(REQUEST) + 4
    payload["raw_pipe_reply"] = raw.reply_bytes + 4
    payload["sdk_response_json"] = sdk_bytes

    p50 = {name: statistics.median(values) for name, values in samples.items()}
    base = p50["nativemcp_value"]
    rows = [
        (
            name,
            p50[name],
            ratio(p50[name], p50["raw_pipe"]),
            ratio(p50[name], p50["asyncio_echo"]),
            ratio(p50[name], base),
        )
        for name in samples
    ]
    print_table(
        f"One {ITEMS}-item list call, sequential"
        + (f", {think_us:g} µs of caller work between calls" if think_us else "")
        + f", median of {rounds} interleaved rounds",
        ["contender", "p50 µs/call", "x raw_pipe", "x asyncio_echo", "x nativemcp_value"],
        rows,
    )
    print()
    concurrent_cpu = {
        name: used[0] / concurrent_total * 1e6
        for name, used in (
            ("raw", raw_cpu),
            ("value", value_cpu),
            ("inline", inline_cpu),
            ("sync", sync_cpu),
        )
    }

    def concurrent_row(name: str, key: str, rate: float) -> tuple[str, float, float, float, float]:
        cpu_us = concurrent_cpu[key]
        return (
            name,
            rate,
            ratio(rate, raw_concurrent),
            cpu_us,
            ratio(cpu_us, concurrent_cpu["raw"]),
        )

    concurrent_rows: list[tuple[str, float, float, float | str, float | str]] = [
        concurrent_row("raw_pipe (pipelined)", "raw", raw_concurrent),
        concurrent_row("nativemcp_value", "value", value_concurrent),
        concurrent_row("nativemcp_inline", "inline", inline_concurrent),
        concurrent_row("nativemcp_sync (64 threads)", "sync", sync_concurrent),
    ]
    if replicas_concurrent is not None:
        concurrent_rows.append(
            (
                f"nativemcp_value, {replicas} replicas",
                replicas_concurrent,
                ratio(replicas_concurrent, raw_concurrent),
                "",
                "",
            )
        )
    cpu = {
        name: (
            statistics.median(c for c, _ in runs),
            statistics.median(w for _, w in runs),
            statistics.median(c + w for c, w in runs),
        )
        for name, runs in cpu_samples.items()
    }
    free = {name: statistics.median(c + w for c, w in runs) for name, runs in cpu_free.items()}
    print_table(
        f"CPU per call, caller + worker ({len(cpu_samples['raw_pipe'])} x 20,000 calls, median)",
        [
            "contender",
            "caller µs",
            "worker µs",
            "one CPU µs",
            "x raw_pipe",
            "x asyncio_echo",
            "free µs",
            "x raw",
        ],
        [
            (
                name,
                caller,
                worker,
                total,
                ratio(total, cpu["raw_pipe"][2]),
                ratio(total, cpu["asyncio_echo"][2]),
                free[name],
                ratio(free[name], free["raw_pipe"]),
            )
            for name, (caller, worker, total) in cpu.items()
        ],
    )
    print()
    print_table(
        f"{CALLERS} concurrent callers (CPU: caller + worker)",
        ["contender", "calls/s", "x raw_pipe", "CPU µs/call", "x raw_pipe"],
        concurrent_rows,
    )
    print()
    one_thread, eight_threads = (sync_threads[n][0] for n in (1, 8))
    one_cpu = sum(sync_threads[1][1:])
    print_table(
        f"SyncWorkerPool: calls/s from 1 and 8 threads (median of {3 if quick else 5} runs; "
        "CPU per call over all of them)",
        [
            "threads",
            "calls/s",
            "x 1 thread",
            "caller µs",
            "worker µs",
            "CPU x 1 thread",
            "CPUs busy",
        ],
        [
            (
                n,
                rate,
                ratio(rate, one_thread),
                caller,
                worker,
                ratio(caller + worker, one_cpu),
                rate * (caller + worker) / 1e6,
            )
            for n, (rate, caller, worker) in sync_threads.items()
        ],
    )
    # Calls/s cannot pass the CPUs there are over the CPU each call costs: on a machine
    # where one thread already keeps about one CPU busy, that bounds 8 threads' gain.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ceiling = (cores or 1) * 1e6 / sum(sync_threads[8][1:])
    print(
        f"ceiling here: {cores} CPUs / {sum(sync_threads[8][1:]):.1f} µs per call at 8 threads"
        f" = {ceiling:,.0f} calls/s = {ratio(ceiling, one_thread):.2f}x one thread"
    )
    print()
    print_table("Bytes on the wire per call", ["message", "bytes"], sorted(payload.items()))
    print()
    cold_ms = statistics.median(cold)
    print_table(
        "Worker",
        ["measure", "value", "goal"],
        [
            ("cold start to ready (ms, median)", cold_ms, "≤ 300"),
            ("idle RSS (MB)", idle_rss, "≤ 40"),
        ],
    )
    print()
    from bench._roundtrip_bridge import measure as measure_bridge

    boundary = await measure_bridge(quick, client_processes)
    best_concurrent = max(value_concurrent, replicas_concurrent or 0.0)
    goals = {
        "sync typed call ≤ 2x raw_pipe": p50["nativemcp_sync"] <= 2 * p50["raw_pipe"],
        "CPU per call: nativemcp_value ≤ 1.5x raw_pipe": cpu["nativemcp_value"][2]
        <= 1.5 * cpu["raw_pipe"][2],
        "async typed call ≤ 1.25x asyncio_echo": base <= 1.25 * p50["asyncio_echo"],
        "sdk_inprocess / nativemcp_value ≥ 10": p50["sdk_inprocess"] / base >= 10,
        "sdk_stdio / nativemcp_value ≥ 20": p50["sdk_stdio"] / base >= 20,
        "pool_external_stdio ≤ 1.10x sdk_stdio": p50["pool_external_stdio"]
        <= 1.10 * p50["sdk_stdio"],
        "64 concurrent ≥ 0.5x pipelined raw": best_concurrent >= 0.5 * raw_concurrent,
        "SyncWorkerPool: 8 threads ≥ 2x one thread": eight_threads >= 2 * one_thread,
        "cold start ≤ 300 ms": cold_ms <= 300,
        "idle RSS ≤ 40 MB": idle_rss <= 40,
    }
    print()
    if think_us:
        print(f"(the goals are set for back-to-back calls; this run had {think_us:g} µs between)")
    for goal, met in goals.items():
        print(f"{'met ' if met else 'MISS'}  {goal}")
    if not has_fastmcp:
        print("(fastmcp not installed: pip install -e '.[bench]' adds that contender)")
    return {
        "think_us": think_us,
        "contenders": {name: {"p50_us": round(value, 1)} for name, value in p50.items()},
        "cpu_us_per_call": {name: round(total, 2) for name, (_, _, total) in cpu.items()},
        "cpu_us_per_call_free": {name: round(total, 2) for name, total in free.items()},
        "cpu_us_per_call_split": {
            name: {"caller": round(caller, 2), "worker": round(worker, 2)}
            for name, (caller, worker, _) in cpu.items()
        },
        "pool_external_stdio_vs_sdk_stdio": round(p50["pool_external_stdio"] / p50["sdk_stdio"], 3),
        "concurrent": {
            "callers": CALLERS,
            "nativemcp_value_calls_per_s": round(value_concurrent),
            "nativemcp_inline_calls_per_s": round(inline_concurrent),
            "nativemcp_sync_calls_per_s": round(sync_concurrent),
            "raw_pipe_calls_per_s": round(raw_concurrent),
            "cpu_us_per_call": {name: round(us, 2) for name, us in concurrent_cpu.items()},
            "sync_pool_1_thread_calls_per_s": round(one_thread),
            "sync_pool_8_threads_calls_per_s": round(eight_threads),
            "sync_pool_8_threads_ceiling_calls_per_s": round(ceiling),
            "sync_pool_cpu_us_per_call": {
                str(n): {"caller": round(caller, 2), "worker": round(worker, 2)}
                for n, (_, caller, worker) in sync_threads.items()
            },
            "replicas": replicas,
            "nativemcp_value_replicas_calls_per_s": (
                round(replicas_concurrent) if replicas_concurrent is not None else None
            ),
        },
        "payload_bytes": payload,
        "cold_start_ms": round(cold_ms, 1),
        "idle_rss_mb": round(idle_rss, 1),
        "goals_met": goals,
        "mcp_boundary": boundary,
    }


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"not a whole number of 1 or more: {text!r}")
    return number


def _add_options(parser: argparse.ArgumentParser) -> None:
    """bench.roundtrip's own options, beside the common ``--quick`` and ``--json``."""
    parser.add_argument(
        "--uvloop",
        action="store_true",
        help="run this (the calling) process on uvloop too, as many apps do; the workers "
        "always run on uvloop (default: a stock asyncio caller)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        metavar="N",
        help=f"also measure {CALLERS} concurrent callers on a pool with N replicas of the "
        "server (default: 1, no such pool)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        metavar="US",
        help="the caller works US µs (a busy loop, not timed) before each sequential call, "
        "as an app does between calls (default: 0, back to back)",
    )
    parser.add_argument(
        "--client-processes",
        type=_positive,
        default=None,
        metavar="N",
        help="run the 64 concurrent HTTP clients in N processes (default: one per two "
        "cores): one process of SDK clients drives at most a few hundred calls/s",
    )


def cli(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the bench, print its tables (and
    one JSON line with ``--json``) and return the report."""
    args = parse_args(
        __doc__.splitlines()[0] if __doc__ else "bench.roundtrip", argv, extra=_add_options
    )
    result = anyio.run(
        main,
        args.quick,
        args.json,
        args.replicas,
        args.think,
        args.client_processes,
        backend_options={"use_uvloop": args.uvloop},
    )
    result["caller_loop"] = "uvloop" if args.uvloop else "asyncio"
    if args.json:
        emit_json(result)
    return result


if __name__ == "__main__":
    cli()
