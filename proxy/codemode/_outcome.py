"""A stopped program's Monty error as the project's `CodeError` tree.

Monty reports everything as one of a few classes; which limit a program passed is in
the sandboxed exception's type and the words Monty writes (checked with 1.7:
``feed time limit exceeded``, ``memory limit exceeded``, ``maximum recursion depth
exceeded``, ``suspension limit N exceeded``). tests/proxy/codemode fails when they
change. A limit the run itself counted (output, calls, wall-clock duration) wins over
what the sandbox says, since stopping the sandbox for it is what made it fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nativemcp.protocol import (
    CodeError,
    CodeLimitExceeded,
    CodeSyntaxError,
    SandboxCrashed,
)

from ._calls import RunState

if TYPE_CHECKING:  # the code extra: only a run, which has imported it, calls in here
    import pydantic_monty

__all__ = ["code_error", "over_duration"]


def over_duration(state: RunState) -> CodeLimitExceeded:
    """The error of a run stopped at its wall-clock duration."""
    return CodeLimitExceeded(
        "duration",
        state.limits.duration,
        "the run took longer than that many seconds",
        result=state.result(),
    )


def code_error(exc: pydantic_monty.MontyError, state: RunState) -> CodeError:
    """The `CodeError` for ``exc``, carrying what the run printed and called."""
    import pydantic_monty

    result = state.result()
    if state.exceeded is not None:
        state.exceeded.result = result
        return state.exceeded
    limits = state.limits
    if isinstance(exc, pydantic_monty.MontySyntaxError):
        frames = exc.traceback()
        line, column = (frames[0].line, frames[0].column) if frames else (1, 1)
        return CodeSyntaxError(str(exc), line=line, column=column, result=result)
    if isinstance(exc, pydantic_monty.MontyCrashedError):
        if exc.timed_out:
            return over_duration(state)
        return SandboxCrashed(f"the sandbox process died: {exc}", result=result)
    if isinstance(exc, pydantic_monty.MontyRuntimeError):
        inner = exc.exception()
        text = str(inner)
        limit: tuple[str, Any] | None = None
        if isinstance(inner, TimeoutError) and "time limit exceeded" in text:
            limit = ("duration", limits.duration)
        elif isinstance(inner, MemoryError) and "memory limit exceeded" in text:
            limit = ("memory", limits.memory)
        elif isinstance(inner, RecursionError):
            limit = ("recursion", limits.recursion)
        elif isinstance(inner, RuntimeError) and text.startswith("suspension limit"):
            limit = ("calls", limits.calls)
        if limit is not None:
            return CodeLimitExceeded(limit[0], limit[1], text, result=result)
        return CodeError(exc.display("traceback"), result=result)
    return CodeError(f"the sandbox refused the program: {exc}", result=result)
