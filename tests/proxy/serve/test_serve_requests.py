"""What `nativemcp serve` over HTTP answers to requests at its edges: every spelling of
a local Host name accepted and no lookalike, a request whose id no client can match
answered with a JSON-RPC error, a request to the client too large for its stream
refused to the tool (an in-process server behind real uvicorn)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import HEADERS, INIT, serving
from mcp import Client

from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


def _pool() -> WorkerPool:
    return WorkerPool(["_serve_servers:server"], in_process=["shapes"], timeout=20)


async def test_host_names_match_without_case_or_a_trailing_dot_and_lookalikes_are_refused() -> None:
    app = http_app(_pool(), allowed_hosts=["MCP.Internal.:*"])
    async with serving(app) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):

            async def status(host: str) -> int:
                reply = await http.post(f"{base}/mcp", json=INIT, headers={**HEADERS, "host": host})
                return reply.status_code

            for host in (
                "LOCALHOST:8000",
                "localhost.:8000",
                "LocalHost.",
                "127.0.0.1:8000",
                "[::1]:8000",
                "mcp.internal:443",
                "MCP.INTERNAL.:443",
            ):
                assert await status(host) == 200, host
            for host in (
                "localhost.evil.test:8000",
                "localhost.evil.test",
                "evil.localhost:8000",
                "xlocalhost:8000",
                "localhost..:8000",
                "127.0.0.1.evil:8000",
                "127.0.0.10:8000",
                "27.0.0.1:8000",
                "[::1].evil:8000",
                "mcp.internal.evil.test:443",
                "evil.mcp.internal:443",
                "mcp.internal",  # allowed with a port only (`:*`)
            ):
                assert await status(host) == 421, host


async def test_a_request_whose_id_is_not_a_string_or_an_integer_gets_an_invalid_request_error() -> (
    None
):
    async with serving(http_app(_pool())) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            opened = await http.post(f"{base}/mcp", json=INIT, headers=HEADERS)
            session = {
                **HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            initialized = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
            reply = await http.post(f"{base}/mcp", content=initialized, headers=session)
            assert reply.status_code == 202
            for raw_id in ('{"a": 1}', "1e400", "1.5", "true", "null", "[1]"):
                body = f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "tools/list"}}'
                reply = await http.post(f"{base}/mcp", content=body.encode(), headers=session)
                assert reply.status_code == 400, raw_id
                answer = reply.json()
                assert answer["id"] is None and answer["error"]["code"] == -32600, raw_id
                assert "id must be a string or an integer" in answer["error"]["message"]
            # Good ids and notifications pass as before, in the same session.
            for raw_id in ("7", '"seven"', "1" + "0" * 30):
                body = f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "tools/list"}}'
                reply = await http.post(f"{base}/mcp", content=body.encode(), headers=session)
                assert reply.status_code == 200, raw_id
                assert "move" in reply.text
            reply = await http.post(f"{base}/mcp", content=initialized, headers=session)
            assert reply.status_code == 202


async def test_a_request_to_the_client_too_large_for_its_stream_fails_the_tool_not_the_stream() -> (
    None
):
    asked: list[int] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        question = params.messages[0].content
        asked.append(len(question.text if isinstance(question, types.TextContent) else ""))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="42"), model="m"
        )

    big = "x" * 5_000_000  # the tool sends it on to the client, as its question
    app = http_app(_pool(), max_body_size=8_000_000)
    async with serving(app) as base:
        with anyio.fail_after(30):
            async with Client(f"{base}/mcp", mode="legacy", sampling_callback=sampling) as client:
                refused = await client.call_tool("ask_model", {"question": big})
                # The session's stream still carries the next call.
                answered = await client.call_tool("ask_model", {"question": "hi"})
    assert refused.is_error
    text = refused.content[0].text  # type: ignore[union-attr]
    assert "the sampling/createMessage request is 5,0" in text
    assert "more than the 1,000,000 serve sends a client" in text
    assert answered.content[0].text == "model says 42"  # type: ignore[union-attr]
    assert asked == [2]


def _legacy_call(name: str) -> dict[str, Any]:
    """A 2025-11-25 ``tools/call`` of ``name``."""
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name}}


def _enveloped_call(name: str) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` of ``name`` (its envelope in ``_meta``)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**_legacy_call(name), "params": {"name": name, "_meta": meta}}


@pytest.mark.parametrize("stateless", [True, False], ids=["fast path", "sdk path"])
@pytest.mark.parametrize(
    ("body", "version"),
    [(_legacy_call, "2025-11-25"), (_enveloped_call, None)],
    ids=["2025-11-25", "2026 envelope without its version header"],
)
async def test_a_routing_header_that_contradicts_the_body_is_refused_with_400_in_every_era(
    stateless: bool, body: Any, version: str | None
) -> None:
    async with (
        serving(http_app(_pool(), stateless=stateless)) as base,
        httpx2.AsyncClient() as http,
    ):
        with anyio.fail_after(30):
            headers = dict(HEADERS)
            if not stateless:  # a 2025-11-25 call needs its session there
                opened = await http.post(f"{base}/mcp/shapes", json=INIT, headers=HEADERS)
                headers["mcp-session-id"] = opened.headers["mcp-session-id"]
                done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await http.post(f"{base}/mcp/shapes", json=done, headers=headers)
            if version is not None:
                headers["mcp-protocol-version"] = version

            async def call(**routing: str) -> httpx2.Response:
                sent = {**headers, **routing}
                return await http.post(f"{base}/mcp/shapes", json=body("whoami"), headers=sent)

            agreeing = await call(**{"mcp-method": "tools/call", "mcp-name": "whoami"})
            named = await call(**{"mcp-method": "tools/call", "mcp-name": "move"})
            method = await call(**{"mcp-method": "tools/list", "mcp-name": "whoami"})
    assert agreeing.status_code == 200 and '"error"' not in agreeing.text, agreeing.text
    for refused, header in ((named, "mcp-name"), (method, "mcp-method")):
        assert refused.status_code == 400, refused.text
        error = refused.json()
        assert error["id"] == 7 and error["error"]["code"] == -32020
        assert error["error"]["message"].startswith(f"{header} header does not match")
