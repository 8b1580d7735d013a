"""What the command line says when something goes wrong: one line each, no traceback.

`UsageError` is a mistake in what the user typed (exit status 2); the errors nativemcp
raises on purpose and the operating system's are one line each (exit status 1). A
traceback is for a bug, not for these.
"""

from __future__ import annotations

from typing import Final

from nativemcp.protocol import NativeMCPError

__all__ = ["EXPECTED", "UsageError", "error_lines"]


class UsageError(Exception):
    """A mistake in what the user typed, said in their words (exit status 2)."""


EXPECTED: Final = (NativeMCPError, OSError)
"""What the CLI reports in one line; anything else is a bug and keeps its traceback."""


def error_lines(exc: BaseException) -> list[str] | None:
    """One line per failure in ``exc`` (an exception group is flattened), or None when
    something in it is not an `EXPECTED` failure."""
    if isinstance(exc, BaseExceptionGroup):
        lines: list[str] = []
        for inner in exc.exceptions:
            found = error_lines(inner)
            if found is None:
                return None
            lines.extend(line for line in found if line not in lines)
        return lines
    if isinstance(exc, EXPECTED):
        return [" ".join(str(exc).split()) or type(exc).__name__]
    return None
