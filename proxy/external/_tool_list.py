"""An external server's tool list: read whole, and read again when the server says it
changed.

`list_all_tools` reads every page (bounded: a cursor that never ends must not hang the
pool). `ToolListChanges` hears that the tools changed in either of the ways MCP says
it: a ``notifications/tools/list_changed`` sent at will (up to 2025-11-25; the SDK
client's message handler, `on_message`), or an event of a ``subscriptions/listen``
stream, which a 2026-07-28 server sends only to a client that opened one (`follow`
opens it where the server declares ``tools.listChanged``). The handler runs in the
SDK's reader, which must not wait on a request of its own, so it only notes the
change, and `follow` (a task of the connection's lifetime) reads the list again.

A 2026-07-28 server also says how long its list stays fresh (``ttlMs``): `Freshness`
keeps when it goes stale, and the pool's next listing after that reads it again (the
SDK's own cache honours the hint within one client). A ``ttlMs`` of 0, the SDK
server's default, promises nothing and is not polled: the list stands until the
server says it changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc

from nativemcp.protocol import Tool, from_sdk

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["MAX_TOOL_PAGES", "Freshness", "ToolListChanges", "list_all_tools", "read_tool_list"]

_logger = logging.getLogger("nativemcp.external")

MAX_TOOL_PAGES: Final = 1000
"""Pages of ``tools/list`` read at most (a warning names the server past it)."""


def now() -> float:
    """The clock tool lists go stale by (monotonic seconds)."""
    return time.monotonic()


class Freshness:
    """When a server's last tool list goes stale (None: it does not, by time)."""

    def __init__(self) -> None:
        self._until: float | None = None

    def listed(self, ttl_ms: int | None) -> None:
        """A list was just read, fresh for ``ttl_ms`` (None or 0: no promise)."""
        self._until = now() + ttl_ms / 1000 if ttl_ms else None

    def take_stale(self) -> bool:
        """Whether the list is stale; True once per listing, so that one reader reads
        it again while the others use the list they have."""
        until = self._until
        if until is None or now() < until:
            return False
        self._until = None
        return True


async def list_all_tools(client: Client, server: str, cache_mode: Any = "use") -> list[Tool]:
    """Every page of the server's tool list (see `read_tool_list`)."""
    tools, _ = await read_tool_list(client, server, cache_mode)
    return tools


async def read_tool_list(
    client: Client, server: str, cache_mode: Any = "use"
) -> tuple[list[Tool], int | None]:
    """Every page of the server's tool list, up to `MAX_TOOL_PAGES` (then a warning
    says the rest was left out), and the ``ttlMs`` of the shortest-lived page (None:
    no page said one). ``cache_mode="bypass"`` asks the server, not the SDK client's
    response cache."""
    tools: list[Tool] = []
    ttl: int | None = None
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
        tools.extend(from_sdk(tool) for tool in page.tools)
        if "ttl_ms" in page.model_fields_set:  # on the wire: a 2026-07-28 server's hint
            ttl = page.ttl_ms if ttl is None else min(ttl, page.ttl_ms)
        cursor = page.next_cursor
        if cursor is None:
            return tools, ttl
    _logger.warning(
        "MCP server %r: its tool list has more than %d pages; the %d tools of the first "
        "%d are offered, the rest left out",
        server,
        MAX_TOOL_PAGES,
        len(tools),
        MAX_TOOL_PAGES,
    )
    return tools, ttl


class ToolListChanges:
    """One connection's ``notifications/tools/list_changed``: noted by `on_message`,
    acted on by `follow`."""

    def __init__(self, server: str, redact: Callable[[str], str]) -> None:
        self._server = server
        self._redact = redact  # a message may echo the entry's secrets
        self._changed = anyio.Event()

    async def on_message(self, message: object) -> None:
        """The SDK client's message handler: note a changed tool list."""
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._changed.set()

    async def follow(
        self,
        client: Client,
        relist: Callable[[], Awaitable[None]],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``relist`` after each change, until cancelled (several changes said
        while it runs make one more call); started once changes are heard."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._listen, client)
            task_status.started()
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await relist()

    async def _listen(self, client: Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """On a 2026-07-28 connection to a server whose tools may change, note each
        change its subscription stream reports. A stream refused or lost is a warning:
        the tools stand as last listed (a reconnect lists them again)."""
        from mcp import MCPError
        from mcp.client.subscriptions import SubscriptionLost
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not modern or tools is None or not tools.list_changed:
            task_status.started()
            return
        heard = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                heard = True
                async for _ in subscription:
                    self._changed.set()
        except (MCPError, SubscriptionLost, TimeoutError) as exc:
            _logger.warning(
                "MCP server %r: changes to its tools are not heard (%s); they stand as last listed",
                self._server,
                self._redact(str(exc)),
            )
        if not heard:  # refused before it was acknowledged: the connection goes on
            task_status.started()
