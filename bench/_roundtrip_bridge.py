"""bench.roundtrip's MCP-boundary section: the official SDK client calling the same tool
through `nativemcp serve` (the tool in a worker) and through the SDK's own ``MCPServer``,
over stdio and over Streamable HTTP, sequentially and with 64 concurrent HTTP clients;
and those 64 clients against ``serve --workers 2`` next to one stateless process.
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
from typing import Any

import anyio

from bench._report import print_table, ratio
from bench._roundtrip_servers import ITEMS

CLIENTS = 64
_NATIVE = "bench._roundtrip_servers:server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _http_server(argv: list[str], port: int) -> Iterator[str]:
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
        yield f"http://127.0.0.1:{port}/mcp"
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


async def _many_clients(url: str, calls_each: int) -> float:
    """Calls/s with ``CLIENTS`` SDK clients, each with its own session, calling at once."""
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(url)) for _ in range(CLIENTS)]

        async def run(client: Any) -> None:
            for _ in range(calls_each):
                await client.call_tool("list_items", {"count": ITEMS})

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for client in clients:
                tg.start_soon(run, client)
        return CLIENTS * calls_each / (time.perf_counter() - start)


@contextlib.asynccontextmanager
async def _clients(urls: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        yield {name: await stack.enter_async_context(Client(url)) for name, url in urls.items()}


async def measure(quick: bool) -> dict[str, Any]:
    """Run the section, print its tables and return its JSON part."""
    from mcp.client.stdio import StdioServerParameters

    # The SDK's server module turns on INFO logging; one line per HTTP request is noise.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    rounds = 3 if quick else 9
    number = 20 if quick else 100
    calls_each = 5 if quick else 25
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
        ) as native_url,
        _http_server(
            [sys.executable, "-m", "bench._roundtrip_sdk", "--http", str(sdk_port)], sdk_port
        ) as sdk_url,
        _http_server([*http, "--port", str(stateless_port), _NATIVE], stateless_port) as one_url,
        _http_server(
            [*http, "--workers", "2", "--port", str(workers_port), _NATIVE], workers_port
        ) as workers_url,
    ):
        urls = {
            "bridge_stdio": StdioServerParameters(command=serve[0], args=[*serve[1:], _NATIVE]),
            "sdk_stdio": StdioServerParameters(
                command=sys.executable, args=["-m", "bench._roundtrip_sdk"]
            ),
            "bridge_http": native_url,
            "sdk_http": sdk_url,
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
            "bridge_http": await _many_clients(native_url, calls_each),
            "sdk_http": await _many_clients(sdk_url, calls_each),
            "stateless_1_process": await _many_clients(one_url, calls_each),
            "stateless_2_workers": await _many_clients(workers_url, calls_each),
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
    print_table(
        f"MCP boundary: {CLIENTS} concurrent HTTP clients (a session each)",
        ["contender", "calls/s", "x SDK server"],
        [
            (
                "bridge_http (nativemcp serve)",
                concurrent["bridge_http"],
                ratio(concurrent["bridge_http"], concurrent["sdk_http"]),
            ),
            ("sdk_http (MCPServer)", concurrent["sdk_http"], 1.0),
        ],
    )
    print()
    cores = os.cpu_count() or 1
    workers_ratio = concurrent["stateless_2_workers"] / concurrent["stateless_1_process"]
    print_table(
        f"nativemcp serve --stateless: {CLIENTS} concurrent HTTP clients, {cores} cores here",
        ["server", "calls/s", "x one process"],
        [
            ("one process", concurrent["stateless_1_process"], 1.0),
            ("--workers 2", concurrent["stateless_2_workers"], workers_ratio),
        ],
    )
    goals = {
        "bridge_stdio ≤ sdk_stdio": p50["bridge_stdio"] <= p50["sdk_stdio"],
        "bridge_http ≤ sdk_http": p50["bridge_http"] <= p50["sdk_http"],
        "64 clients: bridge_http ≥ sdk_http": concurrent["bridge_http"] >= concurrent["sdk_http"],
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
            **{f"{name}_calls_per_s": round(value) for name, value in concurrent.items()},
        },
        "serve_workers": {
            "cores": cores,
            "one_process_calls_per_s": round(concurrent["stateless_1_process"]),
            "workers_2_calls_per_s": round(concurrent["stateless_2_workers"]),
            "ratio": round(workers_ratio, 2),
        },
        "goals_met": goals,
    }
