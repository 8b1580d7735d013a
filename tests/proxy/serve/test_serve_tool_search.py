"""``serve --tool-search`` and ``--tools`` / ``--exclude-tools``: the official SDK client
against real serve (Streamable HTTP and stdio, real worker processes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _client_answers import model_says_42
from _mcp_http import serving
from _task_client import create_task, task_result
from mcp import Client, StdioServerParameters

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

TESTS = Path(__file__).parents[2]
SERVERS = ["_serve_servers:server", "_serve_servers:other"]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_tool_search_lists_two_meta_tools_that_find_and_call_any_served_tool() -> None:
    # BM25 alone, so that a query no tool's words match finds none (fused finds five).
    pool = WorkerPool(SERVERS, timeout=20, search_embed=False)
    app = http_app(pool, profile=ToolProfile(search=True))
    async with serving(app) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                listed = (await client.list_tools()).tools
                assert [tool.name for tool in listed] == ["search_tools", "call_tool"]
                assert listed[0].input_schema["required"] == ["query"]

                found = await client.call_tool("search_tools", {"query": "move a point right"})
                assert not found.is_error
                assert found.structured_content is not None
                matches = found.structured_content["matches"]
                assert matches[0]["name"] == "shapes__move"
                assert matches[0]["inputSchema"]["required"] == ["point"]
                assert "1. shapes__move: Move a point right by dx." in _text(found)
                assert "dx?: integer" in _text(found)

                # The same result a direct call gives: typed value, service tags.
                moved = await client.call_tool(
                    "call_tool",
                    {"name": "shapes__move", "arguments": {"point": {"x": 1, "y": 2}, "dx": 3}},
                )
                assert moved.structured_content == {"x": 4, "y": 2}
                service = moved.content[0].meta["io.github.nativemcp/service"]  # type: ignore[index]
                assert service["toolName"] == "move"

                # Tool errors keep their text; progress reaches the caller of call_tool.
                refused = await client.call_tool(
                    "call_tool", {"name": "shapes__refuse", "arguments": {"reason": "no way"}}
                )
                assert refused.is_error and "no way" in _text(refused)
                seen: list[float] = []

                async def on_progress(
                    progress: float, total: float | None, message: str | None
                ) -> None:
                    seen.append(progress)

                counted = await client.call_tool(
                    "call_tool",
                    {"name": "shapes__count", "arguments": {"steps": 3}},
                    progress_callback=on_progress,
                )
                assert not counted.is_error and seen == [1, 2, 3]

                # An unknown name answers the nearest names, as a tool error the model reads.
                unknown = await client.call_tool(
                    "call_tool", {"name": "shapes__mvoe", "arguments": {}}
                )
                assert unknown.is_error
                assert "no tool named 'shapes__mvoe'; the nearest: shapes__move" in _text(unknown)
                missing = await client.call_tool("call_tool", {"arguments": {}})
                assert missing.is_error and "needs 'name'" in _text(missing)
                nothing = await client.call_tool("search_tools", {"query": "zzzz qqqq"})
                assert "No tool matches 'zzzz qqqq' among" in _text(nothing)

            # A tool's request to the client rides the call_tool call (2025-11-25).
            async with Client(
                f"{base}/mcp", sampling_callback=model_says_42, mode="legacy"
            ) as client:
                asked = await client.call_tool(
                    "call_tool", {"name": "shapes__ask_model", "arguments": {"question": "?"}}
                )
                assert _text(asked) == "model says 42"


async def test_call_tool_runs_any_served_tool_as_a_task_for_a_2025_11_25_client() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, profile=ToolProfile(search=True))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", mode="legacy") as client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                execution = listed["call_tool"].execution
                assert execution is not None and execution.task_support == "optional"
                assert listed["search_tools"].execution is None
                # shapes__move declares no task support: through call_tool it runs as one.
                arguments = {"point": {"x": 1, "y": 1}, "dx": 2}
                created = types.CreateTaskResult.model_validate(
                    await create_task(
                        client, "call_tool", {"name": "shapes__move", "arguments": arguments}
                    )
                )
                result = await task_result(client, created.task.task_id)
                assert result.structured_content == {"x": 3, "y": 1}


async def test_a_profile_offers_only_its_globs_and_refuses_calls_to_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    profile = ToolProfile(
        tools=("shapes__*", "other__ping_other", "other__ping"), exclude_tools=("shapes__ask_*",)
    )
    async with serving(http_app(pool, profile=profile)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "shapes__move" in names and "other__ping_other" in names
                assert not {n for n in names if n.startswith("shapes__ask_")}
                with pytest.raises(Exception, match="unknown tool 'shapes__ask_model'"):
                    await client.call_tool("shapes__ask_model", {"question": "?"})
            # The per-server route keeps the tools' own names, under the same profile.
            async with Client(f"{base}/mcp/shapes") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "move" in names and "ask_model" not in names
    # A glob that names no tool (a prefix without "*") was warned of, once, at start.
    warned = [r.getMessage() for r in caplog.records if "matches no tool" in r.getMessage()]
    assert warned == [
        "--tools 'other__ping' matches no tool: a glob matches whole full names "
        "(server__tool); 'other__ping*' matches every name that starts so"
    ]


async def test_search_mode_searches_only_what_the_profile_offers() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    profile = ToolProfile(tools=("shapes__*",), exclude_tools=("shapes__move",), search=True)
    async with serving(http_app(pool, profile=profile)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                found = await client.call_tool(
                    "search_tools", {"query": "move a point", "limit": 50}
                )
                names = [m["name"] for m in (found.structured_content or {})["matches"]]
                assert "shapes__move" not in names
                excluded = await client.call_tool(
                    "call_tool", {"name": "shapes__move", "arguments": {"point": {"x": 0, "y": 0}}}
                )
                assert excluded.is_error and "no tool named 'shapes__move'" in _text(excluded)
                outside = await client.call_tool(
                    "call_tool", {"name": "other__ping_other", "arguments": {}}
                )
                assert outside.is_error


def _stdio(*options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "nativemcp.proxy.cli",
            "serve",
            str(TESTS / "_serve_servers.py:server"),
            *options,
        ],
        cwd=str(TESTS),
    )


async def _names(params: StdioServerParameters) -> list[str]:
    async with Client(params) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


async def test_the_command_line_takes_tools_globs_exactly_and_tool_search() -> None:
    with anyio.fail_after(60):
        # One server: its tools keep their own names; the globs still match full names,
        # and a glob without a wildcard is one name, never a prefix.
        assert await _names(_stdio("--tools", "shapes__ask_user")) == ["ask_user"]
        assert await _names(_stdio("--tools", "shapes__ask")) == []  # no tool is named so
        names = await _names(_stdio("--tools", "shapes__ask_*", "--exclude-tools", "*_model"))
        assert "ask_user" in names and "ask_model" not in names and "move" not in names
        async with Client(_stdio("--tool-search", "--tools", "shapes__corners")) as client:
            listed: Any = [tool.name for tool in (await client.list_tools()).tools]
            assert listed == ["search_tools", "call_tool"]
            found = await client.call_tool("search_tools", {"query": "corners of a square"})
            assert [m["name"] for m in (found.structured_content or {})["matches"]] == [
                "shapes__corners"
            ]
            # Tools go by full names under search; one server's prompts keep their own.
            called = await client.call_tool(
                "call_tool", {"name": "shapes__corners", "arguments": {"size": 1}}
            )
            assert not called.is_error
            prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
            assert "describe" in prompts


@pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="wordllama is not installed (a dependency: the default install has it)",
)
async def test_serve_ranks_the_meta_tools_search_by_meaning_too_unless_search_bm25() -> None:
    with anyio.fail_after(60):
        async with Client(_stdio("--tool-search")) as client:
            found = await client.call_tool("search_tools", {"query": "what is my identity"})
            names = [m["name"] for m in (found.structured_content or {})["matches"]]
            assert names[0] == "shapes__caller"
            # Every tool is ranked by its embedding too: words no tool holds still find 3.
            found = await client.call_tool("search_tools", {"query": "zzzz qqqq", "limit": 3})
            assert len((found.structured_content or {})["matches"]) == 3
        async with Client(_stdio("--tool-search", "--search-bm25")) as client:
            found = await client.call_tool("search_tools", {"query": "zzzz qqqq", "limit": 3})
            assert (found.structured_content or {})["matches"] == []


LEARN = "bake bread tonight"
"""No word of it is in a served tool's text: BM25 alone finds nothing before learning."""


async def _search(client: Client, query: str = LEARN) -> list[str]:
    found = await client.call_tool("search_tools", {"query": query})
    assert found.structured_content is not None
    return [match["name"] for match in found.structured_content["matches"]]


async def test_search_learn_keeps_a_session_s_query_for_the_tool_its_call_tool_names(
    tmp_path: Path,
) -> None:
    pool = WorkerPool(
        SERVERS, timeout=20, search_embed=False, data_dir=tmp_path, builtins=[], search_learn=True
    )
    app = http_app(pool, profile=ToolProfile(search=True))
    corners = {"name": "shapes__corners", "arguments": {"size": 2}}
    async with serving(app) as base:
        with anyio.fail_after(60):
            async with (
                Client(f"{base}/mcp", mode="legacy") as alice,
                Client(f"{base}/mcp", mode="legacy") as bob,
            ):
                assert await _search(alice) == []
                # Bob's call is not the answer to Alice's search (another session).
                assert not (await bob.call_tool("call_tool", corners)).is_error
                assert await _search(bob) == []
                assert not (await alice.call_tool("call_tool", corners)).is_error
                # Learned: whoever words it so next finds the tool Alice called.
                assert await _search(bob) == ["shapes__corners"]
            # A 2026-07-28 request without sign-in is a session of its own: its search
            # and call do not link (an authenticated caller's do).
            async with Client(f"{base}/mcp") as modern:
                assert await _search(modern, "ping the other server")
                assert not (await modern.call_tool("call_tool", corners)).is_error
                assert await _search(modern, "bake bread") == ["shapes__corners"]


async def test_the_command_line_learns_over_stdio_and_keeps_it_in_the_data_folder(
    tmp_path: Path,
) -> None:
    options = ("--tool-search", "--search-bm25", "--search-learn", "--data-dir", str(tmp_path))
    with anyio.fail_after(60):
        async with Client(_stdio(*options)) as client:
            assert await _search(client) == []
            called = await client.call_tool(
                "call_tool", {"name": "shapes__corners", "arguments": {"size": 2}}
            )
            assert not called.is_error
        async with Client(_stdio(*options)) as client:
            assert await _search(client) == ["shapes__corners"]
