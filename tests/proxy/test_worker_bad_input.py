"""Bad calls fail alone: the caller refuses what cannot be sent, the worker answers what
it cannot read, and a server that has run healthily earns its restart budget back."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest

from nativemcp.protocol import INVALID_PARAMS
from nativemcp.protocol.wire import Reply, Result, unpack_reply
from nativemcp.proxy import (
    ArgumentsError,
    RestartPolicy,
    ServerStartError,
    UnknownServer,
    UnknownTool,
    WorkerPool,
)
from nativemcp.proxy._worker import WorkerProcess
from nativemcp.workers.channel import Inbox

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=20) as pool:
        yield pool


def _deep(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


async def test_a_non_string_key_is_an_arguments_error_and_the_worker_serves_on(
    pool: WorkerPool,
) -> None:
    testing = pool.server("testing")
    pid = await testing.pid()
    for _ in range(8):  # more than a restart budget's worth
        with pytest.raises(ArgumentsError, match=r"string keys.*int key 1"):
            await testing.call_tool("echo", {1: "x"})  # type: ignore[dict-item]
    assert await testing.pid() == pid
    assert await testing.echo(text="fine") == "fine"


async def test_a_non_string_tool_name_is_an_arguments_error(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    with pytest.raises(ArgumentsError, match="tool name must be a string, got int"):
        await testing.call_tool(7, {})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("bad \ud800 text", "lone surrogate"),
        (_deep(10_000), "nested too deeply"),
        (2**64, "64 bits"),
        (-(2**63) - 1, "64 bits"),
        (object(), "object is unsupported"),
        ({(1, 2): "a"}, r"tuple key \(1, 2\); keys must be strings"),
        ([{"ok": {3: "deep"}}], "int key 3; keys must be strings"),
    ],
    ids=[
        "lone-surrogate",
        "deep-nesting",
        "int-over-64-bits",
        "int-under-64-bits",
        "object",
        "nested-tuple-key",
        "nested-int-key-in-a-list",
    ],
)
async def test_arguments_that_cannot_be_encoded_are_an_arguments_error_naming_them(
    pool: WorkerPool, value: Any, problem: str
) -> None:
    testing = pool.server("testing")
    with pytest.raises(ArgumentsError, match=f"argument 'text' of 'echo'.*{problem}"):
        await testing.call_tool("echo", {"text": value})
    with pytest.raises(ArgumentsError, match=problem):
        await testing.echo(text=value)


async def test_a_tool_name_with_a_lone_surrogate_is_an_arguments_error(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    with pytest.raises(ArgumentsError, match=r"tool name '\\ud800' holds a lone surrogate"):
        await testing.call_tool("\ud800", {})
    assert await testing.echo(text="fine") == "fine"


async def test_a_megabyte_tool_name_is_cut_in_every_error_message(pool: WorkerPool) -> None:
    name = "x" * 1_000_000
    response = await pool.server("testing").call_tool(name, {})
    assert response.error is not None
    assert "(1,000,000 characters)" in response.error.message
    assert len(response.error.message) + len(str(response.error.data)) < 2000
    with pytest.raises(UnknownTool) as caught:
        await pool.call_tool(name, {})
    assert "(1,000,000 characters)" in str(caught.value) and len(str(caught.value)) < 2000
    with pytest.raises(UnknownServer) as unknown:
        pool.server(name)
    assert "(1,000,000 characters)" in str(unknown.value) and len(str(unknown.value)) < 2000
    # The LLM's path: the model named a tool that does not exist, with broken arguments.
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{"}}
    message = await pool.run_tool_call(call, provider="openai")
    assert "(1,000,000 characters)" in message["content"] and len(message["content"]) < 2000


async def _send_raw(handle: WorkerProcess, message: list[Any]) -> Reply | Result:
    """Send ``message`` as one frame, past every check of the caller; its answer."""
    conn = await handle._connection("send a raw frame")
    call_id = conn.new_id()
    inbox: Inbox[Any] = Inbox()
    conn.pending[call_id] = ("raw", inbox)
    payload = msgspec.msgpack.encode([message[0], call_id, *message[1:]])
    conn.send(len(payload).to_bytes(4, "big") + payload)
    try:
        with anyio.fail_after(20):
            item = await inbox.get()
    finally:
        conn.pending.pop(call_id, None)
    assert isinstance(item, Reply | Result), item
    return item


async def test_the_worker_answers_an_undecodable_call_with_an_error_for_that_call(
    pool: WorkerPool,
) -> None:
    testing = pool.server("testing")
    handle = testing._handle
    assert isinstance(handle, WorkerProcess)
    pid = await testing.pid()
    for message in (["call", "echo", {1: "x"}, False], ["call", 5, {}, False]):
        reply = await _send_raw(handle, message)
        assert isinstance(reply, Reply)
        response = unpack_reply(reply)
        assert response.error is not None
        assert response.error.code == INVALID_PARAMS
        assert "could not read" in response.error.message
    result = await _send_raw(handle, ["switch_context", 5, None])
    assert isinstance(result, Result)
    assert result.error is not None and "could not read" in result.error
    assert await testing.pid() == pid


async def test_a_frame_without_a_readable_id_is_dropped_and_the_worker_serves_on(
    pool: WorkerPool, caplog: pytest.LogCaptureFixture
) -> None:
    testing = pool.server("testing")
    handle = testing._handle
    assert isinstance(handle, WorkerProcess)
    pid = await testing.pid()
    conn = await handle._connection("send garbage")
    with caplog.at_level(logging.WARNING):
        for garbage in (b"\xc1\xc1\xc1", msgspec.msgpack.encode({"no": "array"})):
            conn.send(len(garbage).to_bytes(4, "big") + garbage)
        assert await testing.echo(text="after garbage") == "after garbage"
    assert await testing.pid() == pid
    assert "dropped a message that does not decode" in caplog.text


async def test_a_server_that_ran_healthily_earns_its_restart_budget_back() -> None:
    policy = RestartPolicy(max_restarts=1, window=600, backoff=0.01, healthy_after=0.5)
    async with WorkerPool(["_servers:server"], restart=policy, timeout=20) as pool:
        testing = pool.server("testing")
        for _ in range(3):
            pid = await testing.pid()
            await anyio.sleep(0.6)  # serve longer than healthy_after
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(20):
                while True:
                    try:
                        new_pid = await testing.pid()
                    except ServerStartError:
                        raise
                    except Exception:  # the call that raced the kill: ServerCrashed
                        continue
                    if new_pid != pid:
                        break


async def test_crashes_in_quick_succession_still_exhaust_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = RestartPolicy(max_restarts=1, window=600, backoff=0.01, healthy_after=600)
    with caplog.at_level(logging.ERROR, logger="nativemcp.worker"):
        async with WorkerPool(["_servers:server"], restart=policy, timeout=20) as pool:
            testing = pool.server("testing")
            with pytest.raises(ServerStartError, match="stopped restarting"):
                with anyio.fail_after(20):
                    while True:
                        try:
                            os.kill(await testing.pid(), signal.SIGKILL)
                        except ServerStartError:
                            raise
                        except Exception:
                            continue
    messages = [r.getMessage() for r in caplog.records if r.name == "nativemcp.worker"]
    # Two crashes: the first is restarted, the second gives up, and says only that.
    assert sum("stopped restarting" in m for m in messages) == 1
    assert sum("restarting in" in m for m in messages) == 1
