"""bench.roundtrip's MCP-boundary section: the official SDK client calling the same tool
through `nativemcp serve` (the tool in a worker) and through the SDK's own ``MCPServer``,
over stdio and over Streamable HTTP, sequentially and with 64 concurrent HTTP clients;
and those 64 clients against ``serve --workers 2`` next to one stateless process. The
clients run in processes of their own (`bench._roundtrip_load`), and the tables give
both sides' CPU per call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, NamedTuple

from bench._report import print_table, ratio
from bench._roundtrip_load import drive
from bench._roundtrip_servers import ITEMS

CLIENTS = 64
_NATIVE = "bench._roundtrip_servers:server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _HttpServer(NamedTuple):
    url: str
    pid: int


@contextlib.contextmanager
def _http_server(argv: list[str], port: int) -> Iterator[_HttpServer]:
    """Run a server process until it listens on ``port``; stop it (by its pid) after."""
    process = subprocess.Popen(argv, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{' '.join(argv)} did not start listening") from None
                time.sleep(0.1)
        yield _HttpServer(f"http://127.0.0.1:{port}/mcp", process.pid)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _per_call_us(call: Callable[[], Awaitable[object]], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        await call()
    return (time.perf_counter() - start) / number * 1e6


@contextlib.asynccontextmanager
async def _clients(urls: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        yield {name: await stack.enter_async_context(Client(url)) for name, url in urls.items()}


async def measure(quick: bool, client_processes: int | None = None) -> dict[str, Any]:
    """Run the section, print its tables and return its JSON part; the concurrent
    clients run in ``client_processes`` processes (default: one per two cores)."""
    from mcp.client.stdio import StdioServerParameters

    # The SDK's server module turns on INFO logging; one line per HTTP request is noise.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    rounds = 3 if quick else 9
    number = 20 if quick else 100
    calls_each = 5 if quick else 25
    cores = os.cpu_count() or 1
    loaders = client_processes or max(1, cores // 2)
    serve = [sys.executable, "-m", "nativemcp.proxy.cli", "serve"]
    native_port, sdk_port = _free_port(), _free_port()
    stateless_port, workers_port = _free_port(), _free_port()
    http = [*serve, "--transport", "http", "--stateless"]
    samples: dict[str, list[float]] = {
        n: [] for n in ("bridge_stdio", "sdk_stdio", "bridge_http", "sdk_http")
    }
    with (
        _http_server(
            [*serve, "--transport", "http", "--port", str(native_port), _NATIVE], native_port
        ) as native,
        _http_server(
            [sys.executable, "-m", "bench._roundtrip_sdk", "--http", str(sdk_port)], sdk_port
        ) as sdk,
        _http_server([*http, "--port", str(stateless_port), _NATIVE], stateless_port) as one,
        _http_server(
            [*http, "--workers", "2", "--port", str(workers_port), _NATIVE], workers_port
        ) as workers,
    ):
        urls = {
            "bridge_stdio": StdioServerParameters(command=serve[0], args=[*serve[1:], _NATIVE]),
            "sdk_stdio": StdioServerParameters(
                command=sys.executable, args=["-m", "bench._roundtrip_sdk"]
            ),
            "bridge_http": native.url,
            "sdk_http": sdk.url,
        }
        async with _clients(urls) as clients:

            def caller(client: Any) -> Callable[[], Awaitable[object]]:
                async def call() -> object:
                    return await client.call_tool("list_items", {"count": ITEMS})

                return call

            calls = {name: caller(client) for name, client in clients.items()}
            for call in calls.values():  # warm up
                await _per_call_us(call, 5)
            for _ in range(rounds):  # interleaved: noise falls on every contender alike
                for name, call in calls.items():
                    samples[name].append(await _per_call_us(call, number))
        concurrent = {
            name: await drive(server.url, server.pid, CLIENTS, calls_each, loaders)
            for name, server in (
                ("bridge_http", native),
                ("sdk_http", sdk),
                ("stateless_1_process", one),
                ("stateless_2_workers", workers),
            )
        }
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    print_table(
        f"MCP boundary: one {ITEMS}-item list call from the official SDK client, "
        f"median of {rounds} interleaved rounds",
        ["contender", "p50 µs/call", "x SDK server, same transport"],
        [
            (
                "bridge_stdio (nativemcp serve)",
                p50["bridge_stdio"],
                ratio(p50["bridge_stdio"], p50["sdk_stdio"]),
            ),
            ("sdk_stdio (MCPServer)", p50["sdk_stdio"], 1.0),
            (
                "bridge_http (nativemcp serve)",
                p50["bridge_http"],
                ratio(p50["bridge_http"], p50["sdk_http"]),
            ),
            ("sdk_http (MCPServer)", p50["sdk_http"], 1.0),
        ],
    )
    print()
    rate = {name: load.calls_per_s for name, load in concurrent.items()}
    # CPU per call on each side, and the CPUs both kept busy: where the clients share
    # the machine with the server, what they use is not the server's to scale into.
    cpu_headers = ["client CPU µs", "server CPU µs", "CPUs busy"]

    def cpu(name: str) -> tuple[float, float, float]:
        load = concurrent[name]
        return load.client_us, load.server_us, load.cpus_busy

    print_table(
        f"MCP boundary: {CLIENTS} concurrent HTTP clients (a session each, "
        f"in {loaders} client process{'es' if loaders > 1 else ''})",
        ["contender", "calls/s", "x SDK server", *cpu_headers],
        [
            (
                "bridge_http (nativemcp serve)",
                rate["bridge_http"],
                ratio(rate["bridge_http"], rate["sdk_http"]),
                *cpu("bridge_http"),
            ),
            ("sdk_http (MCPServer)", rate["sdk_http"], 1.0, *cpu("sdk_http")),
        ],
    )
    print()
    workers_ratio = rate["stateless_2_workers"] / rate["stateless_1_process"]
    print_table(
        f"nativemcp serve --stateless: {CLIENTS} concurrent HTTP clients "
        f"({loaders} client process{'es' if loaders > 1 else ''}), {cores} cores here",
        ["server", "calls/s", "x one process", *cpu_headers],
        [
            ("one process", rate["stateless_1_process"], 1.0, *cpu("stateless_1_process")),
            (
                "--workers 2",
                rate["stateless_2_workers"],
                workers_ratio,
                *cpu("stateless_2_workers"),
            ),
        ],
    )
    # The clients share this machine's CPUs with the servers: what both cost per call
    # bounds the calls/s any number of server processes can reach here.
    two = concurrent["stateless_2_workers"]
    ceiling = cores * 1e6 / (two.client_us + two.server_us)
    print(
        f"ceiling here: {cores} CPUs / {two.client_us + two.server_us:,.0f} µs per call "
        f"(clients and servers) = {ceiling:,.0f} calls/s = "
        f"{ratio(ceiling, rate['stateless_1_process']):.2f}x one process"
    )
    goals = {
        "bridge_stdio ≤ sdk_stdio": p50["bridge_stdio"] <= p50["sdk_stdio"],
        "bridge_http ≤ sdk_http": p50["bridge_http"] <= p50["sdk_http"],
        "64 clients: bridge_http ≥ sdk_http": rate["bridge_http"] >= rate["sdk_http"],
        # The goal is set for ≥ 4 cores: two processes on two cores share them with
        # the workers and the clients.
        f"64 clients: --workers 2 ≥ 1.5x one process ({cores} cores here; goal set for ≥ 4)": (
            workers_ratio >= 1.5
        ),
    }
    print()
    for goal, met in goals.items():
        print(f"{'met ' if met else 'MISS'}  {goal}")
    return {
        "contenders": {name: {"p50_us": round(value, 1)} for name, value in p50.items()},
        "concurrent_http": {
            "clients": CLIENTS,
            "client_processes": loaders,
            **{f"{name}_calls_per_s": round(value) for name, value in rate.items()},
            "cpu_us_per_call": {
                name: {"client": round(load.client_us, 1), "server": round(load.server_us, 1)}
                for name, load in concurrent.items()
            },
        },
        "serve_workers": {
            "cores": cores,
            "one_process_calls_per_s": round(rate["stateless_1_process"]),
            "workers_2_calls_per_s": round(rate["stateless_2_workers"]),
            "ratio": round(workers_ratio, 2),
            "ceiling_calls_per_s": round(ceiling),
        },
        "goals_met": goals,
    }
