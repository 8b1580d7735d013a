"""``serve --code-mode``: the three meta-tools of code mode in place of every definition.

``search_tools`` ranks the tools the caller may call (the bridge's servers, the
profile's subset, the caller's scopes) by the identifier a program calls each by;
``describe_tools`` gives them as Python stubs; ``run_code`` runs a program with exactly
those tools callable. The pool answers all three (`WorkerPool.answer_code_tool`, with
``allowed``); each inner call runs under the served call's options: the bridge's time
limit, the caller's scope and identity, so a program reaches no tool its caller could
not call directly. A tool's request to the client (sampling, elicitation) reaches a
2025-11-25 client on the ``run_code`` request's stream; on 2026-07-28 it would suspend
the call, which a program cannot, so it is refused there. An inner call's progress
reaches the caller as the ``run_code`` request's (`program_progress`), its log messages
as a direct call's do (at the level the caller asked for), each logger naming the call
(``shapes__count``).

What a caller may call is worked out once per catalog and set of scopes (`allowed`), not
on every meta-tool call: the served catalog as last read is one object until a served
source's tools change (a ``tools/list_changed``, a restarted worker), and a new one
starts the cache afresh.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext

from nativemcp.protocol import (
    ArgumentsError,
    NativeMCPResponse,
    Tool,
    UnknownTool,
    response_to_sdk,
)
from nativemcp.protocol.wire import Caller

from .._handle import CallOptions
from ..codemode import CODE_META_TOOLS

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["CODE_MODE_TOOLS", "CodeMode", "program_progress"]

CODE_MODE_TOOLS = frozenset(tool.name for tool in CODE_META_TOOLS)
"""The names the meta-tools answer to."""
_SCOPE_SETS: Final = 64
"""Sets of scopes whose callable tools are kept per catalog (then it starts afresh)."""

Visible = Callable[[Caller | None, dict[str, Tool]], dict[str, Tool]]
"""What a caller may see of the served tools (`ServedTools.visible`)."""


def program_progress(
    ctx: ServerRequestContext[Any],
) -> Callable[[float, float | None, str | None], Awaitable[None]] | None:
    """The progress of a program's inner calls for the ``run_code`` request of ``ctx``,
    or None where it asked for none (no ``progressToken``).

    Each message already names its call (``shapes__count: step 2``); the values become
    a count of the run's reports, as the caller's token needs values that only grow
    while several calls each count from zero."""
    if (ctx.meta or {}).get("progress_token") is None:
        return None
    reports = 0

    async def report(progress: float, total: float | None, message: str | None) -> None:
        nonlocal reports
        reports += 1
        await ctx.session.report_progress(reports, None, message)

    return report


class CodeMode:
    """The code-mode meta-tools of one bridge over ``pool``."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool
        # The catalog the kept sets were worked out from, and each caller's set by scopes.
        self._catalog: dict[str, Tool] | None = None
        self._allowed: dict[frozenset[str] | None, frozenset[str]] = {}

    def allowed(
        self, served: dict[str, Tool], caller: Caller | None, visible: Visible
    ) -> frozenset[str]:
        """The full names ``caller`` may call of ``served`` (the catalog as last read),
        kept while ``served`` is the same object and worked out anew from another."""
        if served is not self._catalog or len(self._allowed) >= _SCOPE_SETS:
            self._catalog, self._allowed = served, {}
        key = None if caller is None else frozenset(caller.scopes)
        names = self._allowed.get(key)
        if names is None:
            names = frozenset(tool.name for tool in visible(caller, served).values())
            self._allowed[key] = names
        return names

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
        allowed: frozenset[str],
        options: CallOptions,
        fit: Callable[[NativeMCPResponse[Any]], Awaitable[NativeMCPResponse[Any]]],
    ) -> types.CallToolResult:
        """The answer of meta-tool ``name``; ``allowed``: the full names the caller may
        call (served, in its scopes, `allowed`); ``options``: each inner call's;
        ``fit``: the answer held to serve's result budget."""
        try:
            response = await self._pool.answer_code_tool(
                name, arguments, allowed=allowed.__contains__, options=options
            )
        except (ArgumentsError, UnknownTool) as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Error: {exc}")], is_error=True
            )
        return response_to_sdk(await fit(response))
