"""``Mcp-Param-*`` headers (2026-07-28 over Streamable HTTP): a call's headers are checked
against the schema the catalog serves, without listing every tool for each call.

The official SDK checks them before the call; where the server gives it no lookup, it
lists all the tools through the server's ``tools/list`` handler for every call with
arguments (measured: about a quarter of ``serve``'s CPU per call). The listing is
counted by wrapping the real pool's ``list_tools``; everything else runs for real.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest
from _mcp_http import serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import McpBridge, WorkerPool, http_app
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


def _counting(pool: WorkerPool) -> list[int]:
    """Count the pool's catalog reads (a listing's, and a call's of a tool not held)."""
    reads = [0]
    list_tools = pool.list_tools

    async def counted() -> Any:
        reads[0] += 1
        return await list_tools()

    pool.list_tools = counted  # type: ignore[method-assign]
    return reads


async def _relisted(pool: WorkerPool) -> None:
    """Kill the routed server's worker and call until it has restarted, listing anew."""
    handle = pool.handles["routed"]
    listed = handle.tools
    os.kill(handle.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    with anyio.fail_after(20):
        while handle.tools is listed:  # restarted on the next call, listing anew
            with contextlib.suppress(Exception):  # the call that met the crash
                await pool.call_tool("routed__fetch", {"region": "eu", "key": "a"})


async def test_calls_with_their_headers_run_from_the_catalog_as_listed() -> None:
    pool = WorkerPool(["_serve_servers:routed"], timeout=20)
    async with serving(http_app(pool, stateless=True)) as base:
        with anyio.fail_after(60):
            reads = _counting(pool)
            async with Client(f"{base}/mcp") as client:
                assert client.protocol_version == "2026-07-28"
                listed = await client.list_tools()  # the client learns which header to send
                schema = listed.tools[0].input_schema
                assert schema["properties"]["region"]["x-mcp-header"] == "Region"
                before = reads[0]
                for key in ("a", "b", "c"):
                    result = await client.call_tool("fetch", {"region": "eu", "key": key})
                    assert not result.is_error
                    assert result.content[0].text == f"eu/{key}"  # type: ignore[union-attr]
                # No read per call: the call and the SDK's header check both find the
                # tool in the catalog as the listing read it (no source changed since).
                assert reads[0] == before


async def test_a_header_that_disagrees_with_its_argument_is_refused() -> None:
    pool = WorkerPool(["_serve_servers:routed"], timeout=20)

    async def tamper(request: httpx2.Request) -> None:
        if "mcp-param-region" in request.headers:
            request.headers["mcp-param-region"] = "us"

    async with (
        serving(http_app(pool, stateless=True)) as base,
        httpx2.AsyncClient(event_hooks={"request": [tamper]}) as http,
    ):
        with anyio.fail_after(60):
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport) as client:
                await client.list_tools()
                with pytest.raises(MCPError, match="Mcp-Param-Region"):
                    await client.call_tool("fetch", {"region": "eu", "key": "a"})
                # The refusal is the request's alone: the next call goes through.
                result = await client.call_tool("fetch", {"region": "us", "key": "b"})
                assert result.content[0].text == "us/b"  # type: ignore[union-attr]


async def test_a_schema_is_not_given_from_before_its_source_relisted() -> None:
    async with WorkerPool(["_serve_servers:routed"], timeout=20) as pool, McpBridge(pool) as bridge:
        schema = bridge.tools.tool_input_schema("fetch")
        assert schema is not None
        assert schema["properties"]["region"]["x-mcp-header"] == "Region"
        assert bridge.tools.tool_input_schema("missing") is None
        await _relisted(pool)
        # The restarted worker listed its tools anew: until a listing or a call reads
        # the catalog again, no schema is given (the SDK skips that call's check).
        assert bridge.tools.tool_input_schema("fetch") is None


async def test_a_call_reads_the_catalog_again_only_for_a_name_not_held_or_a_relisted_source() -> (
    None
):
    async with WorkerPool(["_serve_servers:routed"], timeout=20) as pool, McpBridge(pool) as bridge:
        reads = _counting(pool)  # the bridge read it once as it started
        held = await bridge.tools.served_tool("fetch", apps=False)
        assert held.name == "routed__fetch" and reads[0] == 0
        with pytest.raises(MCPError, match="unknown tool 'fetc'; did you mean 'fetch'"):
            await bridge.tools.served_tool("fetc", apps=False)
        assert reads[0] == 1  # a name not held: read again, in case a server came back
        await _relisted(pool)
        relisted = await bridge.tools.served_tool("fetch", apps=False)
        assert reads[0] == 2 and relisted is not held  # the source relisted: read again
        assert await bridge.tools.served_tool("fetch", apps=False) is relisted
        assert reads[0] == 2


async def test_routing_headers_that_disagree_with_the_body_are_refused() -> None:
    # Mcp-Method and Mcp-Name carry the method and tool for a router at the edge (2026-07-28):
    # one that disagrees with the body could send a call past the router's rules.
    pool = WorkerPool(["_serve_servers:routed"], timeout=20)
    told: dict[str, str] = {}

    async def tamper(request: httpx2.Request) -> None:
        for header, value in told.items():
            if header in request.headers:
                request.headers[header] = value

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    hooks: dict[str, list[Callable[..., Any]]] = {"request": [tamper], "response": [record]}
    async with (
        serving(http_app(pool, stateless=True)) as base,
        httpx2.AsyncClient(event_hooks=hooks) as http,
    ):
        with anyio.fail_after(60):
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport) as client:
                await client.list_tools()
                for header, value in (("mcp-name", "another_tool"), ("mcp-method", "ping")):
                    told.clear()
                    told[header] = value
                    with pytest.raises(MCPError, match=f"{header} header does not match"):
                        await client.call_tool("fetch", {"region": "eu", "key": "a"})
                    assert statuses[-1] == 400
                told.clear()
                result = await client.call_tool("fetch", {"region": "eu", "key": "a"})
                assert result.content[0].text == "eu/a"  # type: ignore[union-attr]


async def test_search_tools_and_call_tool_read_the_catalog_as_last_read() -> None:
    async with (
        WorkerPool(["_serve_servers:routed"], timeout=20) as pool,
        McpBridge(pool, profile=ToolProfile(search=True)) as bridge,
        Client(bridge.server()) as client,
    ):
        reads = _counting(pool)  # the bridge read it once as it started
        found = await client.call_tool("search_tools", {"query": "fetch"})
        assert found.structured_content is not None
        assert [m["name"] for m in found.structured_content["matches"]] == ["routed__fetch"]
        arguments = {"name": "routed__fetch", "arguments": {"region": "eu", "key": "a"}}
        assert not (await client.call_tool("call_tool", arguments)).is_error
        assert reads[0] == 0
        await _relisted(pool)
        before = reads[0]
        assert not (await client.call_tool("call_tool", arguments)).is_error
        assert reads[0] == before + 1  # the source relisted: read again, once
