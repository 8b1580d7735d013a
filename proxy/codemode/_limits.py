"""What a code-mode program may use: `CodeLimits`, each limit with a default.

Monty enforces duration (its own clock, which stops while the program waits on a
tool), memory and recursion inside the sandbox; the run adds a wall-clock bound on
the whole run (tool time included), the printed output and the number of inner calls,
which only the host sees. Monty 1.7 counts no allocations apart from memory, so memory
is the bound on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:  # the code extra; only the sandbox, loaded on the first run, needs it
    from pydantic_monty import ResourceLimits

__all__ = ["DEFAULT_LIMITS", "CodeLimits"]


class CodeLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The limits of one `run_code` run; passing one raises `CodeLimitExceeded` naming it.

    Args:
        duration: seconds the whole run may take, inner calls included.
        memory: bytes of the sandbox's heap.
        recursion: depth of the program's call stack.
        output: bytes (UTF-8) the program may print.
        calls: tool calls the program may make.

    Raises:
        ValueError: a limit that is not a positive number.
    """

    duration: float = 30.0
    memory: int = 64 * 1024 * 1024
    recursion: int = 200
    output: int = 64 * 1024
    calls: int = 200

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"code limit {name!r} must be a positive number, not {value!r}")

    def monty(self) -> ResourceLimits:
        """Monty's `ResourceLimits` for these limits.

        ``max_suspensions`` (every tool call, name lookup and awaited result) is a
        backstop above ``calls``, which the run counts itself.
        """
        return {
            "max_feed_duration_secs": self.duration,
            "max_memory": self.memory,
            "max_recursion_depth": self.recursion,
            "max_suspensions": 4 * self.calls + 100,
        }


DEFAULT_LIMITS: Final = CodeLimits()
"""The limits a run gets when it names none."""
