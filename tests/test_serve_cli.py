"""`nativemcp serve` as a process: SIGTERM lets in-flight calls finish; bad SERVER
arguments are named."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from nativemcp.proxy._cli import main

TESTS = Path(__file__).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, "nativemcp serve exited"
            assert time.monotonic() < deadline, "nativemcp serve did not listen in 60 s"
            time.sleep(0.1)


@pytest.mark.anyio
@pytest.mark.real_process
async def test_sigterm_lets_an_in_flight_call_finish() -> None:
    port = _free_port()
    argv = ["serve", "--transport", "http", "--port", str(port), "--grace", "20"]
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [str(Path(sys.executable).parent / "nativemcp"), *argv, "_serve_servers:server"],
        cwd=TESTS,  # module:attribute resolves from the current folder
    )
    try:
        _wait_listening(port, process)
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        outcome: list[object] = []
        with anyio.fail_after(60):
            try:
                async with (
                    Client(f"http://127.0.0.1:{port}/mcp") as client,
                    anyio.create_task_group() as tg,
                ):

                    async def call() -> None:
                        result = await client.call_tool(
                            "slow", {"seconds": 1.5}, progress_callback=on_progress
                        )
                        outcome.append(result.content[0])

                    # Listed first: the client checks results against the listing, and
                    # a draining server takes no new requests.
                    await client.list_tools()
                    tg.start_soon(call)
                    await started.wait()
                    process.send_signal(signal.SIGTERM)
            except* httpx2.ConnectError:
                pass  # the client's goodbye, sent after the server has gone
        assert getattr(outcome[0], "text", None) == "finished"
        # Uvicorn re-raises the signal once it has shut down gracefully.
        assert process.wait(30) in (0, -signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_bad_server_argument_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="'no-such-thing' is neither a built-in"):
        main(["serve", "no-such-thing"])
    with pytest.raises(SystemExit, match=r"no file 'missing\.py'"):
        main(["serve", "missing.py:server"])
