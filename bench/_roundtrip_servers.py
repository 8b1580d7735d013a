"""The same 20-item list tool as a nativemcp server and as an official-SDK server.

Run as ``python -m bench._roundtrip_servers`` it serves the SDK version over stdio.
"""

from __future__ import annotations

import datetime as dt
import os

import msgspec
from pydantic import BaseModel

from nativemcp.workers import Server

ITEMS = 20
_BASE = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


class Item(msgspec.Struct, rename="camel"):
    """One listed file."""

    file_name: str
    size: int
    mime_type: str
    added: dt.datetime


def make_items(count: int = ITEMS) -> list[Item]:
    """The bench payload: ``count`` list items."""
    return [
        Item(f"report-{i:02}.md", 1000 + i, "text/markdown", _BASE + dt.timedelta(minutes=i))
        for i in range(count)
    ]


server = Server("bench", description="The round-trip bench server")

# Built once, as the raw-pipe child does: the bench measures the framework, not the
# cost of making 20 objects.
_PREBUILT = make_items()


@server.tool
def list_items(count: int = ITEMS) -> list[Item]:
    """List ``count`` items."""
    return _PREBUILT if count == ITEMS else make_items(count)


@server.tool
def pid() -> int:
    """The worker's process id (for its RSS)."""
    return os.getpid()


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


if __name__ == "__main__":
    sdk_server().run("stdio")  # type: ignore[attr-defined]
