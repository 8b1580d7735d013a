"""An optional external server's broken tools are left out, not the server or the pool.

A ``"required": false`` server's problems cost only what is broken. Two kinds of tool
would otherwise cost more: one whose definition the SDK refuses (an invalid
``inputSchema``, a name that is not a string) makes it refuse the whole ``tools/list``
answer, so the server was left out with its valid tools; a name listed twice makes the
catalog refuse to start the pool (two tools under one full name). Here the first is
dropped from the answer before the SDK reads it (`usable_tools_only` wraps the
transport's read stream, whatever the transport) and every copy of the second is
dropped, as no one can say which copy is meant. Each dropped tool is one warning naming
the server and the tool.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from nativemcp.protocol import Tool, quoted_name

__all__ = ["drop_invalid_tools", "drop_repeated_tools", "usable_tools_only"]

_logger = logging.getLogger("nativemcp.external")


def _shown(name: object) -> str:
    return quoted_name(name) if isinstance(name, str) else f"{type(name).__name__} {name!r:.80}"


def drop_invalid_tools(result: dict[str, Any], version: str, server: str) -> None:
    """Remove from a ``tools/list`` result (in place) every tool the SDK would refuse
    under protocol ``version``, with a warning for each."""
    import mcp_types
    from mcp_types.methods import validate_server_result

    tools = result.get("tools")
    if not isinstance(tools, list):
        return
    kept: list[Any] = []
    for tool in tools:
        listing = {"tools": [tool]}
        try:
            # A version without a surface of its own: the monolith below decides.
            with contextlib.suppress(KeyError):
                validate_server_result("tools/list", version, listing)
            mcp_types.ListToolsResult.model_validate(listing, by_name=False)
        except ValueError as exc:
            name = tool.get("name") if isinstance(tool, dict) else tool
            _logger.warning(
                "optional MCP server %r: tool %s left out, its definition is invalid: %s",
                server,
                _shown(name),
                _first_error(exc),
            )
        else:
            kept.append(tool)
    result["tools"] = kept


@contextlib.asynccontextmanager
async def usable_tools_only(
    transport: AbstractAsyncContextManager[tuple[Any, Any]], server: str
) -> AsyncIterator[tuple[Any, Any]]:
    """``transport`` (an SDK client transport) with its read stream passed through
    `_ListingFilter`: the SDK never sees a tool it would refuse."""
    async with transport as (read, write):
        yield _ListingFilter(read, server), write


class _ListingFilter:
    """A transport's read stream, the broken tools taken out of each ``tools/list``
    answer on the way. Everything else is the stream's own (``last_context``, the SDK's
    per-message context on HTTP, included), so it wraps rather than relays."""

    def __init__(self, inner: Any, server: str) -> None:
        self._inner = inner
        self._server = server
        self._version = "2025-11-25"  # the SDK's assumption until a handshake says otherwise

    async def receive(self) -> Any:
        """The next item, a ``tools/list`` answer without its broken tools."""
        import mcp_types

        item = await self._inner.receive()
        message = getattr(item, "message", None)
        if isinstance(message, mcp_types.JSONRPCResponse):
            result = message.result
            if isinstance(result.get("protocolVersion"), str):
                self._version = result["protocolVersion"]  # the initialize answer
            elif isinstance(result.get("tools"), list):
                drop_invalid_tools(result, self._version, self._server)
        return item

    def __aiter__(self) -> _ListingFilter:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _ListingFilter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def drop_repeated_tools(tools: list[Tool], server: str) -> list[Tool]:
    """``tools`` without any name listed more than once, with a warning for each."""
    counts = Counter(tool.name for tool in tools)
    for name, count in counts.items():
        if count > 1:
            _logger.warning(
                "optional MCP server %r: tool %s left out, it is listed %d times",
                server,
                quoted_name(name),
                count,
            )
    return [tool for tool in tools if counts[tool.name] == 1]


def _first_error(exc: ValueError) -> str:
    """The first of a pydantic error's problems on one line (its location and message)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first["loc"][2:])  # past "tools", 0
        return f"{where or 'tool'}: {first['msg']}"
    return str(exc).splitlines()[0]
