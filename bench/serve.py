"""bench.serve: MCP over HTTP under load, one server process each: nativemcp serve with
and without its fast path, the official SDK's stateless ``MCPServer``, FastMCP's (when
installed) and a bare msgspec ASGI floor.

Each server is started alone (``bench._serve_apps``) and loaded by ``wrk`` (16
connections, one thread, a fixed 2026-07-28 POST body) for ``tools/call`` of a one-field
echo tool and for ``tools/list``. Reported first: each row's ratio to the floor (its CPU
per call over the floor's, the floor's calls/s over its own), then the server's CPU per
call (its process tree's, from /proc: steadier than calls/s on a shared machine),
calls/s, p50 and p99 latency. The goals: ``tools/call`` within 2x the floor's CPU per
call (at least 0.5x its calls/s), ``tools/list`` within 1.5x.

Every row runs on both of uvicorn's HTTP/1.1 protocols, httptools (``nativemcp serve``'s
default) and h11 (``--http h11``), the floor's too, each row's ratios against the floor
on the same protocol (``--http`` picks one; under ``--quick`` h11 runs the fast path and
the floor only). ``--http granian`` (or ``all``) runs them on Granian's ASGI server
instead, where it is installed: it serves the SDK's app unchanged, but serve does not
run on it (its read deadlines are uvicorn's protocols).

The echo tool is ``async def``, so the rows measure the stacks around it. Two more rows,
``tools/call`` only, serve it as a plain function: nativemcp's worker and the SDK both
run one in a thread, so that it cannot stall the event loop, and that hop costs each
call as much as a stack's own work on this kind of machine.

``--era 2025-11-25``: the same load as a 2025-11-25 client of a stateless server sends
it (the version in the header, no ``_meta``; each answer an event stream).

``--workers N`` (N > 1): one more row, the ``nativemcp serve --transport http --workers N``
command (N server processes on one port, fast path on), and its calls/s and CPU per call
against the one-process fast path's. Scaling needs a core per process and one for wrk;
on a machine with fewer it reports what the processes cost, not what they gain.

    python -m bench.serve [--quick] [--json] [--era 2025-11-25] [--workers N]
                          [--http httptools|h11|both|granian|all]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from typing import Any

from bench._report import emit_json, parse_args, print_table, ratio
from bench._roundtrip_bridge import _http_server
from bench._roundtrip_cpu import tree_cpu_s

KINDS = ("fast", "local", "plain", "sdk", "fastmcp", "floor", "sync", "sdk-sync")
LABELS = {
    "fast": "nativemcp serve (fast path)",
    "local": "fast path, in-process tool",
    "plain": "nativemcp serve --no-fast-path",
    "sdk": "SDK MCPServer (stateless)",
    "fastmcp": "FastMCP (stateless)",
    "floor": "bare ASGI + msgspec (floor)",
    "sync": "fast path, sync tool (thread)",
    "sdk-sync": "SDK MCPServer, sync tool",
}
HTTP = ("httptools", "h11")
"""uvicorn's HTTP/1.1 protocols, the default (`nativemcp serve`'s) first."""
GRANIAN = "granian"
"""Granian's ASGI server in uvicorn's place (``--http granian``, where installed)."""
QUICK_BOTH = frozenset({"fast", "floor"})
"""The rows ``--quick`` runs on every protocol (the others on the default only)."""
THREAD_KINDS = frozenset({"sync", "sdk-sync"})
"""Rows whose tool is a plain function (run in a thread): measured for ``tools/call``
only, where the tool runs."""
WORKERS = "workers"
"""The kind of the ``--workers N`` row: the serve command itself, N processes."""
CONNECTIONS = 16
QUICK_WARM_UP = 50
"""Sequential requests that warm a server up under ``--quick`` (a second of wrk else)."""
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "wrk", "version": "1"},
}


def _request(method: str, era: str = MODERN) -> tuple[str, dict[str, str]]:
    """The one POST every request is, as a client of protocol ``era`` sends it: its body
    and headers."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": era,
    }
    params: dict[str, Any] = {}
    if era == MODERN:
        params["_meta"] = META
        headers["Mcp-Method"] = method
    if method == "tools/call":
        params |= {"name": "say", "arguments": {"text": "hello"}}
        if era == MODERN:
            headers["Mcp-Name"] = "say"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return body, headers


def _script(method: str, era: str) -> str:
    """wrk's Lua script: every request the same POST."""
    body, headers = _request(method, era)
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body)}"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wrk(port: int, script: str, seconds: float) -> dict[str, float]:
    """One wrk run: requests, calls/s, p50 and p99 (ms), errors."""
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            script,
            f"http://127.0.0.1:{port}/mcp",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests": requests,
        "calls_per_s": rate,
        "p50_ms": _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1)),  # type: ignore[union-attr]
        "p99_ms": _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1)),  # type: ignore[union-attr]
        "errors": int(errors.group(1)) if errors else 0,
    }


def _ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def _unavailable(kind: str) -> str | None:
    """Why ``kind`` cannot run here (None: it can)."""
    if kind != "fastmcp":
        return None
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        return "fastmcp is not installed (pip install -e '.[bench]')"
    return None


def _check(port: int, method: str, era: str) -> None:
    """One request before the load: the answer must be a result, not an error (a tool
    registered under another name answers every call with an error, cheaply)."""
    body, headers = _request(method, era)
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", data=body.encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read().decode()
    if '"error"' in text or '"isError":true' in text.replace(" ", ""):
        raise SystemExit(f"bench.serve: port {port} answers {method} with an error: {text[:300]}")


def _argv(kind: str, port: int, workers: int, http: str = HTTP[0]) -> list[str]:
    """The command that serves ``kind`` on ``port`` with uvicorn's ``http`` protocol."""
    if kind == WORKERS:
        return [
            *(sys.executable, "-m", "nativemcp.proxy.cli", "serve", "bench._serve_apps:echo"),
            *("--transport", "http", "--port", str(port), "--workers", str(workers)),
            *("--http", http),
        ]
    return [sys.executable, "-m", "bench._serve_apps", kind, str(port), http]


def label(kind: str, workers: int) -> str:
    """The row's name in the tables."""
    if kind == WORKERS:
        return f"nativemcp serve --workers {workers} (fast path)"
    return LABELS[kind]


def run(
    quick: bool, era: str = MODERN, workers: int = 1, http: Sequence[str] = HTTP
) -> dict[str, Any]:
    """Load each server for each method on each of uvicorn's ``http`` protocols; the
    measurements by method, then protocol, then kind (with ``workers`` > 1, the
    ``--workers`` command after the one-process fast path; under ``quick``, for
    ``tools/call`` only). ``quick`` loads each for one second, after a warm-up of
    sequential requests rather than a second of wrk, to stay under 30 s, and runs only
    `QUICK_BOTH` on protocols past the first."""
    seconds = 1 if quick else 8
    kinds = list(KINDS)
    if workers > 1:
        kinds.insert(kinds.index("fast") + 1, WORKERS)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for index, protocol in enumerate(http):
            for kind in kinds:
                if quick and index > 0 and kind not in QUICK_BOTH:
                    continue
                missing = _unavailable(kind)
                if missing is not None:
                    if index == 0:
                        print(f"{LABELS[kind]}: skipped, {missing}", file=sys.stderr)
                    continue
                for method, measured in _load(kind, protocol, quick, era, workers, folder):
                    results.setdefault(method, {}).setdefault(protocol, {})[kind] = measured
                    measured["seconds"] = seconds
    return results


def _load(
    kind: str, http: str, quick: bool, era: str, workers: int, folder: str
) -> list[tuple[str, dict[str, Any]]]:
    """Serve ``kind`` on ``http`` and load it for each method it answers."""
    seconds = 1 if quick else 8
    port = _free_port()
    measured: list[tuple[str, dict[str, Any]]] = []
    with _http_server(_argv(kind, port, workers, http), port) as server:
        pid = server.pid
        for method in ("tools/call", "tools/list"):
            if kind in THREAD_KINDS | {"floor"} and method == "tools/list":
                continue
            if kind == WORKERS and quick and method == "tools/list":
                continue
            script = os.path.join(folder, f"{method.replace('/', '_')}.lua")
            with open(script, "w") as file:
                file.write(_script(method, era))
            _check(port, method, era)
            # Warm up: imports, first listing, caches.
            if not quick:
                _wrk(port, script, 1)
            elif method == "tools/call":
                for _ in range(QUICK_WARM_UP):
                    _check(port, method, era)
            before = tree_cpu_s(pid)
            row = _wrk(port, script, seconds)
            used = tree_cpu_s(pid) - before
            row["cpu_us_per_call"] = used / max(row["requests"], 1) * 1e6
            measured.append((method, row))
    return measured


GOALS = {"tools/call": 2.0, "tools/list": 1.5}
"""The most CPU per call each method may cost, in floors (issue 48)."""


def _table(results: dict[str, Any], era: str, workers: int) -> None:
    for method, by_http in results.items():
        for http, by_kind in by_http.items():
            floor = _floor(results, http)
            sdk = by_kind.get("sdk", {}).get("calls_per_s", 0.0)
            rows = [
                [
                    label(kind, workers),
                    ratio(m["cpu_us_per_call"], floor.get("cpu_us_per_call", 0.0)),
                    ratio(m["calls_per_s"], floor.get("calls_per_s", 0.0)),
                    m["cpu_us_per_call"],
                    m["calls_per_s"],
                    ratio(m["calls_per_s"], sdk) if sdk else "-",
                    m["p50_ms"],
                    m["p99_ms"],
                    m["errors"],
                ]
                for kind, m in by_kind.items()
            ]
            processes = "one server process"
            if WORKERS in by_kind:
                processes += f" ({workers} on the --workers row)"
            print_table(
                f"{method} ({era}) on {_server_name(http)}: {CONNECTIONS} connections, {processes}",
                [
                    "server",
                    "CPU x floor",
                    "calls/s x floor",
                    "CPU us/call",
                    "calls/s",
                    "x SDK",
                    "p50 ms",
                    "p99 ms",
                    "errors",
                ],
                rows,
            )
            scaling = _scaling(by_kind, workers)
            if scaling:
                print(scaling)
            print()
        print(_goal(results, method))
        print()


def _server_name(http: str) -> str:
    """The HTTP server a protocol names, in words."""
    return "Granian (ASGI)" if http == GRANIAN else f"uvicorn {http}"


def _floor(results: dict[str, Any], http: str) -> dict[str, Any]:
    """The floor's row on ``http`` (it answers ``tools/call`` only: every method's
    ratios are to that; empty when not measured)."""
    floor: dict[str, Any] = results.get("tools/call", {}).get(http, {}).get("floor", {})
    return floor


def _goal(results: dict[str, Any], method: str) -> str:
    """The fast path on the default protocol against each protocol's floor, and the
    goal, in words."""
    fast = results[method].get(HTTP[0], {}).get("fast") or next(
        (by_kind["fast"] for by_kind in results[method].values() if "fast" in by_kind), None
    )
    if fast is None:
        return f"{method}: the fast path was not measured"
    parts = [
        f"{ratio(fast['cpu_us_per_call'], floor['cpu_us_per_call']):.2f}x the {http} floor's"
        for http in results.get("tools/call", {})
        if (floor := _floor(results, http))
    ]
    return (
        f"{method}: the fast path's CPU per call is {', '.join(parts)} "
        f"(goal: at most {GOALS[method]}x)"
    )


def _scaling(by_kind: dict[str, Any], workers: int) -> str | None:
    """The ``--workers`` row against the one-process fast path's, in words (None: not
    both measured)."""
    one, many = by_kind.get("fast"), by_kind.get(WORKERS)
    if one is None or many is None:
        return None
    cores = os.cpu_count() or 1
    return (
        f"--workers {workers}: {ratio(many['calls_per_s'], one['calls_per_s']):.2f}x the one "
        f"process's calls/s, {ratio(many['cpu_us_per_call'], one['cpu_us_per_call']):.2f}x "
        f"its CPU per call ({cores} cores here, shared with wrk)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run the bench; print the tables (and JSON with ``--json``)."""
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "bench.serve", argv, _options)
    if shutil.which("wrk") is None:
        raise SystemExit("bench.serve needs wrk on PATH (apt-get install wrk)")
    if args.workers < 1:
        raise SystemExit(f"bench.serve: --workers must be at least 1, not {args.workers}")
    http = {"both": HTTP, "all": (*HTTP, GRANIAN)}.get(args.http, (args.http,))
    if GRANIAN in http and importlib.util.find_spec("granian") is None:
        raise SystemExit("bench.serve: --http granian needs Granian (pip install granian)")
    results = run(args.quick, args.era, args.workers, http)
    _table(results, args.era, args.workers)
    if args.json:
        emit_json(
            {
                "bench": "serve",
                "era": args.era,
                "cores": os.cpu_count(),
                "workers": args.workers,
                "http": list(http),
                "results": results,
            }
        )


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--era",
        choices=[MODERN, LEGACY],
        default=MODERN,
        help="the protocol version the load speaks (2025-11-25: to stateless servers)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="also load `nativemcp serve --workers N` (N > 1) beside the one-process rows",
    )
    parser.add_argument(
        "--http",
        choices=[*HTTP, "both", GRANIAN, "all"],
        default="both",
        help="uvicorn's HTTP/1.1 protocol every row runs on (default: each in turn); "
        "granian: Granian's ASGI server instead (installed apart); all: the three",
    )


if __name__ == "__main__":
    main()
