"""Value-only calls: a typed method call skips the model's text; ``call_tool`` keeps it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import msgspec
import pytest
from _servers import Listing, server

from nativemcp.protocol import ToolError, UnwrapError, unwrap
from nativemcp.protocol.wire import (
    VALUE,
    Call,
    ValueReader,
    encode_frame,
    pack_reply,
    unpack_reply,
)
from nativemcp.proxy import WorkerPool

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


def _renders(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tests.render"]


async def test_value_only_response_carries_the_value_and_no_text() -> None:
    response = await server.call_tool("listing", {"count": 2}, value_only=True)
    assert response.result is not None
    assert response.result.content == []
    assert response.result.structured_content is None
    assert isinstance(response.structured_result, Listing)
    assert unwrap(response, Listing).total == 2


async def test_value_only_reply_is_smaller_than_the_full_reply() -> None:
    full = await server.call_tool("listing", {"count": 20})
    value = await server.call_tool("listing", {"count": 20}, value_only=True)
    full_bytes = len(encode_frame(pack_reply(1, full)))
    value_bytes = len(encode_frame(pack_reply(1, value)))
    assert value_bytes < full_bytes
    assert Call(id=1, tool="t", arguments={}).value_only is False


async def test_value_only_success_travels_as_the_bare_value_and_reads_back_alike() -> None:
    value = await server.call_tool("listing", {"count": 3}, value_only=True)
    reply = pack_reply(7, value)
    # No envelope around the value: the caller decodes it as a bare pipe would.
    assert reply.rebuild == VALUE
    assert bytes(reply.response) == msgspec.msgpack.encode(value.structured_result)
    assert ValueReader(Listing).read(reply, "listing") == value.structured_result
    whole = unpack_reply(reply)
    assert whole.id == 7 and whole.result is not None and whole.result.content == []
    assert unwrap(whole, Listing) == value.structured_result


async def test_a_bare_value_that_does_not_convert_is_an_unwrap_error_naming_the_tool() -> None:
    reply = pack_reply(1, await server.call_tool("listing", {"count": 1}, value_only=True))
    with pytest.raises(UnwrapError, match="listing"):
        ValueReader(int).read(reply, "listing")


async def test_value_only_errors_are_answered_in_full() -> None:
    response = await server.call_tool("fail", {"message": "no disk"}, value_only=True)
    assert response.result is not None and response.result.is_error
    assert "no disk" in response.result.content[0].text  # type: ignore[union-attr]
    with pytest.raises(ToolError, match="no disk"):
        unwrap(response, int)


@pytest.mark.real_process
@pytest.mark.parametrize("tool", ["rendered_listing", "rendered_listing_inline"])
async def test_typed_method_call_skips_rendering_in_the_worker(
    pool: WorkerPool, caplog: pytest.LogCaptureFixture, tool: str
) -> None:
    caplog.set_level(logging.INFO, logger="tests.render")
    testing = pool.server("testing")
    with anyio.fail_after(10):
        typed = await getattr(testing, tool)(count=3)
        # A ping after the call: any log record the call sent has arrived by then.
        await testing.ping()
    assert isinstance(typed, Listing) and typed.total == 3
    assert _renders(caplog) == []


@pytest.mark.real_process
async def test_call_tool_still_carries_the_rich_text(
    pool: WorkerPool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tests.render")
    testing = pool.server("testing")
    with anyio.fail_after(10):
        response = await testing.call_tool("rendered_listing", {"count": 3})
        await testing.ping()
    assert response.result is not None
    assert response.result.content[0].text.startswith("3 files: file0.md")  # type: ignore[union-attr]
    assert response.result.structured_content is not None
    assert _renders(caplog) == ["rendered 3 items"]
    assert unwrap(response, Listing) == await testing.rendered_listing(count=3)


@pytest.mark.real_process
async def test_typed_call_of_a_failing_tool_raises_the_tools_message(pool: WorkerPool) -> None:
    with anyio.fail_after(10), pytest.raises(ToolError, match="disk full"):
        await pool.server("testing").fail(message="disk full")


async def test_in_process_typed_call_skips_rendering(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tests.render")
    async with WorkerPool([server], in_process=["testing"]) as pool:
        testing = pool.server("testing")
        assert (await testing.rendered_listing(count=2)).total == 2
        assert _renders(caplog) == []
        await testing.call_tool("rendered_listing", {"count": 2})
        assert _renders(caplog) == ["rendered 2 items"]
