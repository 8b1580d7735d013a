"""A 2026-07-28 server's tool list is kept as long as its ``ttlMs`` says and read again
after (the clock is the test's: no waiting), and what ``serve`` hands its own clients
is never marked for sharing: a real SDK server on loopback, the official client."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from _mcp_http import serving
from mcp import Client
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

tool_list = importlib.import_module("nativemcp.proxy.external._tool_list")


def _server(ttl_ms: int) -> MCPServer:
    hints = {"tools/list": CacheHint(ttl_ms=ttl_ms, scope="public")}
    server = MCPServer("ttl", cache_hints=hints)  # type: ignore[arg-type]

    @server.tool()
    def first() -> str:
        """The tool listed from the start."""
        return "one"

    return server


def second() -> str:
    """A tool the server adds later, saying nothing (no list_changed)."""
    return "two"


class Clock:
    """The tool lists' clock, moved by the test."""

    def __init__(self) -> None:
        self.ahead = 0.0
        self._real = tool_list.now

    def __call__(self) -> float:
        return float(self._real()) + self.ahead


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    moved = Clock()
    monkeypatch.setattr(tool_list, "now", moved)
    yield moved


@pytest.fixture(params=[60_000, 0])
async def upstream(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[MCPServer, WorkerPool, int]]:
    """The server (its list fresh for the param's ms), a pool using it, the ttl."""
    server = _server(request.param)
    async with serving(server.streamable_http_app()) as base:
        entry = {"url": f"{base}/mcp"}
        async with WorkerPool(builtins=[], mcp_servers={"ttl": entry}) as pool:
            yield server, pool, request.param


async def names(pool: WorkerPool) -> list[str]:
    return sorted(tool.name for tool in await pool.list_tools())


async def test_a_tool_list_is_kept_until_its_ttl_and_read_again_after_unless_the_ttl_is_0(
    upstream: tuple[MCPServer, WorkerPool, int], clock: Clock
) -> None:
    server, pool, ttl = upstream
    with anyio.fail_after(20):
        assert await names(pool) == ["ttl__first"]
        server.add_tool(second)  # silently: only the ttl can bring it
        clock.ahead = ttl / 1000 - 1
        assert await names(pool) == ["ttl__first"]  # still fresh
        clock.ahead = ttl / 1000 + 1 if ttl else 3600
        listed = await names(pool)
    # A ttl of 0 promises nothing (the SDK server's default): not polled.
    assert listed == (["ttl__first", "ttl__second"] if ttl else ["ttl__first"])


@pytest.mark.parametrize("upstream", [60_000], indirect=True)
async def test_a_call_to_a_tool_listed_since_the_ttl_ran_out_finds_it(
    upstream: tuple[MCPServer, WorkerPool, int], clock: Clock
) -> None:
    server, pool, _ = upstream
    server.add_tool(second)
    clock.ahead = 3600
    with anyio.fail_after(20):
        answer = await pool.call_tool("ttl__second", {})
    assert answer.result is not None and not answer.result.is_error, answer


@pytest.mark.parametrize("stateless", [False, True])  # the SDK's path, and the fast path
async def test_serve_marks_its_lists_private_whatever_the_upstream_server_said(
    upstream: tuple[MCPServer, WorkerPool, int], stateless: bool
) -> None:
    _, pool, _ = upstream
    listed: Any
    with anyio.fail_after(20):
        served = http_app(pool, stateless=stateless)
        async with serving(served) as base, Client(f"{base}/mcp") as client:
            listed = await client.list_tools(cache_mode="bypass")
    # The upstream list is public; the hub's is computed per caller (its scopes under
    # OAuth), so a shared cache must never hand it to another client.
    assert [tool.name for tool in listed.tools] == ["first"]  # one server: its own names
    assert listed.cache_scope == "private" and listed.ttl_ms == 0


@pytest.mark.parametrize("upstream", [60_000], indirect=True)
@pytest.mark.parametrize("stateless", [False, True])  # the SDK's path, and the fast path
async def test_a_served_listing_shows_a_tool_added_since_once_the_ttl_runs_out(
    upstream: tuple[MCPServer, WorkerPool, int], clock: Clock, stateless: bool
) -> None:
    """A listing is built once per catalog and reused: a source's new list ends that."""
    server, pool, _ = upstream
    with anyio.fail_after(20):
        served = http_app(pool, stateless=stateless)
        async with serving(served) as base, Client(f"{base}/mcp") as client:
            before = await client.list_tools(cache_mode="bypass")
            again = await client.list_tools(cache_mode="bypass")
            server.add_tool(second)
            clock.ahead = 3600
            after = await client.list_tools(cache_mode="bypass")
    assert [tool.name for tool in before.tools] == [tool.name for tool in again.tools]
    assert [tool.name for tool in before.tools] == ["first"]
    assert sorted(tool.name for tool in after.tools) == ["first", "second"]
