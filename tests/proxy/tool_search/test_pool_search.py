"""`WorkerPool.search_tools`: every source ranked together, the index following the
catalog, and the agent loop's two meta-tools (`tool_definitions(search=True)`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _servers import notes_server
from _tool_calls import openai_tool_call

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.tool_search import ToolProfile
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio]


def _notes() -> Server:
    return notes_server()


async def test_search_ranks_every_source_worker_replicas_in_process_and_external() -> None:
    time_server = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    }
    with anyio.fail_after(60):
        async with WorkerPool(
            [_notes(), "_serve_servers:server", "_serve_servers:other"],
            in_process=["notes"],
            replicas={"_serve_servers:other": 2},
            mcp_servers={"time": time_server},
            search_embed=False,  # BM25: a tool no query word matches is not returned
        ) as pool:
            found = await pool.search_tools("save a note", 1)
            assert [m.name for m in found] == ["notes__add_note"]
            assert found[0].input_schema["required"] == ["title", "body"]
            assert (await pool.search_tools("move a point to the right"))[0].name == "shapes__move"
            assert (await pool.search_tools("ping the other server"))[0].name == "other__ping_other"
            best = (await pool.search_tools("current time in a timezone", 1))[0]
            assert best.name == "time__get_current_time"
            assert best.server == "time"
            # A profile keeps the tools it offers; the rest is not searched for it.
            only_notes = ToolProfile(tools=("notes__*",))
            assert await pool.search_tools("current time", profile=only_notes) == []
            with pytest.raises(ValueError, match="from 1 to 50"):
                await pool.search_tools("time", 0)


async def test_the_index_follows_the_catalog_when_a_server_lists_other_tools() -> None:
    notes = _notes()
    async with WorkerPool([notes], in_process=["notes"], search_embed=False) as pool:
        assert await pool.search_tools("archive old notes") == []
        before = pool.tool_index()

        @notes.tool
        def archive_notes(days: int) -> int:
            """Archive the notes older than some days."""
            return 0

        # Until the server's tools are read again, the catalog and the index stand.
        assert pool.tool_index() is before
        await pool.server("notes").list_tools()
        found = await pool.search_tools("archive old notes")
        assert [m.name for m in found][:1] == ["notes__archive_notes"]
        assert pool.tool_index() is not before
        assert pool.tool_index() is pool.tool_index()  # rebuilt once, not per search


RAW_SERVER = Path(__file__).parents[2] / "_raw_mcp_server.py"


async def test_an_external_server_that_says_its_tools_changed_is_listed_and_searched_anew() -> None:
    echo = {"name": "echo", "description": "Echo text back.", "inputSchema": {"type": "object"}}
    forecast = {
        "name": "forecast",
        "description": "Tomorrow's weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    hidden = {
        "name": "hidden",
        "description": "Weather, but filtered out.",
        "inputSchema": forecast["inputSchema"],
    }
    config = {"tools": [echo], "changed_tools": [echo, forecast, hidden], "change_tools_on": "echo"}
    entry = {
        "command": sys.executable,
        "args": [str(RAW_SERVER), json.dumps(config)],
        "disabledTools": ["hidden"],
    }
    with anyio.fail_after(30):
        async with WorkerPool(mcp_servers={"raw": entry}, builtins=[], search_embed=False) as pool:
            assert await pool.search_tools("weather in a city") == []
            relisted = anyio.Event()
            pool._handles["raw"].on_tools_changed = relisted.set  # type: ignore[attr-defined]
            # The call's answer follows `notifications/tools/list_changed`.
            await pool.call_tool("raw__echo", {"text": "x"})
            await relisted.wait()
            names = [tool.name for tool in await pool.list_tools()]
            assert names == ["raw__echo", "raw__forecast"]  # the entry's filter still applies
            found = await pool.search_tools("weather in a city")
            assert [match.name for match in found] == ["raw__forecast"]


async def test_an_sdk_server_on_a_subscription_is_listed_and_searched_anew(
    tmp_path: Path,
) -> None:
    # The official SDK's server speaks 2026-07-28: list changes come only to a
    # `subscriptions/listen` stream.
    entry = {
        "command": sys.executable,
        "args": [str(RAW_SERVER.with_name("_external_server.py")), str(tmp_path)],
    }
    with anyio.fail_after(30):
        async with WorkerPool(mcp_servers={"ext": entry}, builtins=[], search_embed=False) as pool:
            before = await pool.search_tools("weather forecast")
            assert "ext__forecast" not in [match.name for match in before]
            relisted = anyio.Event()
            pool._handles["ext"].on_tools_changed = relisted.set  # type: ignore[attr-defined]
            await pool.call_tool("ext__add-forecast", {})
            await relisted.wait()
            assert "ext__forecast" in [tool.name for tool in await pool.list_tools()]
            found = await pool.search_tools("weather forecast")
            assert [match.name for match in found][:1] == ["ext__forecast"]


async def test_the_agent_loop_gets_two_meta_tools_and_run_tool_call_runs_them() -> None:
    async with WorkerPool([_notes()], in_process=["notes"]) as pool:
        full = await pool.tool_definitions("anthropic")
        meta = await pool.tool_definitions("anthropic", search=True)
        # read_result reads what a cut result left out (the pool's default budget).
        assert [d["name"] for d in meta] == ["search_tools", "call_tool", "read_result"]
        assert meta[0]["input_schema"]["required"] == ["query"]
        assert len(full) == 3 and full[0]["name"] == "notes__add_note"

        searched = await pool.run_tool_call(
            openai_tool_call("search_tools", {"query": "save a note", "limit": 1}),
            provider="openai",
        )
        assert searched["tool_call_id"] == "call_1"
        assert "notes__add_note" in searched["content"]
        assert "title: string" in searched["content"]

        called = await pool.run_tool_call(
            openai_tool_call(
                "call_tool", {"name": "notes__add_note", "arguments": {"title": "a", "body": "b"}}
            ),
            provider="openai",
        )
        assert "saved a" in called["content"]

        unknown = await pool.run_tool_call(
            openai_tool_call("call_tool", {"name": "notes__add_notes", "arguments": {}}),
            provider="openai",
        )
        # An unknown name answers with the nearest names, for the model to correct.
        assert "no tool named" in unknown["content"]
        assert "did you mean notes__add_note" in unknown["content"]
        missing = await pool.run_tool_call(
            openai_tool_call("call_tool", {"name": "notes__add_note", "arguments": {}}),
            provider="openai",
        )
        assert "missing required field `title`" in missing["content"]
        bad = await pool.run_tool_call(
            openai_tool_call("search_tools", {"limit": 3}), provider="openai"
        )
        assert "needs 'query'" in bad["content"]


async def test_a_profile_limits_the_definitions_the_search_and_the_calls_of_the_agent_loop() -> (
    None
):
    async with WorkerPool([_notes()], in_process=["notes"]) as pool:
        only_add = ToolProfile(tools=("notes__add_*",))
        listed = await pool.tool_definitions("openai", profile=only_add)
        assert [d["function"]["name"] for d in listed] == ["notes__add_note", "read_result"]
        through_search = ToolProfile(tools=("notes__add_*",), search=True)
        meta = await pool.tool_definitions("openai", profile=through_search)
        names = [d["function"]["name"] for d in meta]
        assert names == ["search_tools", "call_tool", "read_result"]

        query = {"query": "save a note, or every title"}
        everything = await pool.run_tool_call(
            openai_tool_call("search_tools", query), provider="openai"
        )
        assert "notes__list_notes" in everything["content"]
        searched = await pool.run_tool_call(
            openai_tool_call("search_tools", query), provider="openai", profile=only_add
        )
        assert "notes__add_note" in searched["content"]
        assert "notes__list_notes" not in searched["content"]
        for call in (
            openai_tool_call("notes__list_notes", {}),
            openai_tool_call("call_tool", {"name": "notes__list_notes", "arguments": {}}),
        ):
            (refused,) = await pool.run_tool_calls([call], provider="openai", profile=only_add)
            assert "no tool named 'notes__list_notes' is offered here" in refused["content"]
        # Without the profile the same call runs.
        (ran,) = await pool.run_tool_calls(
            [openai_tool_call("notes__list_notes", {})], provider="openai"
        )
        assert "offered" not in ran["content"]


def _long_names() -> Server:
    long = Server("a-server-with-a-rather-long-name", description="Long names")

    @long.tool(name="summarize_the_quarterly_revenue_report_for_the_board_meeting")
    def summarize() -> str:
        """Summarize the quarterly revenue report."""
        return "summary"

    return long


async def test_names_over_64_characters_are_shortened_the_same_way_by_every_pool() -> None:
    full = (
        "a-server-with-a-rather-long-name__"
        "summarize_the_quarterly_revenue_report_for_the_board_meeting"
    )
    seen: list[str] = []
    for _ in range(2):
        async with WorkerPool(
            [_long_names()], in_process=["a-server-with-a-rather-long-name"]
        ) as pool:
            declared, reader = await pool.tool_definitions("anthropic")
            assert reader["name"] == "read_result"
            assert len(declared["name"]) <= 64 and declared["name"] != full
            seen.append(declared["name"])
            # The search gives the full name; call_tool takes it; the short name maps back.
            (match,) = await pool.search_tools("quarterly revenue")
            assert match.name == full
            for name, arguments in ((declared["name"], {}), ("call_tool", {"name": full})):
                message = await pool.run_tool_call(
                    {"type": "tool_use", "id": "t1", "name": name, "input": arguments},
                    provider="anthropic",
                )
                assert not message["is_error"], message
                assert message["content"] == [{"type": "text", "text": "summary"}]
    assert seen[0] == seen[1]


async def test_anthropic_gets_every_definition_deferred_behind_its_own_tool_search() -> None:
    from anthropic.types import ToolUnionParam
    from pydantic import TypeAdapter

    async with WorkerPool([_notes()], in_process=["notes"]) as pool:
        plain = await pool.tool_definitions("anthropic")
        deferred = await pool.tool_definitions("anthropic", defer_loading=True)
        assert deferred[0] == {
            "type": "tool_search_tool_bm25_20251119",
            "name": "tool_search_tool_bm25",
        }
        # read_result is never deferred: a cut result's last line asks for it by name.
        assert deferred[1:-1] == [{**d, "defer_loading": True} for d in plain[:-1]]
        assert deferred[-1] == plain[-1] and plain[-1]["name"] == "read_result"
        for definition in deferred:
            TypeAdapter(ToolUnionParam).validate_python(definition)
        for wrong in ({"provider": "openai"}, {"provider": "anthropic", "search": True}):
            with pytest.raises(ValueError, match="defer_loading is Anthropic's"):
                await pool.tool_definitions(defer_loading=True, **wrong)


@pytest.mark.anyio_backends("asyncio")  # serve runs on asyncio
async def test_the_index_is_built_in_a_worker_thread_for_the_pool_and_for_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from _mcp_http import serving
    from mcp import Client

    import nativemcp.proxy._loop_index as loop_index
    from nativemcp.proxy import http_app
    from nativemcp.proxy.tool_search import ToolIndex

    built: list[int] = []

    class Noted(ToolIndex):  # the real index, noting the thread that builds it
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built.append(threading.get_ident())
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(loop_index, "ToolIndex", Noted)
    loop = threading.get_ident()
    with anyio.fail_after(60):
        async with WorkerPool([_notes(), "_serve_servers:server"], in_process=["notes"]) as pool:
            found = await pool.search_tools("save a note")
            assert [match.name for match in found][:1] == ["notes__add_note"]
        # serve's search_tools (under --tool-search) reads the same index.
        pool = WorkerPool([_notes(), "_serve_servers:server"], in_process=["notes"])
        app = http_app(pool, profile=ToolProfile(search=True))
        async with serving(app) as base, Client(f"{base}/mcp") as client:
            answer = await client.call_tool("search_tools", {"query": "save a note"})
            assert not answer.is_error and "notes__add_note" in str(answer.content)
    assert len(built) == 2 and loop not in built
