"""The exception tree of nativemcp.

```
NativeMCPError                  root: everything nativemcp raises on purpose
├── ProtocolError               malformed input: bad JSON/msgpack, wrong shapes, non-UTF-8
├── ToolNameError               a tool or server name breaks the naming rules
├── ToolError                   the tool answered with an error (JSON-RPC error or isError)
└── UnwrapError                 a result does not convert to the requested type
```

The runtime (``nativemcp.workers`` / ``nativemcp.proxy``) adds its own branch for
"the worker broke" (crash, timeout), kept apart from "the tool returned an error".
"""

from __future__ import annotations

from typing import Any

__all__ = ["NativeMCPError", "ProtocolError", "ToolError", "ToolNameError", "UnwrapError"]


class NativeMCPError(Exception):
    """Root of every error nativemcp raises on purpose."""


class ProtocolError(NativeMCPError, ValueError):
    """Input that is not a valid message: bad encoding, bad JSON/msgpack or wrong shape."""


class ToolNameError(NativeMCPError, ValueError):
    """A tool, server or full tool name that breaks the naming rules."""


class ToolError(NativeMCPError):
    """The tool answered with an error: a JSON-RPC error or an ``isError`` result.

    Everything that came with the error is kept: ``code``, ``message``, ``data``, the
    structured content and the full text of the content blocks.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        data: Any = None,
        structured_content: dict[str, Any] | None = None,
        text: str | None = None,
        tool: str | None = None,
    ) -> None:
        self.message = message
        self.code = code
        self.data = data
        self.structured_content = structured_content
        self.text = text
        self.tool = tool
        prefix = f"tool {tool!r} failed" if tool else "tool call failed"
        suffix = f" (code {code})" if code is not None else ""
        super().__init__(f"{prefix}: {message}{suffix}")


class UnwrapError(NativeMCPError, TypeError):
    """A result does not convert to the requested type; names tool, type and what arrived."""

    def __init__(
        self, *, expected: Any, arrived: str, reason: str, tool: str | None = None
    ) -> None:
        self.expected = expected
        self.arrived = arrived
        self.reason = reason
        self.tool = tool
        where = f" from tool {tool!r}" if tool else ""
        super().__init__(
            f"cannot unwrap the result{where} as {_type_name(expected)}: {reason}; "
            f"arrived: {arrived}"
        )


def _type_name(type_: Any) -> str:
    name = getattr(type_, "__qualname__", None)
    if isinstance(name, str) and not getattr(type_, "__args__", None):
        return name
    return repr(type_).replace("typing.", "")
