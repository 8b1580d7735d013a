"""A 2026-07-28 MCP server (the official SDK's low-level server, over stdio) whose
``ask`` tool takes ``rounds`` rounds of input: each answer it gets back is followed by
one more ``InputRequiredResult`` until it has asked ``rounds`` times.

``python tests/_rounds_server.py`` serves stdio; the serve tests run it as an external
server.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"rounds": {"type": "integer"}}}
    return types.ListToolsResult(
        tools=[types.Tool(name="ask", description="Asks rounds times", input_schema=schema)]
    )


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    rounds = int((params.arguments or {}).get("rounds", 1))
    asked = int(params.request_state or 0)
    if asked < rounds:
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=f"question {asked + 1}",
                requested_schema={"type": "object", "properties": {}},
            )
        )
        return types.InputRequiredResult(
            input_requests={"q": question}, request_state=str(asked + 1)
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"asked {asked} times")]
    )


async def main() -> None:
    server: Server[Any] = Server("rounds", on_list_tools=_list_tools, on_call_tool=_call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
