"""`resolved`: a hook's outcome, awaited only when the hook was ``async def``."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest

from nativemcp.protocol import resolved

pytestmark = pytest.mark.anyio


def _plain(value: int) -> int:
    return value + 1


async def _coroutine(value: int) -> int:
    return value + 2


async def test_a_plain_hooks_value_is_returned_as_it_is() -> None:
    assert await resolved(_plain(1)) == 2


async def test_an_async_hooks_coroutine_is_awaited_once() -> None:
    assert await resolved(_coroutine(1)) == 3


async def test_an_awaitable_that_is_not_a_coroutine_is_awaited_too() -> None:
    class Later:
        def __await__(self):  # type: ignore[no-untyped-def]
            return _coroutine(5).__await__()

    later: Awaitable[int] = Later()
    assert await resolved(later) == 7


async def test_a_hooks_exception_comes_through_unchanged() -> None:
    async def failing() -> None:
        raise LookupError("the hook failed")

    with pytest.raises(LookupError, match="the hook failed"):
        await resolved(failing())
