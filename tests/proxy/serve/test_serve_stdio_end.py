"""``nativemcp serve`` over stdio ends with its host, and takes its own stdio servers
with it.

The official SDK's stdio client ends a server by closing its stdin, waiting 2 s, then
SIGTERM to its process group (then SIGKILL). Serve gives each of its stdio servers the
same steps, and npm's server-everything does not exit on its closed stdin: serve was
still in that grace when the host's SIGTERM ended it, and server-everything, in a
session of its own, lived on. Here the host is the SDK's client, for real.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from _node import everything_server
from _process import alive
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


def _marked(marker: str) -> list[int]:
    """The processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def test_a_stdio_server_that_ignores_its_closed_stdin_does_not_outlive_serve(
    tmp_path: Path,
) -> None:
    marker = f"NATIVEMCP_TEST_MARK=end-{uuid.uuid4().hex}"
    name, value = marker.split("=")
    entry = everything_server()
    entry["env"] = {**entry["env"], name: value}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": entry}}), encoding="utf-8")
    serve = StdioServerParameters(
        command=sys.executable,
        args=[
            # A built-in worker beside it, as most serves have: its close comes first,
            # so serve's grace for server-everything runs past the host's 2 s.
            *("-m", "nativemcp.proxy.cli", "serve", "workspace", "--mcp-config", str(config)),
            *("--data-dir", str(tmp_path / "data"), "--root", str(tmp_path)),
        ],
    )
    try:
        with anyio.fail_after(60):
            async with Client(serve, mode="legacy") as client:
                assert (await client.list_tools()).tools
                assert len(_marked(marker)) == 1  # server-everything, serve's child
        # The client has ended serve (stdin closed, then SIGTERM to its group).
        with anyio.move_on_after(10):
            while _marked(marker):  # noqa: ASYNC110 - another process's exit is no event
                await anyio.sleep(0.05)
        assert _marked(marker) == []
    finally:
        for pid in _marked(marker):  # a failure leaves nothing running
            os.kill(pid, 9)
