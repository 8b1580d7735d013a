"""One time-limit name per call: `CallOptions(timeout=...)` with `DEFAULT` and `None`."""

from __future__ import annotations

import anyio
import pytest

from nativemcp.proxy import DEFAULT, CallOptions, CallTimeout, WorkerPool
from nativemcp.proxy._handle import time_limit
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


slow = Server("slow")


@slow.tool()
async def nap(seconds: float, on_log: str = "") -> str:
    """Sleep; ``on_log`` is an argument of the tool, not the call's option."""
    await anyio.sleep(seconds)
    return f"slept {on_log}".strip()


def test_default_takes_the_pools_limit_none_means_no_limit_and_zero_keeps_meaning_none() -> None:
    assert time_limit(DEFAULT, 30.0) == 30.0
    assert time_limit(DEFAULT, None) is None
    assert time_limit(None, 30.0) is None
    assert time_limit(5, 30.0) == 5.0
    assert time_limit(0, 30.0) is None  # the earlier spelling of "no limit"
    assert CallOptions().with_default(2.0).limit == 2.0
    with pytest.raises(TypeError, match="seconds, None or DEFAULT"):
        time_limit("soon", 1.0)  # type: ignore[arg-type]


async def test_each_spelling_of_the_limit_applies_to_a_call() -> None:
    async with WorkerPool([slow], in_process=["slow"], timeout=0.2) as pool:
        proxy = pool.server("slow")
        with pytest.raises(CallTimeout):
            await proxy.nap(seconds=5)  # the pool's default
        with pytest.raises(CallTimeout):
            await pool.call_tool("slow__nap", {"seconds": 5})
        assert await proxy.nap(seconds=0.3, call_options=CallOptions(timeout=None)) == "slept"
        assert await proxy.nap(seconds=0.3, call_timeout=5) == "slept"  # the older spelling
        response = await proxy.call_tool("nap", {"seconds": 0.3}, timeout=None)
        assert response.result is not None and not response.result.is_error
        # A tool argument named like an option goes to the tool.
        assert await proxy.nap(seconds=0, on_log="well") == "slept well"
