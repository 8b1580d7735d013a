"""The 20-item list tool of bench.roundtrip as an official-SDK ``MCPServer``.

Run as ``python -m bench._roundtrip_sdk`` it serves over stdio; with ``--http PORT``,
over Streamable HTTP at ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from bench._roundtrip_servers import ITEMS, make_items


class SdkItem(BaseModel):
    """The same item as a pydantic model, for the official SDK server."""

    fileName: str
    size: int
    mimeType: str
    added: dt.datetime


def sdk_server() -> object:
    """The official SDK's MCPServer with the same tool."""
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("bench")

    @app.tool()
    def list_items(count: int = ITEMS) -> list[SdkItem]:
        """List ``count`` items."""
        return [
            SdkItem(fileName=i.file_name, size=i.size, mimeType=i.mime_type, added=i.added)
            for i in make_items(count)
        ]

    return app


def fastmcp_server() -> Any:
    """FastMCP's server with the same tool (needs the bench extra)."""
    from fastmcp import FastMCP

    app = FastMCP("bench")

    def list_items(count: int = ITEMS) -> list[SdkItem]:
        """List ``count`` items."""
        return [
            SdkItem(fileName=i.file_name, size=i.size, mimeType=i.mime_type, added=i.added)
            for i in make_items(count)
        ]

    # Registered by a call, not as a decorator: where CI type-checks, fastmcp (the bench
    # extra) is not installed, and mypy --strict refuses an untyped decorator.
    app.tool(list_items)
    return app


def _main(argv: Sequence[str] | None = None) -> None:
    """Serve the tool over stdio, or over Streamable HTTP with ``--http PORT``."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else "bench._roundtrip_sdk"
    )
    parser.add_argument(
        "--http",
        type=int,
        default=None,
        metavar="PORT",
        help="serve over Streamable HTTP at http://127.0.0.1:PORT/mcp (default: stdio)",
    )
    args = parser.parse_args(argv)
    if args.http is not None:
        sdk_server().run(  # type: ignore[attr-defined]
            "streamable-http", host="127.0.0.1", port=args.http
        )
    else:
        sdk_server().run("stdio")  # type: ignore[attr-defined]


if __name__ == "__main__":
    _main()
