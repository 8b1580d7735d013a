"""A catalog that learns its users' words (``search_learn``): a search followed by a call
in the same session keeps the query as words of the tool called, in the data folder's
SQLite file or in PostgreSQL, for the next session and the next pool."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from _servers import notes_server
from _tool_calls import openai_tool_call

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.tool_search import LEARNED_FILE, LEARNED_TABLE, _learning
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio]

QUERY = "jot something down for later"
"""No word of it is in any tool's text: BM25 alone finds nothing before it is learned."""


def _notes() -> Server:
    notes = notes_server()

    @notes.tool
    def refuse(reason: str) -> str:
        """Answer with an error."""
        raise ValueError(reason)

    return notes


def _pool(data_dir: Path | None, database_url: str | None = None) -> WorkerPool:
    return WorkerPool(
        [_notes()],
        in_process=["notes"],
        builtins=[],
        data_dir=data_dir,
        database_url=database_url,
        search_embed=False,  # BM25 alone: before learning, the query finds nothing
        search_learn=True,
    )


async def _say(pool: WorkerPool, owner: str, name: str, arguments: dict[str, Any]) -> str:
    message = await pool.run_tool_call(
        openai_tool_call(name, arguments), provider="openai", result_owner=owner
    )
    return str(message["content"])


async def _found(pool: WorkerPool, query: str = QUERY) -> list[str]:
    return [match.name for match in await pool.search_tools(query, 3)]


async def test_a_search_then_a_call_teaches_the_query_to_the_next_session_and_pool(
    tmp_path: Path,
) -> None:
    add = {"name": "notes__add_note", "arguments": {"title": "milk", "body": "buy"}}
    with anyio.fail_after(60):
        async with _pool(tmp_path) as pool:
            assert await _found(pool) == []
            assert "No tool matches" in await _say(pool, "alice", "search_tools", {"query": QUERY})
            assert "saved milk" in await _say(pool, "alice", "call_tool", add)
            # The next search worded so, by anyone, finds the tool called.
            assert await _found(pool) == ["notes__add_note"]
            assert "notes__add_note" in await _say(pool, "bob", "search_tools", {"query": QUERY})
        # Kept in the data folder: a new pool over it knows the words.
        async with _pool(tmp_path) as again:
            assert await _found(again, "jot down") == ["notes__add_note"]
    with sqlite3.connect(tmp_path / LEARNED_FILE) as conn:
        rows = conn.execute(f"SELECT tool, query, uses FROM {LEARNED_TABLE}").fetchall()
    assert rows == [("notes__add_note", QUERY, 1)]


async def test_only_the_searching_session_s_next_successful_call_learns_once(
    tmp_path: Path,
) -> None:
    listing = {"name": "notes__list_notes", "arguments": {}}
    with anyio.fail_after(60):
        async with _pool(tmp_path) as pool:
            await _say(pool, "alice", "search_tools", {"query": QUERY})
            # Another session's call is not the answer to alice's search.
            await _say(pool, "bob", "call_tool", listing)
            assert await _found(pool) == []
            # A call that fails teaches nothing, and the search still waits.
            refused = await _say(
                pool, "alice", "call_tool", {"name": "notes__refuse", "arguments": {"reason": "x"}}
            )
            assert "x" in refused
            assert await _found(pool) == []
            await _say(pool, "alice", "call_tool", listing)
            assert await _found(pool) == ["notes__list_notes"]
            # One search teaches one call: the next call of alice's learns nothing more.
            await _say(pool, "alice", "call_tool", {"name": "notes__add_note", "arguments": {}})
            assert await _found(pool) == ["notes__list_notes"]
            # A paragraph is not a user's words for a task: it is not kept.
            long_query = "note " * 60
            await _say(pool, "carol", "search_tools", {"query": long_query})
            assert await pool.learn_call("carol", "notes__add_note") is False


async def test_search_learn_needs_a_place_and_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"search_learn keeps .* give data_dir"):
        WorkerPool([_notes()], in_process=["notes"], builtins=[], search_learn=True)
    with pytest.raises(TypeError, match="search_learn must be True or False, not 'yes'"):
        WorkerPool(
            [_notes()],
            in_process=["notes"],
            data_dir=tmp_path,
            builtins=[],
            search_learn="yes",  # type: ignore[arg-type]
        )
    # Off (the default), nothing is kept and no file is made.
    async with WorkerPool(
        [_notes()], in_process=["notes"], data_dir=tmp_path, builtins=[], search_embed=False
    ) as pool:
        await _say(pool, "alice", "search_tools", {"query": QUERY})
        await _say(pool, "alice", "call_tool", {"name": "notes__list_notes", "arguments": {}})
        assert await _found(pool) == []
    assert not (tmp_path / LEARNED_FILE).exists()


async def test_a_place_that_cannot_be_written_is_logged_and_the_call_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / LEARNED_FILE).mkdir()  # a folder where the SQLite file should be
    caplog.set_level(logging.WARNING, "nativemcp.tool_search")
    with anyio.fail_after(60):
        async with _pool(tmp_path) as pool:
            await _say(pool, "alice", "search_tools", {"query": QUERY})
            listed = await _say(pool, "alice", "call_tool", {"name": "notes__list_notes"})
            assert listed == "list_notes: 0 items\n(none)"
            assert await _found(pool) == []
    assert "cannot keep a tool-search query in" in caplog.text
    assert "cannot read the learned tool-search queries" in caplog.text


async def test_replicas_on_postgresql_read_what_another_learned(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each process rereads the table at most every RELOAD_SECONDS: here at once.
    monkeypatch.setattr(_learning, "RELOAD_SECONDS", 0.0)
    with anyio.fail_after(60):
        async with _pool(None, postgres_url) as one, _pool(None, postgres_url) as two:
            assert await _found(two) == []
            await _say(one, "alice", "search_tools", {"query": QUERY})
            await _say(one, "alice", "call_tool", {"name": "notes__list_notes", "arguments": {}})
            assert await _found(two) == ["notes__list_notes"]
