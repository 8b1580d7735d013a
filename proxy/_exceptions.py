"""Errors raised on the caller side before anything reaches a worker."""

from __future__ import annotations

from nativemcp.protocol import NativeMCPError

__all__ = ["ArgumentsError", "ToolNameClash", "UnknownServer", "UnknownTool"]


class ArgumentsError(NativeMCPError, ValueError):
    """Call arguments that are not an object (a non-JSON string, a list, clashing keys)."""


class UnknownServer(NativeMCPError, KeyError):
    """The pool has no server by that name; the message lists the ones it has."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ToolNameClash(NativeMCPError, LookupError):
    """A tool is named like one of the proxy's own attributes; the message says how to
    reach each. Not an `AttributeError`: that would make Python fall back to the tool
    and silently hide the proxy's own."""


class UnknownTool(NativeMCPError, KeyError):
    """No tool by that full name in the catalog; the message suggests the nearest."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
