"""`nativemcp serve` as a process: SIGTERM lets in-flight calls finish; bad SERVER
arguments are named; stateless replicas on one PostgreSQL database share their state."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script
from _store_calls import find_the_note, store_a_note
from mcp import Client

from nativemcp.proxy.cli import main

TESTS = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """This module's tests run on asyncio only."""
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.real_process
async def test_sigterm_lets_an_in_flight_call_finish() -> None:
    port = free_port()
    argv = ["serve", "--transport", "http", "--port", str(port), "--grace", "20"]
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [venv_script("nativemcp"), *argv, "_serve_servers:server"],
        cwd=TESTS,  # module:attribute resolves from the current folder
    )
    try:
        wait_listening(port, process)
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


def _text(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


@pytest.mark.anyio
@pytest.mark.real_process
async def test_stateless_replicas_on_one_database_share_plans_and_stores(
    tmp_path: Path, postgres_url: str
) -> None:
    script = venv_script("nativemcp")
    ports = [free_port(), free_port()]
    replicas = [
        subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
            [
                script,
                "serve",
                "planning",
                "content-store",
                "--transport",
                "http",
                "--stateless",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / f"replica{n}"),
                "--database-url",
                postgres_url,
            ],
        )
        for n, port in enumerate(ports)
    ]
    try:
        for port, process in zip(ports, replicas, strict=True):
            wait_listening(port, process)
        one, other = (f"http://127.0.0.1:{port}/mcp" for port in ports)
        with anyio.fail_after(60):
            async with Client(f"{one}/planning") as client:
                await client.call_tool("create_goal", {"goal": "ship the release"})
            async with Client(f"{other}/planning") as client:
                state = await client.call_tool("get_current_state", {})
            assert "ship the release" in _text(state)

            store_id = await store_a_note(f"{other}/content-store")
            assert await find_the_note(f"{one}/content-store", store_id) == ["a.md"]
    finally:
        stop_all(replicas)
