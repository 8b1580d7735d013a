"""How a bridge runs a served tool call: the pool call under the bridge's time limit and
the call's scope, its answer shaped for the client, and a shutdown that stops the calls
running and still answers their clients.

Every path that runs a served call comes here: a direct ``tools/call``, ``call_tool``
under search, a task in either era, the fast path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ArgumentsError,
    NativeMCPResponse,
    ProtocolError,
    ServerError,
    Tool,
    response_to_sdk,
)
from nativemcp.protocol.wire import Caller

from .._handle import CallerToken, CallOptions, LogHandler, ProgressCallback
from ._apps import ServedApps
from ._suspended import ClientAsk

if TYPE_CHECKING:
    from .._pool import WorkerPool
    from ._served_results import ServedResults

__all__ = ["ToolCalls"]

INPUT_ERRORS_AS_TOOL_ERRORS: Final = "2025-11-25"
"""The protocol version from which arguments that fail a tool's input schema are a tool
error the model can read and correct (SEP-1303), not a JSON-RPC -32602."""


class ToolCalls:
    """One bridge's tool calls through ``pool``.

    Args:
        pool: the running pool (its ``call_tool``).
        apps: the served MCP Apps (a result is shaped for a client that shows them).
        results: the kept results (a result over the budget is cut and kept; a call of
            ``read_result`` reads one).
        limit: seconds per call (None: no limit).
    """

    def __init__(
        self, pool: WorkerPool, apps: ServedApps, results: ServedResults, limit: float | None
    ) -> None:
        self._pool = pool
        self._apps = apps
        self._results = results
        self._limit = limit
        # The pool calls running now, each in its own scope, so a shutdown can stop them
        # and still answer their clients (`stop_calls`).
        self._running: set[anyio.CancelScope] = set()
        self._stopped_because = ""

    def call_options(
        self,
        session_id: str | None,
        *,
        on_request: ClientAsk,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        caller: Caller | None = None,
        caller_token: CallerToken | None = None,
    ) -> CallOptions:
        """The pool options of one served tool call.

        The bridge's time limit and the call's scope (the client's session, where it
        has one, or the authenticated ``caller``'s subject), with the call's callbacks
        (and the token the caller presented, for an upstream's token exchange).
        Every path that runs a served call builds them here."""
        return CallOptions(
            timeout=self._limit,
            on_progress=on_progress,
            on_log=on_log,
            on_request=on_request,
            scope=(session_id, None) if session_id is not None else None,
            caller=caller,
            caller_token=caller_token,
        )

    async def run_tool(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        version: str | None,
        options: CallOptions,
        *,
        apps: bool,
    ) -> types.CallToolResult:
        """Call ``tool`` through the pool under ``options``; its ``CallToolResult``.

        The result is shaped for a client of protocol ``version`` that shows MCP Apps
        where ``apps``: a tool that did not run to an answer, and (from 2025-11-25)
        arguments its schema refuses, answer as a tool error.

        Raises:
            MCPError: a JSON-RPC error for the client (the tool's own, arguments refused
                before 2025-11-25, a result that cannot be sent, or a call stopped by
                `stop_calls`).
        """
        answer = await self.tool_answer(tool, arguments, version, options)
        if isinstance(answer, types.CallToolResult):
            return answer
        return self.shaped(tool, answer, apps)

    async def tool_answer(
        self, tool: Tool, arguments: dict[str, Any], version: str | None, options: CallOptions
    ) -> types.CallToolResult | NativeMCPResponse[Any]:
        """Run `run_tool`'s call, leaving a result response as the pool gave it.

        The answer is the response (`shaped` makes it the client's result), or the
        tool error the call answers with.

        Raises:
            MCPError: as `run_tool`, but for a result that cannot be sent (`shaped`).
        """
        response = None
        owner = options.scope[0] or "" if options.scope else ""
        if self._results.tool(tool.name) is tool:
            return await self._results.read(arguments, owner)
        with self.stoppable():
            try:
                response = await self._pool.call_tool(tool.name, arguments, options=options)
            except ServerError as exc:
                # The tool did not run to an answer: the model reads why, as a tool error.
                return _tool_error(str(exc))
            except ArgumentsError as exc:
                if _input_errors_are_tool_errors(version):
                    return _tool_error(str(exc))
                raise MCPError(INVALID_PARAMS, str(exc)) from exc
        if response is None:  # stopped by `stop_calls`: the client hears why
            raise self.stopped()
        error = response.error
        if error is not None:
            if error.code == INVALID_PARAMS and _input_errors_are_tool_errors(version):
                return _tool_error(error.message)
            raise MCPError(error.code, error.message, error.data)
        return await self._results.fitted(tool, response, owner)

    def shaped(
        self, tool: Tool, response: NativeMCPResponse[Any], apps: bool
    ) -> types.CallToolResult:
        """A tool's result response as the ``CallToolResult`` its client reads.

        Raises:
            MCPError: INTERNAL_ERROR, the result cannot be sent (no SDK form).
        """
        try:
            return self._apps.result(tool, response_to_sdk(response), apps)
        except ProtocolError as exc:
            raise MCPError(INTERNAL_ERROR, f"the tool's result cannot be sent: {exc}") from exc

    @contextlib.contextmanager
    def stoppable(self) -> Iterator[anyio.CancelScope]:
        """A scope `stop_calls` cancels, around one call (or one program)."""
        with anyio.CancelScope() as scope:
            self._running.add(scope)
            try:
                yield scope
            finally:
                self._running.discard(scope)

    def stopped(self) -> MCPError:
        """What the client of a call `stop_calls` stopped hears."""
        return MCPError(INTERNAL_ERROR, self._stopped_because, {"reason": "shutting_down"})

    def stop_calls(self, reason: str) -> int:
        """Stop every tool call running through these calls; returns how many stopped.

        Each answers its client with a JSON-RPC error (INTERNAL_ERROR, ``reason``, data
        ``{"reason": "shutting_down"}``) rather than a dropped connection."""
        self._stopped_because = reason
        for scope in self._running:
            scope.cancel()
        return len(self._running)


def _input_errors_are_tool_errors(version: str | None) -> bool:
    # Versions are dates: they compare as strings. No version known: the older rule.
    return isinstance(version, str) and version >= INPUT_ERRORS_AS_TOOL_ERRORS


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error: {message}")], is_error=True
    )
