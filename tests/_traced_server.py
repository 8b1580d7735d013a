"""A server whose calls the telemetry tests trace; a module so worker processes import it."""

from __future__ import annotations

import logging
import os

import anyio
import anyio.lowlevel
from opentelemetry import trace

from nativemcp.protocol import ToolError
from nativemcp.workers import Context, Server

server = Server("traced", description="Tools the telemetry tests trace")


@server.tool(inline=True)
def add(a: int, b: int) -> int:
    """The sum (runs on the worker's reading thread)."""
    return a + b


@server.tool
def add_threaded(a: int, b: int) -> int:
    """The sum (runs on a tool thread of its own)."""
    return a + b


@server.tool
async def nested(label: str) -> str:
    """Makes a span of its own, which must nest under the call's server span."""
    with trace.get_tracer("tests.tool").start_as_current_span(f"inner {label}"):
        await anyio.lowlevel.checkpoint()
    return label


@server.tool
async def step(ctx: Context) -> str:
    """Reports progress once (its caller looks at the pool while the call is in flight)."""
    await ctx.report_progress(1, 1)
    return "stepped"


@server.tool
def noisy(word: str) -> str:
    """Logs a warning while it runs (on a tool thread)."""
    logging.getLogger("tests.traced").warning("noisy says %s", word)
    return word


@server.tool
def refuse(store_id: str) -> int:
    """Answers with a tool error (isError)."""
    raise ToolError(f"store {store_id!r} not found")


@server.tool
async def hang(ctx: Context) -> str:
    """Waits until cancelled."""
    await anyio.sleep_forever()
    return "never"


@server.tool
def crash() -> int:
    """The worker process exits at once."""
    os._exit(3)


@server.resource("note://{name}")
def note(name: str) -> str:
    """A note."""
    return f"note {name}"


@server.prompt()
def greet(who: str) -> str:
    """A greeting."""
    return f"hello {who}"
