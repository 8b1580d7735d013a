"""The 20-item list tool of bench.roundtrip as a nativemcp server.

The official-SDK twin lives in `bench._roundtrip_sdk`, so that this module (which the
worker imports) does not pull pydantic into the worker's memory.
"""

from __future__ import annotations

import datetime as dt
import os

import msgspec

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


@server.tool(inline=True)
def list_items_inline(count: int = ITEMS) -> list[Item]:
    """`list_items` run on the worker's event loop (a tiny pure function: no thread hop)."""
    return _PREBUILT if count == ITEMS else make_items(count)


@server.tool
def pid() -> int:
    """The worker's process id (for its RSS)."""
    return os.getpid()
