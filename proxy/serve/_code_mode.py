"""``serve --code-mode``: the three meta-tools of code mode in place of every definition.

``search_tools`` ranks the tools the caller may call (the bridge's servers, the
profile's subset, the caller's scopes) by the identifier a program calls each by;
``describe_tools`` gives them as Python stubs; ``run_code`` runs a program with exactly
those tools callable. The pool answers all three (`WorkerPool.answer_code_tool`, with
``allowed``); each inner call runs under the served call's options: the bridge's time
limit, the caller's scope and identity, so a program reaches no tool its caller could
not call directly. A tool's request to the client (sampling, elicitation) reaches a
2025-11-25 client on the ``run_code`` request's stream; on 2026-07-28 it would suspend
the call, which a program cannot, so it is refused there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types

from nativemcp.protocol import (
    ArgumentsError,
    NativeMCPResponse,
    Tool,
    UnknownTool,
    response_to_sdk,
)

from .._handle import CallOptions
from ..codemode import CODE_META_TOOLS

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["CODE_MODE_TOOLS", "CodeMode"]

CODE_MODE_TOOLS = frozenset(tool.name for tool in CODE_META_TOOLS)
"""The names the meta-tools answer to."""


class CodeMode:
    """The code-mode meta-tools of one bridge over ``pool``."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool

    @staticmethod
    def listing() -> list[types.Tool]:
        """The three meta-tools as ``tools/list`` gives them."""
        return [
            types.Tool.model_validate(
                {
                    "name": tool.name,
                    "title": tool.title,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                }
            )
            for tool in CODE_META_TOOLS
        ]

    async def answer(
        self,
        name: str,
        arguments: Mapping[str, Any],
        callable_tools: Mapping[str, Tool],
        options: CallOptions,
        fit: Callable[[NativeMCPResponse[Any]], Awaitable[NativeMCPResponse[Any]]],
    ) -> types.CallToolResult:
        """The answer of meta-tool ``name``; ``callable_tools``: what the caller may
        call (served, in its scopes), by full name; ``options``: each inner call's;
        ``fit``: the answer held to serve's result budget."""
        full_names = {tool.name for tool in callable_tools.values()}
        try:
            response = await self._pool.answer_code_tool(
                name, arguments, allowed=full_names.__contains__, options=options
            )
        except (ArgumentsError, UnknownTool) as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Error: {exc}")], is_error=True
            )
        return response_to_sdk(await fit(response))
