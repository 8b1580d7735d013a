"""`nativemcp serve`: the official SDK client over stdio and Streamable HTTP, against
nativemcp servers running in worker processes (real processes, real sockets)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import HEADERS as _HEADERS
from _mcp_http import INIT as _INIT
from _mcp_http import serving
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import (
    STRUCTURED_RESULT_META_KEY,
    response_from_sdk,
    safe_server_name,
    unwrap,
)
from nativemcp.proxy import WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


TESTS = Path(__file__).parents[2]
SERVERS = ["_serve_servers:server", "_serve_servers:other"]


async def _sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    question = params.messages[0].content
    text = question.text if isinstance(question, types.TextContent) else "?"
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"42 ({text})"),
        model="test-model",
    )


async def _elicitation(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _check_client(client: Client, *, prefix: str) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    move = tools[f"{prefix}move"]
    assert move.output_schema is not None and move.output_schema["type"] == "object"
    assert move.meta is not None
    assert move.meta["io.github.nativemcp/service"]["serverName"] == "shapes"

    # A typed value: structuredContent is its JSON form.
    moved = await client.call_tool(f"{prefix}move", {"point": {"x": 1, "y": 2}, "dx": 3})
    assert not moved.is_error
    assert moved.structured_content == {"x": 4, "y": 2}
    # Calls go through the pool's catalog: each block names the service that made it.
    service = moved.content[0].meta["io.github.nativemcp/service"]  # type: ignore[index]
    assert service == {"serverName": "shapes", "toolName": "move", "backendType": "UserWorker"}
    with pytest.raises(
        MCPError, match=rf"unknown tool '{prefix}mvoe'; did you mean '{prefix}move'"
    ):
        await client.call_tool(f"{prefix}mvoe", {})

    # A typed value whose JSON form differs: the exact value rides in _meta and the
    # nativemcp side rebuilds it.
    corners = await client.call_tool(f"{prefix}corners", {"size": 2})
    assert corners.meta is not None
    assert corners.meta[STRUCTURED_RESULT_META_KEY][2] == {"x": 2, "y": 2}
    rebuilt = response_from_sdk(corners)
    from _serve_servers import Point

    assert unwrap(rebuilt, list[Point])[2] == Point(2, 2)

    # Progress reaches the caller, in order.
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    counted = await client.call_tool(f"{prefix}count", {"steps": 3}, progress_callback=on_progress)
    assert counted.structured_content == {"result": 3}
    assert seen == [(1, 3), (2, 3), (3, 3)]

    # A tool error keeps its message and code.
    refused = await client.call_tool(f"{prefix}refuse", {"reason": "not today"})
    assert refused.is_error
    assert isinstance(refused.content[0], types.TextContent)
    assert "not today" in refused.content[0].text
    assert refused.structured_content == {"code": 4001}

    # Bad arguments are a tool error naming the field, for the model to correct
    # (the client negotiates 2025-11-25 or later; see test_bad_arguments_follow_...).
    bad = await client.call_tool(f"{prefix}move", {"point": {"x": "one"}})
    assert bad.is_error and "point" in bad.content[0].text  # type: ignore[union-attr]


async def _check_features(client: Client, *, prefix: str) -> None:
    resources = (await client.list_resources()).resources
    assert [str(r.uri) for r in resources] == ["shapes://unit"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["shapes://square/{size}"]
    unit = (await client.read_resource("shapes://unit")).contents[0]
    assert isinstance(unit, types.TextResourceContents) and unit.text == '{"x":1,"y":1}'
    square = (await client.read_resource("shapes://square/7")).contents[0]
    assert isinstance(square, types.TextResourceContents) and "side 7" in square.text
    with pytest.raises(MCPError, match="unknown resource"):
        await client.read_resource("shapes://nothing")

    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == [f"{prefix}describe"]
    prompt = await client.get_prompt(f"{prefix}describe", {"shape": "star"})
    content = prompt.messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "Describe a star in a plain tone."
    completion = await client.complete(
        types.PromptReference(type="ref/prompt", name=f"{prefix}describe"),
        {"name": "shape", "value": "s"},
    )
    assert completion.completion.values == ["square", "star"]


async def _check_client_requests(client: Client, *, prefix: str) -> None:
    sampled = await client.call_tool(f"{prefix}ask_model", {"question": "meaning?"})
    assert isinstance(sampled.content[0], types.TextContent)
    assert sampled.content[0].text == "model says 42 (meaning?)"
    asked = await client.call_tool(f"{prefix}ask_user", {})
    assert isinstance(asked.content[0], types.TextContent)
    assert asked.content[0].text == "hello Ada"


async def test_sdk_client_over_stdio_lists_calls_and_reads() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nativemcp.proxy.cli", "serve", str(TESTS / "_serve_servers.py:server")],
        cwd=str(TESTS),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            # The server's service context is the MCP instructions.
            assert client.instructions == "Shapes live on an integer grid."
            await _check_client(client, prefix="")
            await _check_features(client, prefix="")
        # Server-to-client requests ride a call's stream on the handshake-era protocol
        # (2025-11-25); the 2026-07-28 era replaces them with InputRequiredResult.
        async with Client(
            params, sampling_callback=_sampling, elicitation_callback=_elicitation, mode="legacy"
        ) as client:
            await _check_client(client, prefix="")
            await _check_client_requests(client, prefix="")


async def test_sdk_client_over_http_per_server_route_and_catalog_route() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp/shapes") as client:
                await _check_client(client, prefix="")
                await _check_features(client, prefix="")
            async with Client(
                f"{base}/mcp",
                sampling_callback=_sampling,
                elicitation_callback=_elicitation,
                mode="legacy",
            ) as client:
                assert client.instructions == "shapes: Shapes live on an integer grid."
                names = {tool.name for tool in (await client.list_tools()).tools}
                # The user's own servers: not built-ins, not prefixed as one.
                assert {"shapes__move", "other__ping_other"} <= names
                # Exactly the pool's catalog, under the same full names.
                assert names == {tool.name for tool in await pool.list_tools()}
                await _check_client(client, prefix="shapes__")
                await _check_features(client, prefix="shapes__")
                await _check_client_requests(client, prefix="shapes__")


async def test_http_session_id_is_the_call_scope() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, ["shapes"])) as base:
        with anyio.fail_after(60):
            # Sessions are the handshake era's (the 2026-07-28 era has none).
            first_client = Client(f"{base}/mcp/shapes", mode="legacy")
            second_client = Client(f"{base}/mcp/shapes", mode="legacy")
            async with first_client as first, second_client as second:
                a = await first.call_tool("whoami", {})
                b = await second.call_tool("whoami", {})
    assert isinstance(a.content[0], types.TextContent)
    assert isinstance(b.content[0], types.TextContent)
    # Two clients at once: each call carries its own session, not shared server state.
    assert a.content[0].text != b.content[0].text
    assert a.content[0].text.endswith("/None")


async def test_http_refuses_rebinding_hosts_wrong_tokens_and_big_bodies() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    app = http_app(pool, token="s3cret", allowed_hosts=["mcp.internal:*"], max_body_size=2000)
    async with serving(app) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(60):
            auth = {**_HEADERS, "authorization": "Bearer s3cret"}
            missing = await http.post(f"{base}/mcp", json=_INIT, headers=_HEADERS)
            assert missing.status_code == 401
            assert missing.headers["www-authenticate"].startswith("Bearer")
            wrong = await http.post(
                f"{base}/mcp", json=_INIT, headers={**_HEADERS, "authorization": "Bearer nope"}
            )
            assert wrong.status_code == 401
            ok = await http.post(f"{base}/mcp", json=_INIT, headers=auth)
            assert ok.status_code == 200
            # The scheme is case-insensitive; the token is not; no other scheme passes.
            for header, status in [
                ("bearer s3cret", 200),
                ("BEARER s3cret", 200),
                ("bearer S3CRET", 401),
                ("Basic s3cret", 401),
                ("s3cret", 401),
            ]:
                reply = await http.post(
                    f"{base}/mcp", json=_INIT, headers={**_HEADERS, "authorization": header}
                )
                assert reply.status_code == status, header
            # Each check alone: a broken Origin check must not hide behind the Host one.
            bad_host = await http.post(
                f"{base}/mcp", json=_INIT, headers={**auth, "host": "evil.example.com"}
            )
            assert bad_host.status_code == 421
            # A local name with anything after its port is no Host (the SDK's `host:*`
            # check alone reads it as a prefix).
            odd_host = await http.post(
                f"{base}/mcp", json=_INIT, headers={**auth, "host": "127.0.0.1:1; evil"}
            )
            assert odd_host.status_code == 421
            bad_origin = await http.post(
                f"{base}/mcp", json=_INIT, headers={**auth, "origin": "http://evil.example.com"}
            )
            assert bad_origin.status_code == 403
            # The token guards every method, not only the POSTs that carry calls.
            for method in ("GET", "DELETE"):
                anonymous = await http.request(method, f"{base}/mcp", headers=_HEADERS)
                assert anonymous.status_code == 401, method
            allowed = await http.post(
                f"{base}/mcp", json=_INIT, headers={**auth, "host": "mcp.internal:8000"}
            )
            assert allowed.status_code == 200
            big = {**_INIT, "params": {**_INIT["params"], "padding": "x" * 5000}}
            too_big = await http.post(f"{base}/mcp", json=big, headers=auth)
            assert too_big.status_code == 413
            unknown = await http.post(f"{base}/mcp/nothing", json=_INIT, headers=auth)
            assert unknown.status_code == 404
            assert "shapes" in unknown.text


async def test_stateless_http_serves_each_request_alone() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, stateless=True)) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(60):
            reply = await http.post(f"{base}/mcp/shapes", json=_INIT, headers=_HEADERS)
            assert reply.status_code == 200
            assert "mcp-session-id" not in reply.headers
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "move", "arguments": {"point": {"x": 0, "y": 0}}},
            }
            headers = {**_HEADERS, "mcp-protocol-version": "2025-11-25"}
            moved = await http.post(f"{base}/mcp/shapes", json=call, headers=headers)
            assert moved.status_code == 200
            assert '"structuredContent":{"x":1,"y":0}' in moved.text.replace(" ", "")


async def test_a_server_named_by_any_config_key_has_its_own_route() -> None:
    """/mcp/<key> for the key as written (percent-encoded, slashes kept) and for the
    part of full tool names that stands for it."""
    time = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    keys = ["My Time", "github.com/acme/tool"]
    pool = WorkerPool(mcp_servers={key: time for key in keys}, timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            for path in ["My%20Time", "github.com/acme/tool", safe_server_name("My Time")]:
                async with Client(f"{base}/mcp/{path}", mode="legacy") as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    assert "get_current_time" in names, path
            async with Client(f"{base}/mcp", mode="legacy") as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
    assert f"{safe_server_name('My Time')}__get_current_time" in listed


async def test_bad_arguments_follow_the_negotiated_version() -> None:
    """Up to 2025-06-18 arguments that fail the schema are JSON-RPC -32602; from
    2025-11-25 they are a tool error the model reads and can correct (SEP-1303)."""
    pool = WorkerPool(SERVERS, timeout=20)
    bad = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "corners", "arguments": {"size": "big"}},
    }
    async with serving(http_app(pool, stateless=True)) as base, httpx2.AsyncClient() as http:
        with anyio.fail_after(60):
            replies = {}
            for version in ("2025-06-18", "2025-11-25"):
                headers = {**_HEADERS, "mcp-protocol-version": version}
                reply = await http.post(f"{base}/mcp/shapes", json=bad, headers=headers)
                assert reply.status_code == 200
                replies[version] = _rpc_body(reply.text)
    old = replies["2025-06-18"]
    assert old["error"]["code"] == -32602 and "size" in old["error"]["message"]
    new = replies["2025-11-25"]["result"]
    assert new["isError"] is True and "size" in new["content"][0]["text"]


def _rpc_body(text: str) -> dict[str, Any]:
    """The JSON-RPC message of a Streamable HTTP reply (plain JSON or one SSE event)."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            found: dict[str, Any] = json.loads(line[5:])
            return found
    body: dict[str, Any] = json.loads(text)
    return body


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_subscribers_hear_that_a_resource_changed() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    updated: list[str] = []
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            heard.set()

    async with serving(http_app(pool, ["shapes"])) as base:
        with anyio.fail_after(60):
            # Subscriptions are the handshake era's (2026-07-28 has subscriptions/listen).
            async with Client(f"{base}/mcp/shapes", mode="legacy", message_handler=on_message) as c:
                await c.subscribe_resource("shapes://unit")
                await c.call_tool("touch", {"uri": "shapes://other"})  # not subscribed
                await c.call_tool("touch", {"uri": "shapes://unit"})
                await heard.wait()
                await c.unsubscribe_resource("shapes://unit")
                await c.call_tool("touch", {"uri": "shapes://unit"})
    assert updated == ["shapes://unit"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_log_messages_follow_the_clients_level() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    received: list[tuple[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append((params.level, params.data))

    async with serving(http_app(pool, ["shapes"])) as base:
        with anyio.fail_after(60):
            # logging/setLevel is the handshake era's (2026-07-28 opts in per request).
            async with Client(f"{base}/mcp/shapes", mode="legacy", logging_callback=on_log) as c:
                await c.call_tool("count", {"steps": 2})
                assert received == [("info", "counted 1"), ("info", "counted 2")]
                await c.set_logging_level("warning")
                await c.call_tool("count", {"steps": 2})
                assert len(received) == 2
