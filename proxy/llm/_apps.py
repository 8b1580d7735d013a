"""What the model is told when an MCP App shows a tool's result to the user.

A host that shows apps (``WorkerPool(apps=True)``) renders a tool's app beside the
conversation; the model reads the tool's text as ever, plus one line saying the user sees
the result in that app, so it does not describe again what is on the user's screen.
"""

from __future__ import annotations

from typing import Any

import msgspec

from nativemcp.protocol import NativeMCPResponse, TextContent, Tool, tool_ui

__all__ = ["app_shown_note", "with_app_note"]


def app_shown_note(tool: Tool) -> str | None:
    """The line telling the model that ``tool``'s app shows its result, or None for a
    tool without an app."""
    uri = tool_ui(tool.meta)
    if uri is None:
        return None
    return (
        f"[The user sees this result in the tool's app ({uri}), shown with this answer: "
        "refer to it rather than describing it again.]"
    )


def with_app_note(response: NativeMCPResponse[Any], tool: Tool) -> NativeMCPResponse[Any]:
    """``response`` with `app_shown_note` added as a last text block, when ``tool`` has
    an app and the call succeeded (an error shows no app); else ``response`` itself."""
    note = app_shown_note(tool)
    result = response.result
    if note is None or result is None or result.is_error:
        return response
    content = [*result.content, TextContent(text=note)]
    return msgspec.structs.replace(
        response, result=msgspec.structs.replace(result, content=content)
    )
