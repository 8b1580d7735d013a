"""The agent loop in code mode: ``tool_definitions(provider, code_mode=True)`` gives
the three meta-tools, and ``run_tool_call(..., code_mode=True)`` runs them: a search
by identifiers, the stubs, a program's output or the error that stopped it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _tool_calls import openai_tool_call

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.codemode import STUB_HEADER
from nativemcp.proxy.tool_search import ToolProfile
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


def _notes() -> Server:
    notes = Server("notes", description="Notes kept in memory")
    kept: dict[str, str] = {}

    @notes.tool
    def add_note(title: str, body: str) -> str:
        """Save a new note under a title."""
        kept[title] = body
        return f"saved {title}"

    @notes.tool
    def list_notes() -> list[str]:
        """Every note's title."""
        return sorted(kept)

    return notes


async def test_the_agent_loop_offers_three_meta_tools_and_runs_a_program_through_them() -> None:
    async with WorkerPool([_notes()], in_process=["notes"]) as pool:
        meta = await pool.tool_definitions("openai", code_mode=True)
        # The three meta-tools, and read_result for what a result budget cuts.
        assert [d["function"]["name"] for d in meta] == [
            "search_tools",
            "describe_tools",
            "run_code",
            "read_result",
        ]

        async def run(name: str, arguments: dict[str, Any]) -> str:
            message = await pool.run_tool_call(
                openai_tool_call(name, arguments), provider="openai", code_mode=True
            )
            content: str = message["content"]
            return content

        searched = await run("search_tools", {"query": "save a note", "limit": 1})
        assert "- notes__add_note: Save a new note under a title." in searched
        # What to do next is in search_tools' description, not in every answer.
        assert "describe_tools" in meta[0]["function"]["description"]
        assert "describe_tools" not in searched
        stubs = await run("describe_tools", {"names": ["notes__add_note", "notes__list_notes"]})
        assert "async def notes__add_note(title:str,body:str)->Any:" in stubs
        assert "async def notes__list_notes()->list[str]:" in stubs
        # How to call them is in run_code's description, read once, not in every answer.
        assert STUB_HEADER not in stubs
        assert STUB_HEADER.lstrip("# ") in meta[2]["function"]["description"]
        program = (
            "import asyncio\n"
            "await asyncio.gather(*[notes__add_note(title=t, body='.') for t in 'ba'])\n"
            "print('titles:', await notes__list_notes())\n"
            "len(await notes__list_notes())"
        )
        assert await run("run_code", {"code": program}) == "titles: ['a', 'b']\n2"
        # The error reaches the model as a tool error, after what the program printed.
        failed = json.loads(await run("run_code", {"code": "print('before')\n1 / 0"}))
        assert failed["error"]["message"].startswith("before\nError: ")
        assert failed["error"]["message"].endswith("ZeroDivisionError: division by zero")
        assert failed["error"]["data"] == {"output": "before\n", "calls": []}
        assert "syntax error at line 3, column 1" in await run(
            "run_code", {"code": "x = 1\ny = (\n"}
        )
        assert "needs 'code'" in await run("run_code", {})
        assert "needs 'names'" in await run("describe_tools", {"names": 3})


async def test_a_profile_narrows_what_the_code_mode_meta_tools_reach() -> None:
    async with WorkerPool([_notes()], in_process=["notes"]) as pool:
        only_list = ToolProfile.of(["notes__list_notes"])

        async def run(name: str, arguments: dict[str, Any]) -> str:
            message = await pool.run_tool_call(
                openai_tool_call(name, arguments),
                provider="openai",
                code_mode=True,
                profile=only_list,
            )
            content: str = message["content"]
            return content

        assert "notes__add_note" not in await run("search_tools", {"query": "save a note"})
        assert "is offered here" in await run("describe_tools", {"names": ["notes__add_note"]})
        refused = await run("run_code", {"code": "await notes__add_note(title='x', body='y')"})
        assert "NameError" in refused
        assert await run("run_code", {"code": "await notes__list_notes()"}) == "[]"


async def test_a_programs_output_over_the_result_budget_is_cut_and_read_on_with_read_result() -> (
    None
):
    async with WorkerPool([_notes()], in_process=["notes"], result_budget=300) as pool:
        program = "for n in range(400):\n    print(f'line {n}: the note of the day')"
        message = await pool.run_tool_call(
            openai_tool_call("run_code", {"code": program}), provider="openai", code_mode=True
        )
        cut: str = message["content"]
        assert "line 0: the note of the day" in cut
        assert "line 399:" not in cut
        kept = cut.split("nativemcp://results/")[1].split(":")[0].split()[0]
        read = await pool.run_tool_call(
            openai_tool_call("read_result", {"id": kept, "query": "line 399"}),
            provider="openai",
            code_mode=True,
        )
        assert "line 399: the note of the day" in read["content"]


async def test_code_mode_without_a_result_budget_offers_the_three_meta_tools_alone() -> None:
    async with WorkerPool([_notes()], in_process=["notes"], result_budget=None) as pool:
        meta = await pool.tool_definitions("openai", code_mode=True)
    assert [d["function"]["name"] for d in meta] == ["search_tools", "describe_tools", "run_code"]
