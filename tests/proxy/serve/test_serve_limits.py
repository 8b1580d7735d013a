"""What `nativemcp serve` over HTTP lets one client hold: slow requests are cut off,
sessions end when idle and are capped per client, a draining server answers 503, and
serving beyond loopback needs a token (real uvicorn, real sockets, worker processes)."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import h11
import httpx2
import pytest
import uvicorn
from _mcp_http import HEADERS as _HEADERS
from _mcp_http import INIT as _INIT
from _mcp_http import serving
from _process import free_port, stop
from _scripts import venv_script
from _task_client import Rpc
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.cli import main
from nativemcp.proxy.cli._serve import allowed_hosts
from nativemcp.proxy.serve import deadline_protocol
from nativemcp.proxy.serve._defaults import HTTP_PROTOCOLS, HttpProtocol
from nativemcp.proxy.serve._edge import McpApp
from nativemcp.proxy.serve._transports import Drain

# uvicorn runs on asyncio only.
pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

TESTS = Path(__file__).parents[2]


async def _echo_body(scope: Scope, receive: Receive, send: Send) -> None:
    """A plain ASGI app: reads the whole body and answers its length."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


async def _echo_header(scope: Scope, receive: Receive, send: Send) -> None:
    """A plain ASGI app: answers the value of its request's ``x-echo`` header."""
    if scope["type"] != "http":
        return
    value = dict(scope["headers"]).get(b"x-echo", b"(none)")
    length = [(b"content-length", str(len(value)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": length})
    await send({"type": "http.response.body", "body": value})


async def _read_to_close(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while True:
        try:
            received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return received


@asynccontextmanager
async def _deadlines(
    header_timeout: float, body_timeout: float, http: HttpProtocol
) -> AsyncIterator[int]:
    """`_echo_body` under uvicorn's ``http`` protocol with these read deadlines; its port."""
    protocol = deadline_protocol(
        header_timeout=header_timeout, body_timeout=body_timeout, http=http
    )
    async with serving(_echo_body, lifespan="off", http=protocol) as base:
        yield int(base.rsplit(":", 1)[1])


@pytest.mark.real_process
@pytest.mark.parametrize("http", HTTP_PROTOCOLS)
async def test_slow_headers_get_408_and_a_slow_body_is_cut_off_while_others_are_served(
    http: HttpProtocol,
) -> None:
    async with _deadlines(header_timeout=0.5, body_timeout=0.5, http=http) as port:
        with anyio.fail_after(10):
            slow_headers = await anyio.connect_tcp("127.0.0.1", port)
            slow_body = await anyio.connect_tcp("127.0.0.1", port)
            async with slow_headers, slow_body:
                await slow_headers.send(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no end
                await slow_body.send(
                    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 100\r\n\r\n0123"
                )
                # Another client is served meanwhile, on a kept-alive connection, twice.
                async with httpx2.AsyncClient() as client:
                    for _ in range(2):
                        reply = await client.post(f"http://127.0.0.1:{port}/", content=b"x" * 1000)
                        assert reply.text == "1000"
                answer = await _read_to_close(slow_headers)
                assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
                assert b"headers took too long" in answer
                assert await _read_to_close(slow_body) == b""


@pytest.mark.real_process
@pytest.mark.parametrize("http", HTTP_PROTOCOLS)
async def test_a_kept_alive_connection_gets_a_new_header_deadline_for_each_request(
    http: HttpProtocol,
) -> None:
    async with _deadlines(header_timeout=0.5, body_timeout=30, http=http) as port:
        with anyio.fail_after(10):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            async with stream:
                await stream.send(
                    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 3\r\n\r\nabc"
                )
                # The answer, read whole with h11 (uvicorn sends it chunked).
                reader = h11.Connection(h11.CLIENT)
                reader.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
                events: list[object] = []
                while not any(isinstance(event, h11.EndOfMessage) for event in events):
                    event = reader.next_event()
                    if event is h11.NEED_DATA:
                        reader.receive_data(await stream.receive())
                    else:
                        events.append(event)
                assert isinstance(events[0], h11.Response) and events[0].status_code == 200
                assert b"".join(e.data for e in events if isinstance(e, h11.Data)) == b"3"
                # The next request on the same connection starts and stalls: its own
                # deadline ends it (uvicorn's keep-alive timer stops once bytes arrive).
                await stream.send(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                answer = await _read_to_close(stream)
                assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


@pytest.mark.real_process
@pytest.mark.parametrize("http", HTTP_PROTOCOLS)
async def test_the_served_app_reads_header_values_without_the_whitespace_around(
    http: HttpProtocol,
) -> None:
    # RFC 9110 §5.5; the alpha conformance suite sends `Mcp-Name` with spaces around.
    # httptools keeps them, h11 drops them: serve's app drops them under either.
    protocol = deadline_protocol(http=http)
    async with serving(McpApp(_echo_header), lifespan="off", http=protocol) as base:
        with anyio.fail_after(10):
            stream = await anyio.connect_tcp("127.0.0.1", int(base.rsplit(":", 1)[1]))
            async with stream:
                await stream.send(
                    b"POST /mcp HTTP/1.1\r\nHost: x\r\nx-echo: \t say  hello \t\r\n"
                    b"content-length: 0\r\nconnection: close\r\n\r\n"
                )
                answer = await _read_to_close(stream)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"\r\n\r\nsay  hello")


async def test_the_uvicorn_internals_the_deadlines_use_are_there() -> None:
    """`_deadlines` subclasses uvicorn's h11 protocol (not its public API): this fails
    when what it relies on changes, before a slow client finds out."""
    loop = asyncio.get_running_loop()
    assert list(inspect.signature(H11Protocol.__init__).parameters)[:5] == [
        "self",
        "config",
        "server_state",
        "app_state",
        "_loop",
    ]
    for hook in ("connection_made", "connection_lost", "data_received", "on_response_complete"):
        assert hook in vars(H11Protocol), hook
    config = uvicorn.Config(_echo_body, lifespan="off")
    # Typed as any asyncio protocol: uvicorn's constructor is what is checked here.
    factory: Any = deadline_protocol(header_timeout=5, body_timeout=5, http="h11")
    protocol = factory(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    assert issubclass(type(protocol), H11Protocol) and protocol.loop is loop
    assert isinstance(protocol.conn, h11.Connection) and protocol.conn.their_state is h11.IDLE
    ours, theirs = socket.socketpair()
    with theirs:
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
        try:
            assert protocol.transport is transport
            assert protocol._deadline is not None  # armed on connection_made
            protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers not done
            assert protocol.conn.their_state is h11.IDLE and protocol._deadline is not None
        finally:
            transport.close()
            await anyio.wait_all_tasks_blocked()


async def test_the_uvicorn_httptools_internals_the_deadlines_use_are_there() -> None:
    """The httptools protocol's deadlines (the default) rely on uvicorn's constructor and
    the parser's callbacks: this fails when they change."""
    loop = asyncio.get_running_loop()
    assert list(inspect.signature(HttpToolsProtocol.__init__).parameters)[:5] == [
        "self",
        "config",
        "server_state",
        "app_state",
        "_loop",
    ]
    hooks = ("connection_made", "connection_lost", "data_received")
    for hook in (*hooks, "on_headers_complete", "on_message_complete"):
        assert hook in vars(HttpToolsProtocol), hook
    config = uvicorn.Config(_echo_body, lifespan="off")
    factory: Any = deadline_protocol(header_timeout=5, body_timeout=5)  # httptools: default
    protocol = factory(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    assert issubclass(type(protocol), HttpToolsProtocol) and protocol.loop is loop
    ours, theirs = socket.socketpair()
    with theirs:
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
        try:
            assert protocol.transport is transport
            header_deadline = protocol._deadline
            assert header_deadline is not None  # armed on connection_made
            protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 3\r\n\r\n")
            # The headers are in: the body's deadline replaced theirs.
            assert protocol._deadline is not None and protocol._deadline is not header_deadline
            protocol.data_received(b"abc")
            assert protocol._deadline is None  # read whole: nothing more to wait for
        finally:
            transport.close()
            await anyio.wait_all_tasks_blocked()


def test_the_deadlines_must_be_positive_and_on_a_known_protocol() -> None:
    with pytest.raises(ValueError, match="must be positive seconds"):
        deadline_protocol(header_timeout=0)
    with pytest.raises(ValueError, match="http must be one of httptools, h11, not 'h2'"):
        deadline_protocol(http="h2")  # type: ignore[arg-type]


@pytest.mark.real_process
async def test_one_client_holds_at_most_its_share_of_sessions() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    app = http_app(pool, sessions_per_client=2)
    async with serving(app) as base, httpx2.AsyncClient() as http:
        url = f"{base}/mcp"
        with anyio.fail_after(60):
            first = await http.post(url, json=_INIT, headers=_HEADERS)
            second = await http.post(f"{url}/shapes", json=_INIT, headers=_HEADERS)
            assert first.status_code == second.status_code == 200
            refused = await http.post(url, json=_INIT, headers=_HEADERS)
            assert refused.status_code == 429
            assert "holds 2 open sessions" in refused.json()["error"]["message"]
            # Ending one (DELETE) makes room at once.
            session = {**_HEADERS, "mcp-session-id": first.headers["mcp-session-id"]}
            assert (await http.delete(url, headers=session)).status_code < 400
            assert (await http.post(url, json=_INIT, headers=_HEADERS)).status_code == 200


@pytest.mark.real_process
async def test_2026_requests_hold_no_session_so_they_neither_count_nor_are_refused() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    app = http_app(pool, sessions_per_client=3)
    async with serving(app) as base, httpx2.AsyncClient(timeout=30) as http:
        rpc = Rpc(http, f"{base}/mcp")
        call = {"name": "slow", "arguments": {"seconds": 0.5}}
        answers: list[dict[str, Any]] = []

        async def slow() -> None:
            answers.append(await rpc("tools/call", call, declare=False))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:  # six at once, none a session
                for _ in range(6):
                    group.start_soon(slow)
            held = [await http.post(f"{base}/mcp", json=_INIT, headers=_HEADERS) for _ in "abc"]
            # At its limit of 2025-11-25 sessions, the client's 2026-07-28 calls still run.
            after = await rpc("tools/call", {"name": "whoami", "arguments": {}}, declare=False)
            refused = await http.post(f"{base}/mcp", json=_INIT, headers=_HEADERS)
    assert [answer["result"]["content"][0]["text"] for answer in answers] == ["finished"] * 6
    assert [reply.status_code for reply in held] == [200] * 3
    assert "result" in after, after
    assert refused.status_code == 429


@pytest.mark.real_process
async def test_an_abandoned_session_ends_after_the_idle_timeout_and_frees_its_place() -> None:
    pool = WorkerPool(["_serve_servers:server"], timeout=20)
    app = http_app(pool, sessions_per_client=1, session_idle_timeout=0.5)
    async with serving(app) as base, httpx2.AsyncClient() as http:
        url = f"{base}/mcp"
        with anyio.fail_after(60):
            abandoned = await http.post(url, json=_INIT, headers=_HEADERS)
            assert abandoned.status_code == 200
            # Polled by opening, which touches no existing session (a request to the
            # abandoned one would keep it alive).
            while (await http.post(url, json=_INIT, headers=_HEADERS)).status_code != 200:  # noqa: ASYNC110
                await anyio.sleep(0.1)
            gone = {**_HEADERS, "mcp-session-id": abandoned.headers["mcp-session-id"]}
            assert (await http.delete(url, headers=gone)).status_code == 404


async def test_a_request_during_the_drain_gets_503_and_the_drain_waits_for_the_running_one() -> (
    None
):
    release = anyio.Event()
    entered = anyio.Event()

    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        entered.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"finished"})

    drain = Drain(slow)
    transport = httpx2.ASGITransport(app=drain)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                answers: list[httpx2.Response] = []
                drained: list[bool] = []

                async def running() -> None:
                    answers.append(await http.post("/mcp"))

                async def stop() -> None:
                    drained.append(await drain.wait_idle(grace=30))

                tg.start_soon(running)
                await entered.wait()
                tg.start_soon(stop)
                await anyio.wait_all_tasks_blocked()
                late = await http.post("/mcp")
                assert late.status_code == 503
                assert late.headers["retry-after"] == "1"
                assert drained == []  # still waiting for the running call
                release.set()
            assert answers[0].text == "finished"
            assert drained == [True]


def test_serving_beyond_loopback_without_a_token_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NATIVEMCP_TOKEN", raising=False)
    for host in ("0.0.0.0", "192.168.1.20", "::", "example.com"):
        # What was typed is refused: exit status 2, as the CLI page says.
        assert main(["serve", "workspace", "--transport", "http", "--host", host]) == 2
        message = capsys.readouterr().err
        assert message.count("\n") == 1
        assert message.startswith(
            f"nativemcp serve: error: --host {host} is reachable from the network and there "
            "is no token"
        )
        assert "--token or $NATIVEMCP_TOKEN" in message


def test_the_address_bound_is_an_allowed_host_and_every_address_is_none() -> None:
    assert allowed_hosts("192.168.1.20", ["mcp.example.com:*"]) == [
        "mcp.example.com:*",
        "192.168.1.20:*",
    ]
    assert allowed_hosts("fe80::1", []) == ["[fe80::1]:*"]
    assert allowed_hosts("[fe80::1]", []) == ["[fe80::1]:*"]
    assert allowed_hosts("127.0.0.2", []) == ["127.0.0.2:*"]
    assert allowed_hosts("mcp.example.com", []) == ["mcp.example.com:*"]
    assert allowed_hosts("0.0.0.0", []) == []
    assert allowed_hosts("::", ["a:*"]) == ["a:*"]


async def test_a_server_bound_to_one_address_answers_requests_that_name_it() -> None:
    pool = WorkerPool(["_serve_servers:server"], in_process=["shapes"], timeout=20)
    app = http_app(pool, token="s3cret", allowed_hosts=allowed_hosts("192.168.1.20", []))
    headers = {**_HEADERS, "authorization": "Bearer s3cret"}
    async with serving(app) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            for host, status in [
                ("192.168.1.20:8000", 200),
                ("192.168.1.200:8000", 421),
                ("192.168.1.2:8000", 421),
                ("192.168.1.20.evil.test:8000", 421),
            ]:
                reply = await http.post(
                    f"{base}/mcp", json=_INIT, headers={**headers, "host": host}
                )
                assert reply.status_code == status, host


@contextmanager
def _serving_everywhere(*flags: str) -> Iterator[IO[bytes]]:
    """`nativemcp serve --host 0.0.0.0 FLAGS...` (no $NATIVEMCP_TOKEN); its stderr."""
    env = {key: value for key, value in os.environ.items() if key != "NATIVEMCP_TOKEN"}
    command = [venv_script("nativemcp"), "serve", "_serve_servers:server", "--transport"]
    process = subprocess.Popen(
        [*command, "http", "--host", "0.0.0.0", "--port", str(free_port()), *flags],
        cwd=TESTS,
        env=env,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        yield process.stderr
    finally:
        stop(process, signal.SIGTERM)
        process.stderr.close()


@pytest.mark.real_process
def test_every_address_with_a_token_says_at_start_which_flag_lets_clients_in() -> None:
    with _serving_everywhere("--token", "s3cret") as stderr:
        first = stderr.readline().decode()
        assert "--host 0.0.0.0 listens on every address" in first
        assert "gets 421" in first and "add --allow-host NAME:*" in first
        assert "nativemcp serving MCP at" in stderr.readline().decode()


@pytest.mark.real_process
def test_the_explicit_opt_out_starts_and_warns_loudly() -> None:
    with _serving_everywhere("--unsafe-no-token") as stderr:
        first = stderr.readline().decode()
        assert "--unsafe-no-token: serving on 0.0.0.0 WITHOUT A TOKEN" in first
