"""The official MCP Python SDK as the client of `nativemcp serve`: over stdio, and over
Streamable HTTP with a bearer token.

Run it:  .venv/bin/python examples/sdk_client.py
It starts `nativemcp serve planning` twice (the SDK starts it over stdio; this script
starts it over HTTP, with a random token, on a free port), calls a tool each time, and
shows that a request without the token is refused.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
from anyio.abc import ByteReceiveStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

# The `nativemcp` script of this Python's venv (beside it), else the one on PATH.
_BESIDE = Path(sys.executable).with_name("nativemcp")
NATIVEMCP = str(_BESIDE) if _BESIDE.exists() else shutil.which("nativemcp") or "nativemcp"


def first_line(result: CallToolResult) -> str:
    """The first line of the text a model reads from a tool result."""
    return str(getattr(result.content[0], "text", "")).splitlines()[0]


async def over_stdio(data_dir: str) -> None:
    """The SDK starts the server itself and speaks MCP on its stdin and stdout."""
    server = StdioServerParameters(
        command=NATIVEMCP, args=["serve", "planning", "--data-dir", data_dir]
    )
    async with Client(server) as client:
        # One server served alone: its tools keep their own names (served beside
        # others, a built-in's are builtin_planning__create_goal and so on).
        tools = [tool.name for tool in (await client.list_tools()).tools]
        print(f"stdio: {len(tools)} tools: {', '.join(tools)}")
        result = await client.call_tool("create_goal", {"goal": "ship v1"})
        print("stdio: the model reads:", first_line(result))
        print("stdio: code gets the goal:", (result.structured_content or {})["goal"])


async def announced_url(stderr: BufferedByteReceiveStream) -> str:
    """The URL `nativemcp serve` prints once it listens and its servers have started:
    ``nativemcp serving MCP at http://127.0.0.1:PORT/mcp``.

    Raises:
        RuntimeError: the server stopped first (its error line says why).
    """
    while True:
        try:
            line = (await stderr.receive_until(b"\n", 65536)).decode()
        except anyio.IncompleteRead:
            raise RuntimeError("nativemcp serve stopped before it announced its address") from None
        if "serving MCP at " in line:
            return line.split("serving MCP at ", 1)[1].split()[0]
        print(line, file=sys.stderr)  # a warning before it: pass it on


async def drain(stderr: ByteReceiveStream) -> None:
    """Read the server's log lines to the end, so its pipe never fills."""
    async for chunk in stderr:
        sys.stderr.write(chunk.decode(errors="replace"))


async def over_http(data_dir: str) -> None:
    """A server on a free port that requires `Authorization: Bearer <token>`."""
    token = secrets.token_urlsafe(24)
    command = [NATIVEMCP, "serve", "planning", "--transport", "http", "--port", "0"]
    # The token goes in the environment, not the command line (where `ps` shows it).
    env = {**os.environ, "NATIVEMCP_TOKEN": token}
    async with await anyio.open_process(
        [*command, "--data-dir", data_dir], env=env, stdout=subprocess.DEVNULL
    ) as process:
        assert process.stderr is not None
        stderr = BufferedByteReceiveStream(process.stderr)
        with anyio.fail_after(60):
            url = await announced_url(stderr)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(drain, stderr)
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool("add_todo", {"name": "tag it"})
                print("http: the model reads:", first_line(result))
            async with httpx2.AsyncClient() as anonymous:
                refused = await anonymous.post(url, json={})
                print(f"http: without the token: {refused.status_code}")
            # SIGTERM: calls in flight finish, the servers close, the exit status is 0.
            process.send_signal(signal.SIGTERM)
            print(f"http: server stopped, exit status {await process.wait()}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        await over_stdio(data_dir)
        await over_http(data_dir)


if __name__ == "__main__":
    anyio.run(main)
