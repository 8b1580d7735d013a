"""``serve --tool-search``: the two meta-tools in place of every served definition.

``search_tools`` ranks the served tools (the bridge's servers, the profile's subset)
with the pool's tool index and answers in the built-ins' rich-text style with the
matches as ``structuredContent``. ``call_tool`` names the served tool to run; the
bridge then runs it as it runs any call (progress, logs, the client's sampling and
elicitation, tasks). A name that is not served answers a tool error with the nearest
names, so the model can correct itself. With ``--search-learn`` a session's search
and the ``call_tool`` that follows it teach the catalog the query's words
(`WorkerPool.learn_call`); a session is the authenticated caller, else the HTTP
session, else the stdio client (`search_session`).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from nativemcp.protocol import ArgumentsError, Tool, quoted_name, response_to_sdk

from ..tool_search import CALL_TOOL, SEARCH_TOOLS, ToolProfile, read_call, read_search
from ..tool_search import search_response as _search_response
from .auth import request_caller
from .tasks import session_key

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["SearchMode", "search_session", "warn_unmatched"]

_logger = logging.getLogger("nativemcp.serve")

_NEAREST = 3
"""How many names an unknown ``call_tool`` name is answered with."""


class SearchMode:
    """The meta-tools of one bridge over ``pool``; each answer is given the tools the
    bridge serves now (its servers', in its profile), by full name."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool

    @staticmethod
    def listed(tool: Tool, tasks: bool) -> types.Tool:
        """A meta-tool as ``tools/list`` gives it; ``call_tool`` takes tasks when the
        bridge offers them. On 2025-11-25 the called tool runs in the task, whatever it
        declares; under 2026-07-28's Tasks extension a ``call_tool`` becomes a task only
        where the tool it names declares task support (else it answers as a plain call)."""
        data: dict[str, Any] = {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        if tasks and tool.name == CALL_TOOL:
            data["execution"] = {"taskSupport": "optional"}
        return types.Tool.model_validate(data)

    async def answer(
        self, arguments: Mapping[str, Any], served: Mapping[str, Tool], session: Hashable | None
    ) -> types.CallToolResult:
        """The answer to ``search_tools``: the best served tools for the query (the
        index, where the catalog changed, built in a worker thread)."""
        try:
            query, limit = read_search(arguments)
        except ArgumentsError as exc:
            return _error(str(exc))
        if session is not None:
            self._pool.searched(session, query)
        index = await self._pool.fresh_tool_index()
        matches = index.search(query, limit, where=served.__contains__)
        return response_to_sdk(_search_response(query, matches, len(served)))

    async def target(
        self, arguments: Mapping[str, Any], served: Mapping[str, Tool], session: Hashable | None
    ) -> tuple[Tool, dict[str, Any]] | types.CallToolResult:
        """The served tool ``call_tool`` names and its arguments, or a tool error that
        says what is wrong (an unknown name comes with the nearest ones). A served tool
        named after ``session``'s search learns that search's words."""
        try:
            name, given = read_call(arguments)
        except ArgumentsError as exc:
            return _error(str(exc))
        tool = served.get(name)
        if tool is not None:
            if session is not None:
                await self._pool.learn_call(session, name)
            return tool, given
        return _error(await self.unknown(name, served))

    async def unknown(self, name: str, served: Mapping[str, Tool]) -> str:
        """Why ``name`` cannot be called, with the nearest served names: those spelled
        alike first, then those the name's words find."""
        near = difflib.get_close_matches(name, list(served), n=_NEAREST, cutoff=0.6)
        if len(near) < _NEAREST:
            found = (await self._pool.fresh_tool_index()).search(
                name, _NEAREST, where=lambda full: full in served and full not in near
            )
            near += [match.name for match in found][: _NEAREST - len(near)]
        hint = f"; the nearest: {', '.join(near)}" if near else ""
        return (
            f"no tool named {quoted_name(name)}{hint}. Call {SEARCH_TOOLS} to find a tool "
            f"and pass its full name to {CALL_TOOL}."
        )


def search_session(ctx: ServerRequestContext[Any]) -> Hashable | None:
    """Whose search a ``call_tool`` follows: the authenticated caller's, else the HTTP
    session's (2025-11-25), else the one client's of a stdio server. None: a 2026-07-28
    HTTP request without sign-in, which belongs to no session."""
    caller = request_caller(ctx)
    if caller is not None:
        return ("caller", caller.issuer, caller.subject)  # a subject is unique per issuer
    key = session_key(ctx)
    if key is not None:
        return ("session", key)
    return ("stdio",) if ctx.request is None else None  # stdio serves one client


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error: {message}")], is_error=True
    )


async def warn_unmatched(pool: WorkerPool, profile: ToolProfile | None) -> list[str]:
    """Warn (once, at start) of each ``tools`` glob of ``profile`` that matches no tool
    of the pool: most likely a prefix written without ``*``. Returns those globs."""
    if profile is None or profile.tools is None:
        return []
    names = [tool.name for tool in await pool.list_tools()]
    unmatched = profile.unmatched(names)
    for glob in unmatched:
        _logger.warning(
            "--tools %r matches no tool: a glob matches whole full names (server__tool); "
            "%r matches every name that starts so",
            glob,
            glob + "*",
        )
    return unmatched
