"""An external server's tool list: read whole, and read again when the server says it
changed.

`list_all_tools` reads every page (bounded: a cursor that never ends must not hang the
pool). `ToolListChanges` is the SDK client's message handler for
``notifications/tools/list_changed``: the handler runs in the SDK's reader, which must
not wait on a request of its own, so it only notes the change, and `follow` (a task of
the connection's lifetime) reads the list again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, NoReturn

import anyio

from nativemcp.protocol import Tool, from_sdk

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["MAX_TOOL_PAGES", "ToolListChanges", "list_all_tools"]

_logger = logging.getLogger("nativemcp.external")

MAX_TOOL_PAGES: Final = 1000
"""Pages of ``tools/list`` read at most (a warning names the server past it)."""


async def list_all_tools(client: Client, server: str, cache_mode: Any = "use") -> list[Tool]:
    """Every page of the server's tool list, up to `MAX_TOOL_PAGES` (then a warning
    says the rest was left out). ``cache_mode="bypass"`` asks the server, not the SDK
    client's response cache."""
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
        tools.extend(from_sdk(tool) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    _logger.warning(
        "MCP server %r: its tool list has more than %d pages; the %d tools of the first "
        "%d are offered, the rest left out",
        server,
        MAX_TOOL_PAGES,
        len(tools),
        MAX_TOOL_PAGES,
    )
    return tools


class ToolListChanges:
    """One connection's ``notifications/tools/list_changed``: noted by `on_message`,
    acted on by `follow`."""

    def __init__(self) -> None:
        self._changed = anyio.Event()

    async def on_message(self, message: object) -> None:
        """The SDK client's message handler: note a changed tool list."""
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._changed.set()

    async def follow(self, relist: Callable[[], Awaitable[None]]) -> NoReturn:
        """Call ``relist`` after each change, until cancelled (several changes said
        while it runs make one more call)."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            await relist()
