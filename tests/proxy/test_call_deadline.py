"""`call_deadline`, every handle's time limit: a CallTimeout naming the server and what
ran once the limit passes, on asyncio and trio alike, and nothing else changed."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from nativemcp.proxy import CallTimeout
from nativemcp.proxy._handle import call_deadline

pytestmark = pytest.mark.anyio


async def test_a_quick_request_passes_through_and_returns() -> None:
    done = []
    with call_deadline("srv", "tool", 5):
        await anyio.lowlevel.checkpoint()
        done.append(True)
    assert done == [True]


async def test_a_request_past_its_limit_raises_call_timeout_naming_it() -> None:
    with pytest.raises(CallTimeout) as caught, call_deadline("srv", "slow", 0.01):
        await anyio.sleep(5)
    assert (caught.value.server, caught.value.tool, caught.value.timeout) == ("srv", "slow", 0.01)
    assert isinstance(caught.value.__cause__, TimeoutError)


async def test_a_timeout_error_raised_inside_is_a_call_timeout_too() -> None:
    with pytest.raises(CallTimeout), call_deadline("srv", "tool", 5):
        raise TimeoutError("the tool's own")


async def test_other_errors_and_outer_cancellation_pass_unchanged() -> None:
    with pytest.raises(KeyError), call_deadline("srv", "tool", 5):
        raise KeyError("x")
    with anyio.move_on_after(0.01) as outer, call_deadline("srv", "tool", 5):
        await anyio.sleep(5)
    assert outer.cancelled_caught  # the outer scope's cancellation, not a timeout here


async def test_no_limit_sets_no_deadline() -> None:
    with anyio.move_on_after(0.01) as outer, call_deadline("srv", "tool", None):
        await anyio.sleep(5)
    assert outer.cancelled_caught
