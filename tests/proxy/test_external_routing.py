"""A server's request to its client (elicitation) reaches the caller of its call.

Two calls are in flight at once whenever the server asks. On the 2026-07-28 protocol
the question comes back inside its call (an input round): each must reach its own
caller's ``on_request``. On the handshake protocol it arrives outside any call: the one
answerer all calls share answers it, and callers with different answerers get a refusal
rather than one answering for the other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from nativemcp.proxy import CallOptions, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

TESTS = Path(__file__).parents[1]
ASK = {
    "name": "ask",
    "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
}


def answer(who: str, params: dict[str, Any]) -> dict[str, Any]:
    """An elicitation's answer naming who gave it."""
    return {"action": "accept", "content": {"text": f"{who} answered {params['message']}"}}


def caller(who: str | None) -> CallOptions:
    """A caller's options: its own answerer, or (None) the pool's."""
    if who is None:
        return CallOptions()

    async def on_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "elicitation/create"
        return answer(who, params)

    return CallOptions(on_request=on_request)


async def _together(
    pool: WorkerPool, tool: str, calls: dict[str, CallOptions], **more: Any
) -> dict[str, str]:
    """Call ``tool`` once per key at the same time; each call's text, by key."""
    results: dict[str, str] = {}

    async def ask(key: str) -> None:
        response = await pool.call_tool(tool, {"key": key, **more}, options=calls[key])
        assert response.result is not None, response
        results[key] = response.result.content[0].text  # type: ignore[union-attr]

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for key in calls:
                tg.start_soon(ask, key)
    return results


async def test_on_the_2026_protocol_each_call_gets_its_question_answered_by_its_own_caller(
    tmp_path: Path,
) -> None:
    """The server asks once both calls are in flight (it waits for both): neither the
    other caller nor the pool answers."""
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    handler = lambda params: answer("pool", params)  # noqa: E731
    async with WorkerPool(mcp_servers={"ext": entry}, elicitation_handler=handler) as pool:
        calls = {"first": caller("first"), "second": caller("second")}
        results = await _together(pool, "ext__ask", calls, group="g", size=2)
    assert results == {
        "first": "first: first answered a reply for first",
        "second": "second: second answered a reply for second",
    }


def _raw(tmp_path: Path) -> dict[str, Any]:
    config = {"tools": [ASK], "ask_together": 2}
    raw = TESTS / "_raw_mcp_server.py"
    return {"command": sys.executable, "args": [str(raw), json.dumps(config)]}


async def test_on_the_handshake_protocol_calls_that_share_an_answerer_get_it(
    tmp_path: Path,
) -> None:
    handler = lambda params: answer("pool", params)  # noqa: E731
    async with WorkerPool(mcp_servers={"raw": _raw(tmp_path)}, elicitation_handler=handler) as pool:
        results = await _together(pool, "raw__ask", {"first": caller(None), "second": caller(None)})
    assert results == {
        "first": "first: pool answered a reply for first",
        "second": "second: pool answered a reply for second",
    }
    async with WorkerPool(mcp_servers={"raw": _raw(tmp_path)}, elicitation_handler=handler) as pool:
        shared = caller("both")
        results = await _together(pool, "raw__ask", {"first": shared, "second": shared})
    assert results == {
        "first": "first: both answered a reply for first",
        "second": "second: both answered a reply for second",
    }


async def test_on_the_handshake_protocol_calls_with_different_answerers_are_refused(
    tmp_path: Path,
) -> None:
    handler = lambda params: answer("pool", params)  # noqa: E731
    async with WorkerPool(mcp_servers={"raw": _raw(tmp_path)}, elicitation_handler=handler) as pool:
        calls = {"first": caller("first"), "second": caller("second")}
        results = await _together(pool, "raw__ask", calls)
    for key in ("first", "second"):
        assert results[key].startswith(f"{key}: refused: "), results
        assert "2 calls from different callers were in flight" in results[key]
