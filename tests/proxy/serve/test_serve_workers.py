"""`nativemcp serve --workers N`: N server processes accept on one port; one that dies
is replaced; SIGTERM to the supervisor stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from _process import alive, free_port, stop_all, wait_listening
from _scripts import venv_script
from _store_calls import find_the_note, store_a_note
from mcp import Client

from nativemcp.proxy.cli import main

pytestmark = pytest.mark.anyio_backends("asyncio")

TESTS = Path(__file__).parents[2]


async def _serve_pid(url: str) -> int:
    """Which server process answers a new connection (a new client: a new connection)."""
    async with Client(url) as client:
        result = await client.call_tool("serve_pid", {})
    assert result.structured_content is not None
    return int(result.structured_content["result"])


@pytest.mark.anyio
@pytest.mark.real_process
async def test_two_processes_serve_one_port_and_a_killed_one_is_replaced() -> None:
    port = free_port()
    supervisor = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [
            *(venv_script("nativemcp"), "serve", "--transport", "http", "--workers", "2"),
            *("--port", str(port), "_pid_server:server"),
        ],
        cwd=TESTS,  # module:attribute resolves from the current folder
    )
    url = f"http://127.0.0.1:{port}/mcp"
    stopped: list[int] = []
    try:
        wait_listening(port, supervisor)
        with anyio.fail_after(120):
            first = await _serve_pid(url)
            # A stopped process accepts nothing: the next connection must reach another
            # process listening on the same port.
            os.kill(first, signal.SIGSTOP)
            stopped.append(first)
            second = await _serve_pid(url)
            assert second != first
            os.kill(first, signal.SIGCONT)
            stopped.remove(first)

            os.kill(second, signal.SIGKILL)
            # The survivor serves at once; the supervisor starts a third in the dead
            # one's place, which serves once the survivor stops taking connections.
            assert await _serve_pid(url) == first
            os.kill(first, signal.SIGSTOP)
            stopped.append(first)
            third = await _serve_pid(url)
            assert third not in (first, second)
            os.kill(first, signal.SIGCONT)
            stopped.remove(first)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0
        assert not alive(first) and not alive(third)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()


def _server_processes(supervisor: int, count: int) -> list[int]:
    """The supervisor's ``count`` spawned server processes (not its resource tracker),
    once it has started them all (it binds the port first)."""
    deadline = time.monotonic() + 60
    while True:
        children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
        spawned = [
            int(pid)
            for pid in children
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        if len(spawned) == count:
            return spawned
        assert time.monotonic() < deadline, f"{len(spawned)} of {count} processes started"
        time.sleep(0.05)


@pytest.mark.anyio
@pytest.mark.real_process
async def test_the_processes_share_the_built_in_servers_sqlite_state(tmp_path: Path) -> None:
    port = free_port()
    supervisor = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [
            *(venv_script("nativemcp"), "serve", "content-store", "--transport", "http"),
            *("--workers", "2", "--port", str(port), "--data-dir", str(tmp_path)),
        ],
    )
    url = f"http://127.0.0.1:{port}/mcp"
    stopped: list[int] = []
    try:
        wait_listening(port, supervisor)
        one, other = _server_processes(supervisor.pid, 2)
        with anyio.fail_after(120):
            # Written through one process (the other takes no connection while stopped)...
            os.kill(other, signal.SIGSTOP)
            stopped.append(other)
            store_id = await store_a_note(url)
            os.kill(other, signal.SIGCONT)
            stopped.remove(other)
            # ...and found through the other.
            os.kill(one, signal.SIGSTOP)
            stopped.append(one)
            found = await find_the_note(url, store_id)
            os.kill(one, signal.SIGCONT)
            stopped.remove(one)
        assert found == ["a.md"]
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stop_all([supervisor])


def test_workers_needs_http_and_a_positive_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--workers", "2", "planning"]) == 2
    assert capsys.readouterr().err == "nativemcp serve: error: --workers needs --transport http\n"
    assert main(["serve", "--transport", "http", "--workers", "0", "planning"]) == 2
    assert "--workers must be at least 1, not 0" in capsys.readouterr().err
