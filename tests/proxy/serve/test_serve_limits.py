"""What `nativemcp serve` over HTTP lets one client hold: slow requests are cut off,
sessions end when idle and are capped per client, a draining server answers 503, and
serving beyond loopback needs a token (real uvicorn, real sockets, worker processes)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from _mcp_http import HEADERS as _HEADERS
from _mcp_http import INIT as _INIT
from _mcp_http import serving
from _process import stop
from _scripts import venv_script
from starlette.types import Receive, Scope, Send

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.cli import main
from nativemcp.proxy.serve import deadline_protocol
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


async def _read_to_close(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while True:
        try:
            received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return received


@pytest.mark.real_process
async def test_slow_headers_get_408_and_a_slow_body_is_cut_off_while_others_are_served() -> None:
    protocol = deadline_protocol(header_timeout=0.5, body_timeout=0.5)
    async with serving(_echo_body, lifespan="off", http=protocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            slow_headers = await anyio.connect_tcp("127.0.0.1", port)
            slow_body = await anyio.connect_tcp("127.0.0.1", port)
            async with slow_headers, slow_body:
                await slow_headers.send(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no end
                await slow_body.send(
                    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 100\r\n\r\n0123"
                )
                # Another client is served meanwhile, on a kept-alive connection, twice.
                async with httpx2.AsyncClient() as http:
                    for _ in range(2):
                        reply = await http.post(f"http://127.0.0.1:{port}/", content=b"x" * 1000)
                        assert reply.text == "1000"
                answer = await _read_to_close(slow_headers)
                assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
                assert b"headers took too long" in answer
                assert await _read_to_close(slow_body) == b""


def test_the_deadlines_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive seconds"):
        deadline_protocol(header_timeout=0)


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


@pytest.mark.real_process
def test_the_explicit_opt_out_starts_and_warns_loudly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if key != "NATIVEMCP_TOKEN"}
    command = [venv_script("nativemcp"), "serve", "_serve_servers:server", "--transport"]
    process = subprocess.Popen(
        [*command, "http", "--host", "0.0.0.0", "--port", str(port), "--unsafe-no-token"],
        cwd=TESTS,
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        assert "--unsafe-no-token: serving on 0.0.0.0 WITHOUT A TOKEN" in first
    finally:
        stop(process, signal.SIGTERM)
        assert process.stderr is not None
        process.stderr.close()
