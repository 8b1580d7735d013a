"""A callback's outcome, awaited when the callback was ``async def``."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar, overload

__all__ = ["resolved"]

T = TypeVar("T")


@overload
async def resolved(outcome: Awaitable[T]) -> T: ...
@overload
async def resolved(outcome: T) -> T: ...
async def resolved(outcome: Any) -> Any:
    """``outcome`` itself, or what it resolves to when it is awaitable.

    Every hook nativemcp takes (progress and log handlers, sampling handlers, a
    server's lifecycle hooks) may be a plain function or a coroutine function: call it,
    then pass what it returned here.
    """
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome
