"""Each private part of the official SDK that `nativemcp.proxy._sdk_seam` reads, checked
against the installed SDK: a release that moves one fails here, by name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession

from nativemcp.proxy._sdk_seam import client_connection, send_raw_request

pytestmark = pytest.mark.anyio


def test_a_server_sessions_connection_is_the_one_it_was_made_with() -> None:
    connection = SimpleNamespace(protocol_version="2025-11-25", client_params=None)
    session = ServerSession(SimpleNamespace(), connection)  # type: ignore[arg-type]
    assert client_connection(session) is connection


def test_an_object_without_a_connection_has_none() -> None:
    assert client_connection(SimpleNamespace()) is None


async def test_a_raw_request_reaches_the_server_and_returns_its_raw_result() -> None:
    server = MCPServer("seam")

    @server.tool()
    def echo(text: str) -> str:
        """Say ``text`` back."""
        return text

    # A 2025-11-25 connection, where the pool sends its one raw request (a task).
    async with Client(server, mode="legacy") as client:
        raw = await send_raw_request(
            client, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
        )
    assert raw["content"] == [{"type": "text", "text": "hi"}]
