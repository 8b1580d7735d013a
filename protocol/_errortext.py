"""Reading error codes and messages out of MCP error texts (seed 000).

Clients and transports stack prefixes onto an MCP error as it travels, e.g.::

    Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool x: [] (Code: -32603)

**Which code wins:** the first ``Mcp error: N`` code. It is the code of the failure
itself; a trailing ``(Code: N)`` is what an outer layer that did not understand the
error wrapped it in (typically -32603, internal error), so it is used only when no
``Mcp error`` code is present.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["ErrorInfo", "extract_error_info"]

_MCP_PREFIX: Final = re.compile(r"^\s*mcp\s+error\s*:?\s*(-?\d+)\s*:?\s*", re.IGNORECASE)
_ERROR_PREFIX: Final = re.compile(r"^\s*error\s*:\s*", re.IGNORECASE)
_TRAILING_CODE: Final = re.compile(r"\s*\(\s*code\s*:\s*(-?\d+)\s*\)\s*$", re.IGNORECASE)


class ErrorInfo(msgspec.Struct, frozen=True):
    """A code (None when the text carries none) and the message with prefixes removed."""

    code: int | None
    message: str


def extract_error_info(text: str) -> ErrorInfo:
    """Read the code and message out of an MCP error text.

    ``Mcp error: N: msg`` (any nesting, any case) gives code N and ``msg``; ``Error: msg``
    gives ``msg`` and no code; any other text is the message as it is.
    """
    rest = text.strip()
    trailing = _TRAILING_CODE.search(rest)
    trailing_code = int(trailing.group(1)) if trailing else None
    if trailing:
        rest = rest[: trailing.start()]
    code: int | None = None
    saw_prefix = False
    while True:
        if match := _ERROR_PREFIX.match(rest):
            rest = rest[match.end() :]
            saw_prefix = True
        elif match := _MCP_PREFIX.match(rest):
            if code is None:
                code = int(match.group(1))
            rest = rest[match.end() :]
            saw_prefix = True
        else:
            break
    if not saw_prefix and trailing_code is None:
        return ErrorInfo(code=None, message=text)
    return ErrorInfo(code=code if code is not None else trailing_code, message=rest.strip())
