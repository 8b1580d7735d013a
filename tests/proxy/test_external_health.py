"""An external server's health as the pool reports it agrees with the next call.

A real Streamable HTTP server in its own process, on a socket the test bound: while it
runs, ``ping`` and a call succeed; once it is killed, both fail (the SDK client's
response cache answers a ``tools/list`` from memory, so a ping must not be one).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nativemcp.proxy import ServerError, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

TESTS = Path(__file__).parents[1]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The test server over Streamable HTTP in a child process: (its URL, the process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        script = str(TESTS / "_external_server.py")
        child = subprocess.Popen(
            [sys.executable, script, str(tmp_path), "--fd", str(sock.fileno())],
            pass_fds=[sock.fileno()],
        )
    # Only the child holds the socket now: once it dies, connecting is refused.
    try:
        yield f"http://127.0.0.1:{port}/mcp", child
    finally:
        child.kill()
        child.wait()


async def test_ping_fails_once_an_http_server_is_killed_as_the_next_call_does(
    http_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, child = http_server
    async with WorkerPool(mcp_servers={"remote": {"url": url}}, timeout=10) as pool:
        remote: Any = pool.server("remote")
        with anyio.fail_after(20):
            await remote.ping()
            assert (await remote.get_sum(a=1, b=2)).total == 3
            os.kill(child.pid, signal.SIGKILL)
            await anyio.to_thread.run_sync(child.wait)
            with pytest.raises(ServerError):
                await remote.ping()
            with pytest.raises(ServerError):
                await pool.call_tool("remote__get-sum", {"a": 1, "b": 2})
