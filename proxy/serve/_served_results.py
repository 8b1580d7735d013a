"""``serve --result-budget``: served tool results held to a token budget, the rest kept.

A result over the budget reaches the MCP client cut where it stays readable (the text,
with the line that says what was left out), its images scaled down, and a
``resource_link`` to ``nativemcp://results/<id>``, which ``resources/read`` answers
with the whole result; the ``read_result`` tool, listed whenever a budget is set,
reads a range of it or the passages that match a query. A tool with an output schema
keeps its ``structuredContent`` whole (the schema requires it). A result is kept for
the caller that made the call, by the key serve scopes per-caller state with: the
OAuth subject, else the MCP session; another caller reads no such result. Off by
default: without a budget nothing here runs and a result is sent as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import (
    INVALID_PARAMS,
    ArgumentsError,
    CallToolResult,
    NativeMCPResponse,
    ResourceLink,
    TextContent,
    Tool,
    ToolError,
)

from .._kept_results import ResultKeeping
from ..llm._budget import RESULTS_URI, check_budget
from ..llm._read_result import READ_RESULT, READ_RESULT_TOOL
from ..llm._render import render
from .auth import request_caller
from .tasks import session_key

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["ServedResults"]


class ServedResults:
    """A bridge's result budget (None: off) and the results it kept.

    Raises:
        ValueError: a budget below `MIN_BUDGET` tokens.
    """

    def __init__(self, pool: WorkerPool, budget: int | None) -> None:
        if budget is not None:
            check_budget(budget, "result_budget")
        self.offered = budget is not None

        def content_store() -> Any:
            # Kept in the content store when the pool runs it: searchable there too.
            if "content-store" not in pool.names:
                return None
            from nativemcp.workers.content_store import ContentStoreAPI

            return pool.server(ContentStoreAPI)

        self._keeping = ResultKeeping(budget, content_store)

    def tool(self, name: str) -> Tool | None:
        """`READ_RESULT_TOOL` for its name while a budget is set, else None."""
        return READ_RESULT_TOOL if self.offered and name == READ_RESULT else None

    def listed(self) -> list[types.Tool]:
        """``read_result`` as ``tools/list`` gives it (nothing without a budget)."""
        if not self.offered:
            return []
        tool = READ_RESULT_TOOL
        data = {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        return [types.Tool.model_validate(data)]

    async def read(
        self, arguments: Mapping[str, Any], owner: str
    ) -> NativeMCPResponse[Any] | types.CallToolResult:
        """A ``read_result`` call's answer for ``owner``; a bad id or range is a tool
        error the model reads."""
        try:
            return await self._keeping.read(arguments, owner=owner)
        except (ArgumentsError, ToolError) as exc:
            message = exc.message if isinstance(exc, ToolError) else str(exc)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=message)], is_error=True
            )

    async def fitted(
        self, tool: Tool | str, response: NativeMCPResponse[Any], owner: str
    ) -> NativeMCPResponse[Any]:
        """``response`` as the client reads it: as it is within the budget, else cut,
        with a ``resource_link`` to the whole, kept for ``owner``. ``tool``: the served
        tool that answered, or the name of a meta-tool of nativemcp's own (``run_code``:
        a program's output is a result like any other)."""
        if not self.offered or response.result is None:
            return response
        name = tool if isinstance(tool, str) else tool.name
        output, cut = await self._keeping.cut(render(response), owner=owner, tool=name)
        if cut is None:
            return response
        uri = f"{RESULTS_URI}{cut.result_id}"
        content: list[Any] = [TextContent(text=output.body)]
        for extra in output.extras:  # the images beside a cut text, scaled down
            if extra.image is not None:
                content += [TextContent(text=extra.note), extra.image]
        content.append(
            ResourceLink(
                uri=uri,
                name=f"result {cut.result_id}",
                title=f"The whole result of {name}",
                mime_type="text/plain",
                size=cut.size,
            )
        )
        result = response.result
        # A tool with an output schema must answer structured content that fits it.
        schema = None if isinstance(tool, str) else tool.output_schema
        structured = result.structured_content if schema else None
        return NativeMCPResponse(
            result=CallToolResult(
                content=content, structured_content=structured, is_error=result.is_error
            )
        )

    async def read_resource(
        self, uri: str, ctx: ServerRequestContext[Any] | None
    ) -> types.ReadResourceResult | None:
        """``resources/read`` of ``nativemcp://results/<id>`` by the caller of ``ctx``:
        the whole result (its images after it); None for any other URI, or without a
        budget.

        Raises:
            MCPError: INVALID_PARAMS, no such result for this caller.
        """
        if not self.offered or not uri.startswith(RESULTS_URI):
            return None
        # The key serve scopes a call with: the OAuth subject, else the MCP session.
        caller = request_caller(ctx) if ctx is not None else None
        owner = caller.subject if caller is not None else session_key(ctx) if ctx else None
        try:
            text, images = await self._keeping.whole(
                uri.removeprefix(RESULTS_URI), owner=owner or ""
            )
        except ToolError as exc:
            raise MCPError(INVALID_PARAMS, exc.message, {"uri": uri}) from exc
        contents: list[Any] = [{"uri": uri, "mimeType": "text/plain", "text": text}]
        for number, image in enumerate(images, 1):
            contents.append(
                {"uri": f"{uri}/image/{number}", "mimeType": image.mime_type, "blob": image.data}
            )
        return types.ReadResourceResult.model_validate({"contents": contents})
