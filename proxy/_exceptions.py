"""Errors raised on the caller side before anything reaches a worker."""

from __future__ import annotations

from nativemcp.protocol import NativeMCPError

__all__ = ["ArgumentsError", "UnknownServer"]


class ArgumentsError(NativeMCPError, ValueError):
    """Call arguments that are not an object (a non-JSON string, a list, clashing keys)."""


class UnknownServer(NativeMCPError, KeyError):
    """The pool has no server by that name; the message lists the ones it has."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
