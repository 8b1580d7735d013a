"""What a code-mode run gives back: `CodeResult` and each `InnerCall` it made."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["CodeResult", "InnerCall"]


class InnerCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call a program made.

    Args:
        name: the tool's name as the program called it.
        tool: the tool's full name in the catalog.
        duration: seconds the call took.
        error: the error's text, or None when the call answered a value.
    """

    name: str
    tool: str
    duration: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the tool answered a value (not an error)."""
        return self.error is None


class CodeResult(msgspec.Struct, frozen=True, kw_only=True):
    """A finished run: what it printed, its last expression's value and its calls.

    Args:
        output: what the program printed (stdout and stderr, in order).
        value: the value of the program's last expression as plain data (dicts,
            lists, strings, numbers, booleans, None), or None.
        calls: each tool call, in the order they started.
        duration: seconds the run took.
    """

    output: str
    value: Any = None
    calls: tuple[InnerCall, ...] = ()
    duration: float = 0.0
