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


async def test_a_call_past_its_input_rounds_answers_an_error_naming_the_limit() -> None:
    async with serving(http_app(_pool(input_rounds=3))) as base:
        with anyio.fail_after(60):
            # The handshake protocol: serve relays each round as a request of its own.
            async with Client(
                f"{base}/mcp", mode="legacy", elicitation_callback=_elicitation
            ) as client:
                within = await client.call_tool("ask", {"rounds": 3})
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("ask", {"rounds": 4})
    assert within.content[0].text == "asked 3 times"  # type: ignore[union-attr]
    assert refused.value.code == -32603
    message = refused.value.message
    assert "rounds.ask asked for input more than 3 times in one call" in message
    assert "--input-rounds" in message and "input_rounds 3" in message
    assert refused.value.error.data == {"reason": "too_many_input_rounds", "inputRounds": 3}


async def test_input_rounds_past_the_sdks_ten_are_served_when_allowed() -> None:
    async with serving(http_app(_pool(input_rounds=12))) as base:
        with anyio.fail_after(60):
            async with Client(
                f"{base}/mcp", mode="legacy", elicitation_callback=_elicitation
            ) as client:
                result = await client.call_tool("ask", {"rounds": 12})
    assert result.content[0].text == "asked 12 times"  # type: ignore[union-attr]


def test_input_rounds_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="input_rounds must be at least 1, not 0"):
        WorkerPool(input_rounds=0)
