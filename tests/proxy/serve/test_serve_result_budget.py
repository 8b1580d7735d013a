"""``serve --result-budget``: the official SDK client against real serve (Streamable HTTP).

A result over the budget reaches the client cut, with a ``resource_link`` to
``nativemcp://results/<id>``; ``resources/read`` of it answers the whole result and
the listed ``read_result`` tool reads passages of it, for the session (or, under OAuth,
the user) that made the call only; the same on the fast path (stateless); nothing
changes without a budget.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from _issuer import running_issuer
from _mcp_http import serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.cli import main
from nativemcp.proxy.llm import RESULTS_URI, count_tokens
from nativemcp.proxy.serve import Authorization
from nativemcp.proxy.tool_search import ToolProfile
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

_FACT = "ERROR disk quota exceeded on volume zeta-7"
_LOG = "\n".join(
    f"2026-05-01 INFO request {n} served in {n % 97} ms" if n != 9_000 else f"2026-05-01 {_FACT}"
    for n in range(10_000)
)


def _big() -> Server:
    server = Server("big", description="Large results")

    @server.tool
    def read_log() -> str:
        """A server log of 10,000 lines."""
        return _LOG

    @server.tool
    def hello() -> str:
        """A short answer."""
        return "hello"

    return server


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _link(result: types.CallToolResult) -> types.ResourceLink:
    (link,) = [b for b in result.content if isinstance(b, types.ResourceLink)]
    return link


async def _cut_read_and_refused(base: str) -> None:
    # Legacy (initialize) clients each carry an MCP session: the owner of their results.
    # (A 2026-07-28 client without OAuth has none: its result ids are its only key.)
    url = f"{base}/mcp"
    async with Client(url, mode="legacy") as client, Client(url, mode="legacy") as other:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["read_log", "hello", "read_result"]
        short = await client.call_tool("hello", {})
        assert _text(short) == "hello" and not any(
            isinstance(b, types.ResourceLink) for b in short.content
        )
        cut = await client.call_tool("read_log", {})
        assert not cut.is_error
        assert count_tokens(_text(cut)) <= 1000 and _FACT not in _text(cut)
        link = _link(cut)
        assert str(link.uri).startswith(RESULTS_URI) and link.mime_type == "text/plain"
        assert link.size == len(_LOG.encode()) + 1
        result_id = str(link.uri).removeprefix(RESULTS_URI)
        assert f"read_result(id='{result_id}'" in _text(cut)
        # The whole result, as a resource of this session.
        whole = await client.read_resource(str(link.uri))
        (contents,) = whole.contents
        assert isinstance(contents, types.TextResourceContents) and contents.text == _LOG
        found = await client.call_tool("read_result", {"id": result_id, "query": "disk quota"})
        assert not found.is_error and _FACT in _text(found)
        # Another session reads neither.
        with pytest.raises(MCPError, match="no kept result"):
            await other.read_resource(str(link.uri))
        theirs = await other.call_tool("read_result", {"id": result_id, "from_line": 1})
        assert theirs.is_error and "no kept result" in _text(theirs)
        assert "INFO request" not in _text(theirs)


async def test_a_result_over_the_budget_is_cut_linked_and_read_only_by_its_session() -> None:
    pool = WorkerPool([_big()], in_process=["big"], timeout=20)
    async with serving(http_app(pool, result_budget=1000)) as base:
        with anyio.fail_after(60):
            await _cut_read_and_refused(base)


async def _post(http: httpx2.AsyncClient, url: str, method: str, params: Any) -> Any:
    """A 2025-11-25 request as a client of a stateless server sends it (no session)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post(url, headers=headers, content=json.dumps(body).encode())
    data = response.text.partition("data: ")[2] or response.text  # one SSE event, or JSON
    return json.loads(data)


async def test_the_fast_path_cuts_reads_and_links_as_the_sdk_path_does() -> None:
    pool = WorkerPool([_big()], in_process=["big"], timeout=20)
    fast = http_app(pool, stateless=True, result_budget=1000)
    plain = http_app(pool, stateless=True, result_budget=1000, fast_path=False)
    # The pool runs around both apps (an app closes a pool its lifespan started).
    async with (
        pool,
        serving(fast) as one,
        serving(plain) as two,
        httpx2.AsyncClient(timeout=20) as http,
    ):
        with anyio.fail_after(60):
            seen = []
            for base in (one, two):
                url = f"{base}/mcp"
                cut = (await _post(http, url, "tools/call", {"name": "read_log"}))["result"]
                link = cut["content"][-1]
                assert link["type"] == "resource_link" and link["uri"].startswith(RESULTS_URI)
                assert count_tokens(cut["content"][0]["text"]) <= 1000
                read = await _post(http, url, "resources/read", {"uri": link["uri"]})
                assert read["result"]["contents"][0]["text"] == _LOG
                result_id = link["uri"].removeprefix(RESULTS_URI)
                arguments = {"id": result_id, "from_line": 9_001, "to_line": 9_001}
                found = await _post(
                    http, url, "tools/call", {"name": "read_result", "arguments": arguments}
                )
                line = found["result"]["content"][0]["text"].split("\n")[1]
                assert line == f"2026-05-01 {_FACT}"
                shown = cut["content"][0]["text"].rpartition("\n[cut to fit")[0]
                seen.append(len(shown.split("\n")))
                assert _LOG.startswith(shown + "\n")  # whole lines
            # The same cut either way (one rule on every path), but for a line that an
            # id's tokens may cost (each id is random).
            assert abs(seen[0] - seen[1]) <= 1
            assert fast.state.fast_answers() == 3 and plain.state.fast_answers() == 0


async def test_without_a_budget_serve_sends_results_whole_and_lists_no_read_result() -> None:
    pool = WorkerPool([_big()], in_process=["big"], timeout=20)
    async with serving(http_app(pool)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert "read_result" not in names
                whole = await client.call_tool("read_log", {})
                assert _text(whole) == _LOG
                with pytest.raises(MCPError, match="unknown tool 'read_result'"):
                    await client.call_tool("read_result", {"id": "r0000000000000000"})


def test_a_budget_below_the_minimum_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "content-store", "--result-budget", "50"]) == 2
    assert "--result-budget must be a whole number of tokens" in capsys.readouterr().err
    with pytest.raises(ValueError, match="result_budget must be"):
        http_app(WorkerPool([]), result_budget=10)


async def test_under_oauth_a_kept_result_is_its_users_in_any_of_their_clients() -> None:
    async with running_issuer() as issuer:
        pool = WorkerPool([_big()], in_process=["big"], timeout=20)
        auth = Authorization(issuer=issuer.url, audience="nativemcp-test", scopes=())
        app = http_app(pool, auth=auth, result_budget=1000)
        async with (
            serving(app) as base,
            httpx2.AsyncClient() as alice_http,
            httpx2.AsyncClient() as again_http,
            httpx2.AsyncClient() as bob_http,
        ):
            with anyio.fail_after(60):
                # 2026-07-28 clients: no MCP sessions, the verified subject is the owner.
                async with (
                    _client(base, issuer.token("alice"), alice_http) as alice,
                    _client(base, issuer.token("alice"), again_http) as alice_again,
                    _client(base, issuer.token("bob"), bob_http) as bob,
                ):
                    uri = str(_link(await alice.call_tool("read_log", {})).uri)
                    whole = await alice_again.read_resource(uri)
                    assert whole.contents[0].text == _LOG  # type: ignore[union-attr]
                    with pytest.raises(MCPError, match="no kept result"):
                        await bob.read_resource(uri)
                    result_id = uri.removeprefix(RESULTS_URI)
                    theirs = await bob.call_tool("read_result", {"id": result_id})
                    assert theirs.is_error and "no kept result" in _text(theirs)


def _client(base: str, token: str, http: httpx2.AsyncClient) -> Client:
    http.headers["authorization"] = f"Bearer {token}"
    return Client(streamable_http_client(f"{base}/mcp", http_client=http))


async def test_under_code_mode_a_programs_long_output_is_cut_and_read_on() -> None:
    # serve --code-mode --result-budget: read_result is listed beside the three
    # meta-tools, and a program's printed output is a result like any other.
    pool = WorkerPool([_big()], in_process=["big"], timeout=20)
    profile = ToolProfile(code_mode=True)
    async with serving(http_app(pool, result_budget=1000, profile=profile)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", mode="legacy") as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names == ["search_tools", "describe_tools", "run_code", "read_result"]
                # Within the output limit (64 KiB): 1,000 of its lines.
                program = 'print("\\n".join((await big__read_log()).splitlines()[8500:9500]))'
                cut = await client.call_tool("run_code", {"code": program})
                assert not cut.is_error, _text(cut)
                assert _FACT not in _text(cut)
                assert count_tokens(_text(cut)) <= 1000
                result_id = str(_link(cut).uri).removeprefix(RESULTS_URI)
                found = await client.call_tool(
                    "read_result", {"id": result_id, "query": "disk quota"}
                )
    assert not found.is_error and _FACT in _text(found)
