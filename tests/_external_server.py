"""An official-SDK `MCPServer` the external-server tests run over stdio and over HTTP.

``python tests/_external_server.py MARKER_DIR`` serves stdio, and with ``--fd FD``
Streamable HTTP on that listening socket; the other HTTP tests mount `make_server`
under uvicorn. ``MARKER_DIR`` receives a file per cancelled call, so a
test can see that ``notifications/cancelled`` reached the server.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import anyio
import mcp_types
import msgspec
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel

from nativemcp.protocol import LOG_LEVELS, response_to_sdk, structured_response

#: A module no test imports; a `_meta` type reference naming it must never be followed.
UNTRUSTED_MODULE = "tests_untrusted_marker_module"


class Stamp(msgspec.Struct):
    """A value with a date: JSON carries it as text, the exact type as a datetime."""

    label: str
    at: dt.datetime


STAMPS = [
    Stamp("first", dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)),
    Stamp("second", dt.datetime(2026, 11, 26, 8, 30, tzinfo=dt.UTC)),
]


class Sum(BaseModel):
    """A structured result."""

    total: int
    operands: list[int]


class Reply(BaseModel):
    """What `ask` asks its client for."""

    text: str


_arrived: dict[str, set[str]] = {}
_all_arrived: dict[str, anyio.Event] = {}


async def _question(key: str, group: str, size: int) -> Elicit[Reply]:
    """Ask for `key`, once `size` calls of `group` are all in flight (first round only):
    their questions then reach the client while every one of them is pending."""
    arrived = _arrived.setdefault(group, set())
    event = _all_arrived.setdefault(group, anyio.Event())
    if key not in arrived:
        arrived.add(key)
        if len(arrived) >= size:
            event.set()
        with anyio.fail_after(10):
            await event.wait()
    return Elicit(f"a reply for {key}", Reply)


def make_server(marker_dir: str | None = None, *, cache_tools: bool = False) -> MCPServer:
    """The test server: sums, a dashed name, a hang, progress and log notifications.
    ``cache_tools``: its tool list may be cached by a client for an hour."""
    hints: dict[CacheableMethod, CacheHint] | None = (
        {"tools/list": CacheHint(ttl_ms=3_600_000, scope="public")} if cache_tools else None
    )
    server = MCPServer(
        "external-test", instructions="A test server for nativemcp.", cache_hints=hints
    )

    @server.tool(name="get-sum")
    def get_sum(a: int, b: int) -> Sum:
        """Add two numbers."""
        return Sum(total=a + b, operands=[a, b])

    @server.tool(meta={"io.github.nativemcp/returnType": {"ref": f"{UNTRUSTED_MODULE}:Thing"}})
    def typed_meta() -> dict[str, int]:
        """A tool whose _meta names a module: the proxy must not import it."""
        return {"value": 1}

    @server.tool()
    def stamps() -> mcp_types.CallToolResult:
        """A nativemcp response at the MCP boundary: the list travels in
        _meta["io.github.nativemcp/structuredResult"]."""
        return response_to_sdk(structured_response("two stamps", STAMPS))

    @server.tool(name="add-forecast")
    async def add_forecast(ctx: Context) -> str:
        """Add a tool, then say that the tools changed (as a subscription event)."""

        def forecast(city: str) -> str:
            """Tomorrow's weather for a city."""
            return f"sunny in {city}"

        server.add_tool(forecast)
        await ctx.notify_tools_changed()
        return "added"

    @server.tool()
    def echo(text: str) -> str:
        """Echo text back (text only, no structured content)."""
        return text

    @server.tool()
    async def ask(
        key: str, group: str, size: int, reply: Annotated[Reply, Resolve(_question)]
    ) -> str:
        """Ask the client (elicitation) once `size` calls of `group` are in flight;
        answers ``key: reply``."""
        return f"{key}: {reply.text}"

    @server.tool(name="client-info")
    def client_info(ctx: Context) -> dict[str, str]:
        """The name and version the client introduced itself with."""
        params = ctx.session.client_params
        if params is None:
            return {}
        return {"name": params.client_info.name, "version": params.client_info.version}

    @server.tool()
    def fail(message: str) -> str:
        """Fail with a tool error."""
        raise ValueError(message)

    @server.tool()
    async def hang(key: str) -> str:
        """Sleep until cancelled; leaves a marker file when cancelled."""
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            if marker_dir is not None:
                # Synchronous on purpose: an await here would be cancelled at once.
                Path(marker_dir, f"cancelled-{key}").write_text("cancelled")  # noqa: ASYNC240
            raise
        return "never"

    @server.tool()
    async def chatty(steps: int, ctx: Context) -> str:
        """Report progress and log a line per step."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
            await ctx.info(f"did step {step + 1}")
        return "done"

    @server.tool(name="log-every-level")
    async def log_every_level(ctx: Context) -> str:
        """Log one message at each MCP log level, least severe first."""
        for level in LOG_LEVELS:
            await ctx.log(level, f"a {level} message")
        return "logged"

    return server


@contextlib.contextmanager
def served_in_a_child(marker_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """This server over Streamable HTTP in a child process, on a socket bound here (no
    port to poll): its URL and the process, killed on the way out."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        child = subprocess.Popen(
            [sys.executable, __file__, str(marker_dir), "--fd", str(sock.fileno())],
            pass_fds=[sock.fileno()],
        )
    # Only the child holds the socket now: once it dies, connecting is refused.
    try:
        yield f"http://127.0.0.1:{port}/mcp", child
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[2] == "--fd":
        # Streamable HTTP on a socket the test bound and listens on: no port to poll.
        import uvicorn

        app = make_server(sys.argv[1], cache_tools=True).streamable_http_app()
        uvicorn.run(app, fd=int(sys.argv[3]), log_level="warning", lifespan="on")
    else:
        make_server(sys.argv[1] if len(sys.argv) > 1 else None).run("stdio")
