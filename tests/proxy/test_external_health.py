"""An external server's health as the pool reports it agrees with the next call.

A real Streamable HTTP server in its own process, on a socket the test bound: while it
runs, ``ping`` and a call succeed; once it is killed, both fail (the SDK client's
response cache answers a ``tools/list`` from memory, so a ping must not be one).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _external_server import served_in_a_child

from nativemcp.proxy import ServerError, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

TESTS = Path(__file__).parents[1]
RAW = TESTS / "_raw_mcp_server.py"


def _raw(config: dict[str, Any]) -> dict[str, Any]:
    """A hand-written server of the 2025 protocols (``initialize``, ``ping``)."""
    return {"command": sys.executable, "args": [str(RAW), json.dumps(config)]}


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The test server over Streamable HTTP in a child process: (its URL, the process)."""
    with served_in_a_child(tmp_path) as served:
        yield served


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


async def test_the_pool_introduces_itself_to_a_server_as_nativemcp_and_its_version(
    tmp_path: Path,
) -> None:
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    async with WorkerPool(mcp_servers={"ext": entry}) as pool:
        response = await pool.call_tool("ext__client-info", {})
    assert response.result is not None
    assert response.result.structured_content == {
        "name": "nativemcp",
        "version": importlib.metadata.version("nativemcp"),
    }


async def test_ping_sends_mcp_ping_to_a_server_whose_protocol_has_it(tmp_path: Path) -> None:
    methods = tmp_path / "methods"
    async with WorkerPool(mcp_servers={"raw": _raw({"methods_file": str(methods)})}) as pool:
        with anyio.fail_after(20):
            await pool.server("raw").ping()
    sent = methods.read_text().split()
    assert sent[-1] == "ping" and sent.count("tools/list") == 1, sent


async def test_a_tool_list_that_never_ends_is_cut_at_1000_pages_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="nativemcp.external"):
        async with WorkerPool(mcp_servers={"raw": _raw({"endless_tools": True})}) as pool:
            names = {tool.name for tool in await pool.list_tools()}
    assert len(names) == 1000 and "raw__t999" in names and "raw__t1000" not in names
    (warning,) = [r.getMessage() for r in caplog.records if "pages" in r.getMessage()]
    assert "MCP server 'raw'" in warning and "more than 1000 pages" in warning
