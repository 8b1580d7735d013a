"""Round-trip cost of one 20-item list call: nativemcp against a bare pipe and the SDK.

Contenders, measured in the same run on the same list-shaped result:

- ``raw_pipe``: a bare multiprocess pipe; the child encodes the list with msgpack, the
  parent decodes it into the typed list. No framework at all: the floor.
- ``nativemcp``: a typed proxy method call to a worker process (a sync tool: it runs
  in one of the worker's threads, the default).
- ``nativemcp_inline``: the same tool declared ``inline=True`` (runs on the worker's
  event loop: no thread hop).
- ``sdk_inprocess``: the official ``mcp.Client`` against an equivalent ``MCPServer``
  in the same process.
- ``sdk_stdio``: the same over stdio (a child process).
- ``pool_external_stdio``: the same SDK server over stdio as an external server of a
  `WorkerPool` (``mcp_servers=``), called through its typed proxy: what the pool adds
  on top of the SDK client (goal: at most 10%).

Also: calls/s with 64 concurrent callers (raw pipe pipelined, nativemcp), bytes on
the wire per call, worker cold start to ready, and idle RSS per worker.

The MCP boundary (`bench._roundtrip_bridge`): the official SDK client calling the tool
through ``nativemcp serve`` (``bridge_stdio``, ``bridge_http``) next to the SDK's own
``MCPServer`` over stdio and Streamable HTTP, and 64 concurrent HTTP clients.

Run: ``python -m bench.roundtrip [--quick] [--json] [--uvloop]`` (``--uvloop``: the
calling process runs on uvloop; the workers always do).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
import multiprocess

from bench._report import emit_json, parse_args, print_table, ratio
from bench._roundtrip_servers import ITEMS, Item, make_items
from nativemcp.proxy import WorkerPool
from nativemcp.workers._wire import Call, encode_frame, pack_reply

CALLERS = 64
_REQUEST = b"list_items"


def _raw_child(conn: Any) -> None:
    encoder = msgspec.msgpack.Encoder()
    items = make_items()
    while True:
        request = conn.recv_bytes()
        if not request:
            return
        conn.send_bytes(encoder.encode(items))


class RawPipe:
    """The floor: a multiprocess pipe, msgpack, nothing else."""

    def __init__(self) -> None:
        context = multiprocess.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_raw_child, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.decoder = msgspec.msgpack.Decoder(list[Item])
        self.reply_bytes = 0

    def call(self) -> list[Item]:
        self.conn.send_bytes(_REQUEST)
        reply = self.conn.recv_bytes()
        self.reply_bytes = len(reply)
        return self.decoder.decode(reply)

    def pipelined(self, total: int) -> float:
        """Calls/s with ``CALLERS`` requests in flight at a time."""
        start = time.perf_counter()
        done = 0
        while done < total:
            for _ in range(CALLERS):
                self.conn.send_bytes(_REQUEST)
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


async def _per_call_us(call: Callable[[], Awaitable[object]], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        await call()
    return (time.perf_counter() - start) / number * 1e6


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
        async with WorkerPool(["bench._roundtrip_servers:server"]):
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
    call = encode_frame(Call(id=1, tool="list_items", arguments={"count": ITEMS}))
    reply = encode_frame(pack_reply(1, response))
    return {"nativemcp_request": len(call), "nativemcp_reply": len(reply)}


async def main(quick: bool, as_json: bool) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from bench._roundtrip_sdk import sdk_server

    rounds = 5 if quick else 15
    number = 100 if quick else 400
    stdio_number = max(10, number // 8)
    concurrent_total = 64 * (40 if quick else 300)

    raw = RawPipe()
    samples: dict[str, list[float]] = {
        n: []
        for n in (
            "raw_pipe",
            "nativemcp",
            "nativemcp_inline",
            "sdk_inprocess",
            "sdk_stdio",
            "pool_external_stdio",
        )
    }
    try:
        stdio = StdioServerParameters(command=sys.executable, args=["-m", "bench._roundtrip_sdk"])
        external = {"command": sys.executable, "args": ["-m", "bench._roundtrip_sdk"]}
        async with (
            WorkerPool(["bench._roundtrip_servers:server"], timeout=60) as pool,
            Client(sdk_server()) as sdk_local,  # type: ignore[arg-type]
            Client(stdio) as sdk_remote,
            WorkerPool(mcp_servers={"sdk": external}, timeout=60) as external_pool,
        ):
            proxy = pool.server("bench")
            external_proxy = external_pool.server("sdk")

            async def raw_call() -> object:
                return raw.call()

            async def native_call() -> object:
                return await proxy.list_items(count=ITEMS)

            async def native_inline_call() -> object:
                return await proxy.list_items_inline(count=ITEMS)

            async def sdk_local_call() -> object:
                return await sdk_local.call_tool("list_items", {"count": ITEMS})

            async def sdk_remote_call() -> object:
                return await sdk_remote.call_tool("list_items", {"count": ITEMS})

            async def external_call() -> object:
                return await external_proxy.list_items(count=ITEMS)

            contenders = [
                ("raw_pipe", raw_call, number),
                ("nativemcp", native_call, number),
                ("nativemcp_inline", native_inline_call, number),
                ("sdk_inprocess", sdk_local_call, number // 4),
                ("sdk_stdio", sdk_remote_call, stdio_number),
                ("pool_external_stdio", external_call, stdio_number),
            ]
            for _, call, count in contenders:  # warm up
                await _per_call_us(call, max(5, count // 10))
            # Interleaved rounds spread machine noise over every contender alike; the
            # order flips each round, so no contender always runs after the same one.
            for round_ in range(rounds):
                for name, call, count in contenders if round_ % 2 else contenders[::-1]:
                    samples[name].append(await _per_call_us(call, count))

            native_concurrent = await _concurrent(native_call, concurrent_total)
            inline_concurrent = await _concurrent(native_inline_call, concurrent_total)
            raw_concurrent = raw.pipelined(concurrent_total)
            worker_pid = await proxy.pid()
            idle_rss = _rss_mb(worker_pid)
            sdk_result = await sdk_local.call_tool("list_items", {"count": ITEMS})
            sdk_bytes = len(sdk_result.model_dump_json(by_alias=True, exclude_none=True)) + 120
    finally:
        raw.close()

    cold = await _cold_start_ms(3 if quick else 7)
    payload = await _payload_bytes()
    payload["raw_pipe_request"] = len(_REQUEST) + 4
    payload["raw_pipe_reply"] = raw.reply_bytes + 4
    payload["sdk_response_json"] = sdk_bytes

    p50 = {name: statistics.median(values) for name, values in samples.items()}
    base = p50["nativemcp"]
    rows = [
        (name, p50[name], ratio(p50[name], p50["raw_pipe"]), ratio(p50[name], base))
        for name in samples
    ]
    print_table(
        f"One {ITEMS}-item list call, sequential, median of {rounds} interleaved rounds",
        ["contender", "p50 µs/call", "x raw_pipe", "x nativemcp"],
        rows,
    )
    print()
    print_table(
        f"{CALLERS} concurrent callers",
        ["contender", "calls/s", "x raw_pipe"],
        [
            ("raw_pipe (pipelined)", raw_concurrent, 1.0),
            ("nativemcp", native_concurrent, ratio(native_concurrent, raw_concurrent)),
            ("nativemcp_inline", inline_concurrent, ratio(inline_concurrent, raw_concurrent)),
        ],
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

    boundary = await measure_bridge(quick)
    goals = {
        "nativemcp ≤ 2x raw_pipe": p50["nativemcp"] <= 2 * p50["raw_pipe"],
        "sdk_inprocess / nativemcp ≥ 10": p50["sdk_inprocess"] / base >= 10,
        "sdk_stdio / nativemcp ≥ 20": p50["sdk_stdio"] / base >= 20,
        "pool_external_stdio ≤ 1.10x sdk_stdio": p50["pool_external_stdio"]
        <= 1.10 * p50["sdk_stdio"],
        "concurrent nativemcp ≥ 0.5x pipelined raw": native_concurrent >= 0.5 * raw_concurrent,
        "cold start ≤ 300 ms": cold_ms <= 300,
        "idle RSS ≤ 40 MB": idle_rss <= 40,
    }
    print()
    for goal, met in goals.items():
        print(f"{'met ' if met else 'MISS'}  {goal}")
    return {
        "contenders": {name: {"p50_us": round(value, 1)} for name, value in p50.items()},
        "pool_external_stdio_vs_sdk_stdio": round(p50["pool_external_stdio"] / p50["sdk_stdio"], 3),
        "concurrent": {
            "callers": CALLERS,
            "nativemcp_calls_per_s": round(native_concurrent),
            "nativemcp_inline_calls_per_s": round(inline_concurrent),
            "raw_pipe_calls_per_s": round(raw_concurrent),
        },
        "payload_bytes": payload,
        "cold_start_ms": round(cold_ms, 1),
        "idle_rss_mb": round(idle_rss, 1),
        "goals_met": goals,
        "mcp_boundary": boundary,
    }


if __name__ == "__main__":
    # `--uvloop` runs this (the calling) process on uvloop too, as many apps do; the
    # workers always run on uvloop. The default measures a stock asyncio caller.
    uvloop = "--uvloop" in sys.argv
    args = parse_args(
        __doc__.splitlines()[0] if __doc__ else "round trip",
        [arg for arg in sys.argv[1:] if arg != "--uvloop"],
    )
    result = anyio.run(main, args.quick, args.json, backend_options={"use_uvloop": uvloop})
    result["caller_loop"] = "uvloop" if uvloop else "asyncio"
    if args.json:
        emit_json(result)
