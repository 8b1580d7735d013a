"""How many rounds of input an external server's call may take through `nativemcp
serve`: ``input_rounds`` (``--input-rounds``) is serve's own limit, and a call past it
answers a JSON-RPC error that names it (the official SDK's client behind serve, a
2026-07-28 server over stdio in a real process; no Node)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _mcp_http import serving
from mcp import Client
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

SERVER = str(Path(__file__).parents[2] / "_rounds_server.py")


async def _elicitation(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={})


def _pool(**extra: Any) -> WorkerPool:
    servers = {"rounds": {"command": sys.executable, "args": [SERVER]}}
    return WorkerPool(mcp_servers=servers, relay_client_requests=True, timeout=60, **extra)


async def _ask(input_rounds: int, *rounds: int) -> list[types.CallToolResult | MCPError]:
    """Serve the rounds server with ``input_rounds``; what each call of ``ask`` with
    ``rounds`` gives a client on the handshake protocol (serve relays each round as a
    request of its own)."""
    answers: list[types.CallToolResult | MCPError] = []
    async with serving(http_app(_pool(input_rounds=input_rounds))) as base:
        with anyio.fail_after(60):
            async with Client(
                f"{base}/mcp", mode="legacy", elicitation_callback=_elicitation
            ) as client:
                for count in rounds:
                    try:
                        answers.append(await client.call_tool("ask", {"rounds": count}))
                    except MCPError as exc:
                        answers.append(exc)
    return answers


async def test_a_call_past_its_input_rounds_answers_an_error_naming_the_limit() -> None:
    within, refused = await _ask(3, 3, 4)
    assert isinstance(within, types.CallToolResult) and isinstance(refused, MCPError)
    assert within.content[0].text == "asked 3 times"  # type: ignore[union-attr]
    assert refused.code == -32603
    message = refused.message
    assert "rounds.ask asked for input more than 3 times in one call" in message
    assert "--input-rounds" in message and "input_rounds 3" in message
    assert refused.error.data == {"reason": "too_many_input_rounds", "inputRounds": 3}


async def test_input_rounds_past_the_sdks_ten_are_served_when_allowed() -> None:
    (result,) = await _ask(12, 12)
    assert isinstance(result, types.CallToolResult)
    assert result.content[0].text == "asked 12 times"  # type: ignore[union-attr]


def test_input_rounds_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="input_rounds must be at least 1, not 0"):
        WorkerPool(input_rounds=0)
