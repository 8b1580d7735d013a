"""Beyond one machine: Debian's haproxy in front of two ``nativemcp serve --stateless``
replicas sharing one PostgreSQL database. One replica is killed with SIGKILL in the
middle of a bounded concurrent write load, then started again:

- no acknowledged write is lost (each one is listed afterwards, through the balancer);
- the balancer's health check (an MCP ``ping``) takes the dead replica out and brings
  the restarted one back, which then serves writes again;
- every writer has a write acknowledged within `RESUME_BOUND` seconds of the kill.

The calls are the kind serve's fast path answers (on by default): half of the writers
speak 2026-07-28 (the envelope in ``_meta``), half 2025-11-25 (the version in the header,
no session), as do the health check's pings.

Needs ``haproxy`` (``.ci/run`` installs it with apt): skipped without it, failed in CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import pytest
from _issuer import running_issuer
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script

WRITERS: Final = 8
"""Concurrent writers through the balancer (a bounded load)."""
RESUME_BOUND: Final = 5.0
"""Seconds within which every writer has a write acknowledged again after the kill.
The health check alone takes the replica out within ``inter * fall`` = 0.4 s; until
then a refused connection is retried on the other replica (``option redispatch``), and
a call that was inside the killed replica fails at once (an empty response: 502)."""
BACKEND: Final = "replicas"
LEGACY: Final = "2025-11-25"
MODERN: Final = "2026-07-28"
GUIDE_SERVERS: Final = {
    "replica1": "10.0.0.11:8000",
    "replica2": "10.0.0.12:8000",
    "ingest1": "10.0.0.21:8000",
}
"""The deployment guide's haproxy servers and their addresses there."""

pytestmark = [
    pytest.mark.load_balancer,
    pytest.mark.real_process,
    pytest.mark.anyio_backends("asyncio"),
]


def _haproxy() -> str:
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/sbin")
    if found:
        return found
    message = "haproxy is not installed (apt-get install haproxy; .ci/run does)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


PING_CHECK: Final = (
    "http-check send meth POST uri /mcp ver HTTP/1.1 hdr Host 127.0.0.1 "
    'hdr Content-Type application/json hdr Accept "application/json, text/event-stream" '
    f"hdr MCP-Protocol-Version {LEGACY} "
    'body \'{"jsonrpc":"2.0","id":0,"method":"ping"}\''
)
"""The health check: an MCP ping (needs no session on a stateless replica), with the
version header a 2025-11-25 client sends (so the fast path answers it)."""
METADATA_CHECK: Final = (
    "http-check send meth GET uri /.well-known/oauth-protected-resource ver HTTP/1.1 "
    "hdr Host 127.0.0.1"
)
"""The health check under OAuth, where a ping needs a token: the resource metadata."""


def haproxy_config(port: int, replicas: list[int], stats: Path, check: str = PING_CHECK) -> str:
    """The balancer: round robin over the replicas, ``check`` as the health check
    every 200 ms (two failures: out; two successes: back), and a request whose
    connection was refused is sent to the other replica."""
    servers = "\n".join(
        f"    server r{n} 127.0.0.1:{replica} check" for n, replica in enumerate(replicas, 1)
    )
    return f"""\
global
    maxconn 512
    stats socket {stats} mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    retries 3
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    default_backend {BACKEND}

backend {BACKEND}
    balance roundrobin
    option httpchk
    {check}
    http-check expect status 200
    default-server inter 200ms fall 2 rise 2
{servers}
"""


def _stats(socket_path: Path, backends: tuple[str, ...] = (BACKEND,)) -> dict[str, dict[str, str]]:
    """haproxy's ``show stat`` for the servers of ``backends``: name -> column -> value."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(socket_path))
        sock.sendall(b"show stat\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    header, *rows = data.decode().strip().splitlines()
    columns = header.lstrip("# ").split(",")
    table = (dict(zip(columns, row.split(","), strict=False)) for row in rows)
    return {
        row["svname"]: row
        for row in table
        if row["pxname"] in backends and row["svname"] not in ("BACKEND", "FRONTEND")
    }


async def _until(condition: Any, limit: float) -> float:
    """Seconds until ``condition()`` holds (polled every 50 ms), at most ``limit``."""
    start = time.monotonic()
    with anyio.fail_after(limit):
        while not condition():  # noqa: ASYNC110 - polls processes outside this loop
            await anyio.sleep(0.05)
    return time.monotonic() - start


class CallFailed(Exception):
    """A call through the balancer got no result (an HTTP error, or a JSON-RPC error)."""


_ENVELOPE: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "writer", "version": "1"},
}


async def _call(
    client: httpx2.AsyncClient,
    tool: str,
    arguments: dict[str, Any],
    version: str = MODERN,
    *,
    path: str = "/mcp/content-store",
    headers: dict[str, str] | None = None,
) -> Any:
    """One stateless ``tools/call`` (no session: any replica may answer it) at ``path``,
    as a client of protocol ``version`` sends it (2026-07-28: the envelope in ``_meta``
    and the routing headers; 2025-11-25: the version header alone); ``headers`` are
    added to the request's (and override them)."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    sent = {"accept": "application/json, text/event-stream", "mcp-protocol-version": version}
    if version == MODERN:
        params["_meta"] = _ENVELOPE
        sent |= {"mcp-method": "tools/call", "mcp-name": tool}
    response = await client.post(
        path,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers=sent | (headers or {}),
    )
    if response.status_code != 200:
        raise CallFailed(f"HTTP {response.status_code}: {response.text[:300]}")
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    message = json.loads(data[-1] if data else response.text)
    result = message.get("result")
    if result is None or result.get("isError"):
        raise CallFailed(str(message))
    return result["structuredContent"]


def _start_replica(
    port: int, database_url: str, data_dir: Path, *servers: str, flags: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """``nativemcp serve content-store`` (and ``servers``) on ``port``, stateless, with
    ``flags`` added."""
    return subprocess.Popen(
        [
            *(venv_script("nativemcp"), "serve", "content-store", *servers),
            *("--transport", "http"),
            *("--stateless", "--port", str(port), "--data-dir", str(data_dir)),
            *("--database-url", database_url),
            *flags,
        ],
        stdout=subprocess.DEVNULL,
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Every process a test starts, stopped (by its pid) after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    stop_all(started)


@pytest.mark.anyio
@pytest.mark.parametrize("auth", ["open", "oauth"])
async def test_a_replica_killed_mid_load_loses_no_acknowledged_write_and_comes_back(
    auth: str, tmp_path: Path, postgres_url: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        flags: list[str] = []
        headers: dict[str, str] = {}
        check = PING_CHECK
        if auth == "oauth":
            # Every replica checks the issuer's tokens itself (its own key cache).
            issuer = await stack.enter_async_context(running_issuer())
            flags = ["--auth-issuer", issuer.url, "--auth-audience", "nativemcp-test"]
            headers = {"authorization": f"Bearer {issuer.token('alice')}"}
            check = METADATA_CHECK
        await _kill_one_mid_load(tmp_path, postgres_url, processes, flags, headers, check)


async def _kill_one_mid_load(
    tmp_path: Path,
    postgres_url: str,
    processes: list[subprocess.Popen[bytes]],
    flags: list[str],
    headers: dict[str, str],
    check: str,
) -> None:
    """The kill test's body: ``flags`` for each replica, ``headers`` on each call, and
    ``check`` as the balancer's health check."""
    haproxy = _haproxy()
    ports = [free_port(), free_port()]
    lb_port = free_port()
    stats = tmp_path / "haproxy.sock"
    replicas = [
        _start_replica(port, postgres_url, tmp_path / f"replica{n}", flags=flags)
        for n, port in enumerate(ports)
    ]
    processes.extend(replicas)
    for port, replica in zip(ports, replicas, strict=True):
        # In a thread: a replica under OAuth asks this loop's issuer before it listens.
        await anyio.to_thread.run_sync(wait_listening, port, replica)
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(lb_port, ports, stats, check))
    balancer = subprocess.Popen(  # noqa: ASYNC220 - started once, before the load
        [haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL
    )
    processes.append(balancer)
    wait_listening(lb_port, balancer)
    await _until(lambda: all(s["status"] == "UP" for s in _stats(stats).values()), 30)

    acked: list[str] = []
    ack_times: list[list[float]] = [[] for _ in range(WRITERS)]
    failed = 0
    stop = anyio.Event()
    limits = httpx2.Limits(max_connections=WRITERS)
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{lb_port}", timeout=30, limits=limits, headers=headers
    ) as client:
        if headers:  # the replicas check tokens: a call without one is refused
            with pytest.raises(CallFailed, match="HTTP 401"):
                await _call(client, "list_stores", {}, headers={"authorization": ""})
        store = await _call(client, "create_store", {"name": "through the balancer"})

        async def writer(number: int) -> None:
            nonlocal failed
            sent = 0
            while not stop.is_set():
                filename = f"w{number}-{sent}.md"
                sent += 1
                added = {"store_id": store["storeId"], "content": filename, "filename": filename}
                try:
                    await _call(client, "add_content", added, (MODERN, LEGACY)[number % 2])
                except (httpx2.HTTPError, CallFailed):
                    failed += 1  # not acknowledged: the writer goes on with the next one
                    await anyio.sleep(0.05)
                    continue
                acked.append(filename)
                ack_times[number].append(time.monotonic())

        async with anyio.create_task_group() as tg:
            for number in range(WRITERS):
                tg.start_soon(writer, number)
            await _until(lambda: len(acked) >= 4 * WRITERS, 60)

            killed_at = time.monotonic()
            replicas[1].kill()
            replicas[1].wait()
            out_after = await _until(lambda: _stats(stats)["r2"]["status"].startswith("DOWN"), 10)
            await _until(lambda: all(t[-1] > killed_at for t in ack_times), 30)
            # Per writer: its first write acknowledged after the kill; the slowest one.
            resumed_after = max(
                min(t for t in times if t > killed_at) - killed_at for times in ack_times
            )
            assert resumed_after <= RESUME_BOUND

            restarted = _start_replica(ports[1], postgres_url, tmp_path / "replica1", flags=flags)
            processes.append(restarted)
            back_after = await _until(lambda: _stats(stats)["r2"]["status"] == "UP", 60)
            served = int(_stats(stats)["r2"]["stot"])
            await _until(lambda: int(_stats(stats)["r2"]["stot"]) > served + WRITERS, 30)
            stop.set()

        listed: set[str] = set()
        offset = 0
        while True:
            page = await _call(
                client,
                "list_content",
                {"store_id": store["storeId"], "offset": offset, "limit": 100},
            )
            listed.update(item["filename"] for item in page["contents"])
            offset += len(page["contents"])
            if not page["hasMore"]:
                break
    lost = set(acked) - listed
    assert len(acked) == len(set(acked))
    assert not lost, f"{len(lost)} acknowledged writes lost: {sorted(lost)[:5]}"
    print(
        f"\n{len(acked)} writes acknowledged, {failed} failed and not acknowledged; "
        f"replica out after {out_after:.2f} s, every writer acknowledged again after "
        f"{resumed_after:.2f} s (bound {RESUME_BOUND:g} s), back in after {back_after:.2f} s"
    )


def _guide_config() -> str:
    """The deployment guide's haproxy configuration, as it is written there."""
    guide = Path(__file__).parents[3] / "docs" / "guides" / "deployment.md"
    return guide.read_text().split("```haproxy\n", 1)[1].split("```", 1)[0]


def test_the_deployment_guides_haproxy_config_is_valid(tmp_path: Path) -> None:
    config = tmp_path / "haproxy.cfg"
    config.write_text(_guide_config())
    checked = subprocess.run(
        [_haproxy(), "-c", "-f", str(config)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def _call_2026(
    client: httpx2.AsyncClient, tool: str, arguments: dict[str, Any], **headers: str
) -> Any:
    """A 2026-07-28 ``tools/call`` at ``/mcp``: full tool name, its method and name in
    the routing headers (``headers`` override them)."""
    name = f"builtin_content-store__{tool}"
    overrides = {key.replace("_", "-"): value for key, value in headers.items()}
    return await _call(client, name, arguments, path="/mcp", headers=overrides)


@pytest.mark.anyio
async def test_the_guides_haproxy_config_sends_one_tools_calls_to_its_own_replicas(
    tmp_path: Path, postgres_url: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    haproxy = _haproxy()
    ports = [free_port() for _ in GUIDE_SERVERS]
    lb_port = free_port()
    stats = tmp_path / "haproxy.sock"
    text = _guide_config().replace("bind :80", f"bind 127.0.0.1:{lb_port}")
    text = text.replace("global\n", f"global\n    stats socket {stats} mode 600 level admin\n", 1)
    for address, port in zip(GUIDE_SERVERS.values(), ports, strict=True):
        assert address in text
        text = text.replace(address, f"127.0.0.1:{port}")
    # The guide's command: with two servers, tools have full names at /mcp.
    replicas = [
        _start_replica(port, postgres_url, tmp_path / f"r{port}", "planning") for port in ports
    ]
    processes.extend(replicas)
    for port, replica in zip(ports, replicas, strict=True):
        wait_listening(port, replica)
    config = tmp_path / "haproxy.cfg"
    config.write_text(text)
    balancer = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL)  # noqa: ASYNC220
    processes.append(balancer)
    wait_listening(lb_port, balancer)
    backends = (BACKEND, "ingest")

    def served() -> dict[str, int]:
        return {name: int(row["stot"]) for name, row in _stats(stats, backends).items()}

    def since(before: dict[str, int]) -> dict[str, int]:
        """Requests each backend's servers took since ``before``."""
        now = served()
        general = sum(now[n] - before[n] for n in ("replica1", "replica2"))
        return {"replicas": general, "ingest": now["ingest1"] - before["ingest1"]}

    await _until(
        lambda: (
            sorted(_stats(stats, backends)) == sorted(GUIDE_SERVERS)
            and all(s["status"] == "UP" for s in _stats(stats, backends).values())
        ),
        30,
    )
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{lb_port}", timeout=30) as client:
        with anyio.fail_after(60):
            before = served()
            store = await _call_2026(client, "create_store", {"name": "routed"})
            for n in range(3):
                added = {"store_id": store["storeId"], "content": f"doc {n}", "filename": f"{n}.md"}
                await _call_2026(client, "add_content", added)
            assert since(before) == {"replicas": 1, "ingest": 3}

            # Without the headers (a 2025-11-25 client) the same call takes the default.
            before = served()
            added = {"store_id": store["storeId"], "content": "old", "filename": "old.md"}
            await _call(client, "add_content", added, LEGACY)
            assert since(before) == {"replicas": 1, "ingest": 0}

            # Headers that name the routed tool for another call: routed, then refused.
            before = served()
            listing = {"store_id": store["storeId"]}
            with pytest.raises(CallFailed, match="HTTP 400"):
                await _call_2026(
                    client, "list_content", listing, mcp_name="builtin_content-store__add_content"
                )
            assert since(before) == {"replicas": 0, "ingest": 1}

            page = await _call_2026(client, "list_content", listing)
    assert sorted(item["filename"] for item in page["contents"]) == [
        "0.md",
        "1.md",
        "2.md",
        "old.md",
    ]
