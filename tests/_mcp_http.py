"""Raw Streamable HTTP for the MCP boundary tests: an initialize request, its headers,
and uvicorn serving an app on a socket bound before it starts."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import uvicorn

INIT: Final[dict[str, Any]] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
"""An initialize request, as a client's first POST sends it."""
HEADERS: Final = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}
"""The headers of a Streamable HTTP POST."""


@asynccontextmanager
async def serving(app: Any, **config: Any) -> AsyncIterator[str]:
    """Run ``app`` with uvicorn on a socket bound before the server starts (no polling);
    yields its base URL. ``config``: more `uvicorn.Config` arguments (default: lifespan on)."""
    async with serving_made(lambda base: app, **config) as base:
        yield base


@asynccontextmanager
async def serving_made(make: Callable[[str], Any], **config: Any) -> AsyncIterator[str]:
    """`serving` the app ``make(base_url)`` returns: for an app that must know its own
    address (an OAuth issuer names itself)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "on", **config}
    server = uvicorn.Server(uvicorn.Config(make(base), **settings))
    # Closed however the block ends (a failing test too): a socket left to the garbage
    # collector is an unraisable ResourceWarning in whichever test runs then.
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            try:
                yield base
            finally:
                server.should_exit = True
