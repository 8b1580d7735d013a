"""Reading error codes and messages out of MCP error texts.

Clients and transports stack prefixes onto an MCP error as it travels, e.g.::

    Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool x: [] (Code: -32603)

**Which code wins:** the first ``Mcp error: N`` code. It is the code of the failure
itself; a trailing ``(Code: N)`` is what an outer layer that did not understand the
error wrapped it in (typically -32603, internal error), so it is used only when no
``Mcp error`` code is present.

``Mcp error: N`` is found anywhere in the text, not only at its start: the official
SDK server reports a raised error as ``Error executing tool t: Mcp error: -32602: ...``.
Text before it is kept in the message (minus leading ``Error:`` prefixes).
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["ErrorInfo", "extract_error_info"]

# No two adjacent optional-whitespace runs: they backtrack quadratically on long blanks.
_MCP_PREFIX: Final = re.compile(r"\bmcp\s+error\s*(?::\s*)?(-?\d+)\s*(?::\s*)?", re.IGNORECASE)
_ERROR_PREFIX: Final = re.compile(r"^\s*error\s*:\s*", re.IGNORECASE)
_TRAILING_CODE: Final = re.compile(r"\(\s*code\s*:\s*(-?\d+)\s*\)\s*$", re.IGNORECASE)


class ErrorInfo(msgspec.Struct, frozen=True):
    """A code (None when the text carries none) and the message with prefixes removed."""

    code: int | None
    message: str


def _strip_prefixes(text: str) -> tuple[str, bool]:
    """``text`` without its chain of leading ``Error:`` / ``Mcp error N:`` prefixes."""
    stripped = False
    while True:
        match = _ERROR_PREFIX.match(text) or _MCP_PREFIX.match(text)
        if match is None:
            return text, stripped
        text = text[match.end() :]
        stripped = True


def extract_error_info(text: str) -> ErrorInfo:
    """Read the code and message out of an MCP error text.

    ``Mcp error: N: msg`` (anywhere, any nesting, any case) gives code N and ``msg``;
    ``Error: msg`` gives ``msg`` and no code (unless a trailing ``(Code: N)`` gives
    one); any other text is the message as it is.
    """
    rest = text.strip()
    trailing = _TRAILING_CODE.search(rest)
    if trailing:
        rest = rest[: trailing.start()].rstrip()
    mcp = _MCP_PREFIX.search(rest)
    if mcp is not None:
        lead, _ = _strip_prefixes(rest[: mcp.start()])
        body, _ = _strip_prefixes(rest[mcp.end() :])
        return ErrorInfo(code=int(mcp.group(1)), message=(lead + body).strip())
    body, stripped = _strip_prefixes(rest)
    if trailing:
        return ErrorInfo(code=int(trailing.group(1)), message=body.strip())
    if not stripped:
        return ErrorInfo(code=None, message=text)
    return ErrorInfo(code=None, message=body.strip())
