"""What a test's MCP client answers when a tool asks it something."""

from __future__ import annotations

import mcp_types as types
from mcp.client.context import ClientRequestContext


async def model_says_42(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    """A sampling callback: the client's model answers "42"."""
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="42"), model="test"
    )
