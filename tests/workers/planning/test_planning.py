"""The planning server, in-process: every tool, its text and typed state, errors, scopes."""

from __future__ import annotations

import sqlite3
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest

import nativemcp.workers.planning as planning_pkg
from nativemcp.protocol import INVALID_PARAMS, NativeMCPResponse, encode, unwrap
from nativemcp.workers import Server, ServerConfig, load_server
from nativemcp.workers.planning import MAX_OBSERVATIONS, PlanningState, Todo

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


SOURCE = "nativemcp.workers.planning:create_server"


@pytest.fixture
async def server(tmp_path: Path, database_url: str | None) -> Any:
    srv = load_server(SOURCE, ServerConfig(data_dir=tmp_path, database_url=database_url))
    yield srv
    await srv.aclose()


async def call(server: Server, tool: str, /, **args: Any) -> NativeMCPResponse[Any]:
    return await server.call_tool(tool, args)


async def ok(server: Server, tool: str, /, **args: Any) -> tuple[str, PlanningState]:
    """The text and typed state of a successful call (fails the test on an error)."""
    response = await call(server, tool, **args)
    assert response.result is not None, response.error
    assert not response.result.is_error, response.result.content
    assert isinstance(response.structured_result, PlanningState)
    return text_of(response), response.structured_result


async def failed(server: Server, tool: str, /, **args: Any) -> tuple[str, dict[str, Any]]:
    """The text and structured content of an ``isError`` result."""
    response = await call(server, tool, **args)
    assert response.result is not None, response.error
    assert response.result.is_error
    assert response.result.structured_content is not None
    return text_of(response), response.result.structured_content


def text_of(response: NativeMCPResponse[Any]) -> str:
    assert response.result is not None
    block = response.result.content[0]
    assert block.type == "text"
    text = block.text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


# -- the surface --------------------------------------------------------------------------


def test_package_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(planning_pkg).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(planning_pkg.__all__) == public


async def test_server_is_named_planning_and_lists_the_eight_tools(server: Server) -> None:
    assert server.name == "planning"
    assert server.tool_names == [
        "create_goal",
        "clear_goal",
        "add_todo",
        "mark_todo",
        "clear_todos",
        "add_observation",
        "clear_session",
        "get_current_state",
    ]
    for tool in server.list_tools():
        assert tool.description
        assert tool.output_schema is not None
        assert set(tool.output_schema["properties"]) == {
            "goal",
            "lastClearedGoal",
            "todos",
            "observations",
        }


async def test_state_is_stored_in_a_wal_sqlite_file_or_the_configured_database(
    server: Server, tmp_path: Path, database_url: str | None
) -> None:
    await ok(server, "create_goal", goal="persist me")
    assert server.data_dir == tmp_path / "planning"
    sqlite_file = tmp_path / "planning" / "planning.sqlite3"
    if database_url is not None:
        import psycopg

        assert not sqlite_file.exists()
        with psycopg.connect(database_url) as conn:
            row = conn.execute("SELECT goal FROM planning_scopes").fetchone()
        assert row == ("persist me",)
        return
    db = sqlite3.connect(sqlite_file)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


# -- goals --------------------------------------------------------------------------------


async def test_create_goal_returns_typed_state_camel_case_content_and_rich_text(
    server: Server,
) -> None:
    response = await call(server, "create_goal", goal="Ship the planning server")
    state = response.structured_result
    assert state == PlanningState(goal="Ship the planning server")
    assert response.result is not None
    assert response.result.structured_content == {
        "goal": "Ship the planning server",
        "lastClearedGoal": None,
        "todos": [],
        "observations": [],
    }
    text = text_of(response)
    assert text == (
        "Goal created.\n"
        "Goal: Ship the planning server\n"
        "No todos or observations yet.\n"
        "Next: Break the goal into steps with add_todo."
    )


async def test_clear_goal_really_clears_and_remembers_the_last_cleared_goal(
    server: Server,
) -> None:
    await ok(server, "create_goal", goal="first goal")
    text, state = await ok(server, "clear_goal")
    assert state.goal is None
    assert state.last_cleared_goal == "first goal"
    assert text.startswith("Goal cleared; it is kept as the Previous Goal.")
    assert "Goal: No active goal set" in text
    assert "Previous Goal: first goal" in text
    # The clearing is real: a fresh read agrees.
    _, again = await ok(server, "get_current_state")
    assert again.goal is None
    assert again.last_cleared_goal == "first goal"


async def test_clear_goal_without_a_goal_changes_nothing_and_is_not_an_error(
    server: Server,
) -> None:
    await ok(server, "create_goal", goal="old")
    await ok(server, "clear_goal")
    text, state = await ok(server, "clear_goal")
    assert text.startswith("No active goal to clear")
    assert state == PlanningState(goal=None, last_cleared_goal="old")


async def test_create_goal_replacing_a_goal_remembers_the_replaced_one(server: Server) -> None:
    await ok(server, "create_goal", goal="plan A")
    text, state = await ok(server, "create_goal", goal="plan B")
    assert state.goal == "plan B"
    assert state.last_cleared_goal == "plan A"
    assert text.startswith("Goal created; it replaces the Previous Goal.")
    assert "Goal: plan B\nPrevious Goal: plan A" in text


async def test_setting_the_same_goal_again_changes_nothing(server: Server) -> None:
    await ok(server, "create_goal", goal="plan A")
    await ok(server, "create_goal", goal="plan B")
    text, state = await ok(server, "create_goal", goal=" plan B ")
    assert text.startswith("Goal unchanged (already set).\nGoal: plan B")
    assert state == PlanningState(goal="plan B", last_cleared_goal="plan A")


async def test_goal_is_stored_without_surrounding_whitespace(server: Server) -> None:
    _, state = await ok(server, "create_goal", goal="  trimmed \n")
    assert state.goal == "trimmed"


# -- todos --------------------------------------------------------------------------------


async def test_add_todo_numbers_todos_and_shows_them_pending(server: Server) -> None:
    await ok(server, "add_todo", name="one")
    text, state = await ok(server, "add_todo", name="two")
    assert state.todos == [Todo(id=1, name="one"), Todo(id=2, name="two")]
    assert text.startswith("Todo ID:2 added.")
    assert "Todos (2 pending / 2 total):" in text
    assert "  ID:1 [ ] one\n  ID:2 [ ] two" in text
    assert "Observations: none yet." in text
    assert "Next: Work on ID:1, then call mark_todo(id=1)." in text


async def test_mark_todo_completes_by_default_and_can_reopen(server: Server) -> None:
    await ok(server, "add_todo", name="one")
    await ok(server, "add_todo", name="two")
    text, state = await ok(server, "mark_todo", id=1)
    assert state.todos[0] == Todo(id=1, name="one", completed=True)
    assert text.startswith("Todo ID:1 marked completed.")
    assert "  ID:1 [✓] one" in text
    assert "Todos (1 pending / 2 total):" in text

    text, state = await ok(server, "mark_todo", id=1, completed=False)
    assert state.todos[0].completed is False
    assert text.startswith("Todo ID:1 marked pending.")


async def test_mark_todo_twice_says_it_was_already_completed(server: Server) -> None:
    await ok(server, "add_todo", name="one")
    await ok(server, "mark_todo", id=1)
    text, state = await ok(server, "mark_todo", id=1)
    assert text.startswith("Todo ID:1 was already completed.")
    assert state.todos == [Todo(id=1, name="one", completed=True)]


async def test_all_todos_done_with_a_goal_hints_to_check_and_clear_the_goal(
    server: Server,
) -> None:
    await ok(server, "create_goal", goal="g")
    await ok(server, "add_todo", name="only")
    text, _ = await ok(server, "mark_todo", id=1)
    assert "Next: All todos are done. Check that the goal is met" in text


async def test_unknown_todo_id_is_an_error_listing_the_valid_ids_and_changes_nothing(
    server: Server,
) -> None:
    await ok(server, "add_todo", name="alpha")
    await ok(server, "add_todo", name="beta")
    text, content = await failed(server, "mark_todo", id=7)
    assert "unknown todo id 7" in text
    assert "Valid todo ids: 1, 2" in text
    assert "ID:1 [ ] alpha" in text
    assert content["error"] == "unknown_todo_id"
    assert content["unknownIds"] == [7]
    assert content["validIds"] == [1, 2]
    # The server keeps serving, and nothing changed.
    _, state = await ok(server, "get_current_state")
    assert [todo.completed for todo in state.todos] == [False, False]


async def test_unknown_todo_id_with_no_todos_says_to_add_one(server: Server) -> None:
    text, content = await failed(server, "mark_todo", id=1)
    assert "no todos" in text
    assert "add_todo" in text
    assert content["validIds"] == []


async def test_a_string_todo_id_is_an_invalid_params_error(server: Server) -> None:
    response = await call(server, "mark_todo", id="1")
    assert response.error is not None
    assert response.error.code == INVALID_PARAMS


async def test_clear_todos_removes_only_the_given_ids(server: Server) -> None:
    for name in ("a", "b", "c"):
        await ok(server, "add_todo", name=name)
    text, state = await ok(server, "clear_todos", ids=[1, 3, 3])
    assert state.todos == [Todo(id=2, name="b")]
    assert text.startswith("Cleared 2 todos:\n  ID:1 [ ] a\n  ID:3 [ ] c")


async def test_clear_todos_without_ids_removes_all(server: Server) -> None:
    for name in ("a", "b"):
        await ok(server, "add_todo", name=name)
    text, state = await ok(server, "clear_todos")
    assert state.todos == []
    assert text.startswith("Cleared 2 todos:")
    text, _ = await ok(server, "clear_todos")
    assert text.startswith("No todos to clear")


async def test_clear_todos_with_an_unknown_id_removes_nothing(server: Server) -> None:
    await ok(server, "add_todo", name="a")
    text, content = await failed(server, "clear_todos", ids=[1, 5, 6])
    assert "unknown todo ids 5, 6" in text
    assert content["unknownIds"] == [5, 6]
    assert content["validIds"] == [1]
    _, state = await ok(server, "get_current_state")
    assert state.todos == [Todo(id=1, name="a")]


async def test_clear_todos_with_an_empty_list_is_an_error(server: Server) -> None:
    await ok(server, "add_todo", name="a")
    text, content = await failed(server, "clear_todos", ids=[])
    assert "Omit ids to remove every todo" in text
    assert content == {"error": "empty_argument", "argument": "ids"}


async def test_todo_ids_are_never_reused_after_clearing(server: Server) -> None:
    await ok(server, "add_todo", name="a")
    await ok(server, "add_todo", name="b")
    await ok(server, "clear_todos")
    await ok(server, "clear_session")
    _, state = await ok(server, "add_todo", name="c")
    assert state.todos == [Todo(id=3, name="c")]


async def test_multi_line_todo_names_stay_inside_their_list_item(server: Server) -> None:
    text, _ = await ok(server, "add_todo", name="first line\nsecond line")
    assert "  ID:1 [ ] first line\n           second line" in text


# -- observations and the session -----------------------------------------------------------


async def test_observations_keep_the_newest_ten_and_say_what_was_dropped(
    server: Server,
) -> None:
    for number in range(1, MAX_OBSERVATIONS + 1):
        await ok(server, "add_observation", observation=f"obs {number}")
    text, state = await ok(server, "add_observation", observation="obs 11")
    assert state.observations == [f"obs {number}" for number in range(2, 12)]
    assert 'dropped the oldest: "obs 1"' in text
    assert f"Observations (the newest {MAX_OBSERVATIONS} are kept):" in text
    assert "Todos: none yet." in text
    assert "  1. obs 2\n" in text
    assert "  10. obs 11\n" in text


async def test_clear_session_resets_goal_todos_observations_and_previous_goal(
    server: Server,
) -> None:
    await ok(server, "create_goal", goal="old")
    await ok(server, "create_goal", goal="new")
    await ok(server, "add_todo", name="t")
    await ok(server, "add_observation", observation="o")
    text, state = await ok(server, "clear_session")
    assert state == PlanningState()
    assert text.startswith("Session cleared: removed the goal, 1 todo, 1 observation.")
    assert "Next: Create a goal with create_goal to get started." in text
    text, _ = await ok(server, "clear_session")
    assert text.startswith("Session cleared (it was already empty).")


async def test_get_current_state_on_a_new_scope_is_empty(server: Server) -> None:
    text, state = await ok(server, "get_current_state")
    assert state == PlanningState()
    assert "Goal: No active goal set" in text
    assert "No todos or observations yet." in text


# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "argument"),
    [("create_goal", "goal"), ("add_todo", "name"), ("add_observation", "observation")],
)
@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
async def test_empty_text_is_a_clear_error(
    server: Server, tool: str, argument: str, value: str
) -> None:
    text, content = await failed(server, tool, **{argument: value})
    assert text == f"Error: {argument} must not be empty."
    assert content == {"error": "empty_argument", "argument": argument}
    _, state = await ok(server, "get_current_state")
    assert state == PlanningState()


@pytest.mark.parametrize(
    ("tool", "argument"),
    [("create_goal", "goal"), ("add_todo", "name"), ("add_observation", "observation")],
)
async def test_oversized_text_is_a_clear_error_and_the_limit_itself_is_accepted(
    server: Server, tool: str, argument: str
) -> None:
    text, content = await failed(server, tool, **{argument: "x" * 10_001})
    assert "10,001 characters long; the limit is 10,000" in text
    assert content["limit"] == 10_000
    await ok(server, tool, **{argument: "x" * 10_000})


async def test_missing_required_argument_is_an_invalid_params_error(server: Server) -> None:
    response = await call(server, "create_goal")
    assert response.error is not None
    assert response.error.code == INVALID_PARAMS


async def test_the_text_limit_is_configurable(tmp_path: Path) -> None:
    srv = load_server(SOURCE, ServerConfig(data_dir=tmp_path, options={"max_text_chars": 5}))
    try:
        text, _ = await failed(srv, "add_todo", name="toolong")
        assert "the limit is 5" in text
        await ok(srv, "add_todo", name="short")
    finally:
        await srv.aclose()


@pytest.mark.parametrize("bad", [0, -1, "10", True, 2.5])
def test_a_bad_text_limit_option_is_rejected(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="max_text_chars"):
        load_server(SOURCE, ServerConfig(data_dir=tmp_path, options={"max_text_chars": bad}))


async def test_korean_and_other_unicode_text_round_trips(server: Server) -> None:
    goal = "기획 서버를 완성한다 — Müller の計画 🚀"
    _, state = await ok(server, "create_goal", goal=goal)
    assert state.goal == goal
    _, state = await ok(server, "add_todo", name="테스트 작성\x00끝")
    assert state.todos[0].name == "테스트 작성\x00끝"


# -- scopes, persistence, typed values ------------------------------------------------------


async def test_each_session_and_thread_has_its_own_plan(server: Server) -> None:
    scopes = [("s1", "t1"), ("s1", "t2"), ("s2", "t1")]
    for session_id, thread_id in scopes:
        await server.switch_context(session_id, thread_id)
        await ok(server, "create_goal", goal=f"goal {session_id}/{thread_id}")
        await ok(server, "add_todo", name=f"todo {session_id}/{thread_id}")
    for session_id, thread_id in scopes:
        await server.switch_context(session_id, thread_id)
        _, state = await ok(server, "get_current_state")
        assert state.goal == f"goal {session_id}/{thread_id}"
        assert state.todos == [Todo(id=1, name=f"todo {session_id}/{thread_id}")]
    await server.switch_context("s1", "t1")
    await ok(server, "clear_session")
    await server.switch_context("s1", "t2")
    _, state = await ok(server, "get_current_state")
    assert state.goal == "goal s1/t2"


async def test_no_scope_uses_the_default_scope(server: Server) -> None:
    await ok(server, "create_goal", goal="default plan")
    await server.switch_context("s", "t")
    _, state = await ok(server, "get_current_state")
    assert state.goal is None
    await server.switch_context(None, None)
    _, state = await ok(server, "get_current_state")
    assert state.goal == "default plan"


async def test_state_survives_closing_and_reopening_the_server(
    tmp_path: Path, database_url: str | None
) -> None:
    first = load_server(SOURCE, ServerConfig(data_dir=tmp_path, database_url=database_url))
    await first.switch_context("s", "t")
    await ok(first, "create_goal", goal="durable")
    await ok(first, "add_todo", name="a")
    await ok(first, "mark_todo", id=1)
    await ok(first, "add_observation", observation="seen")
    await ok(first, "clear_goal")
    _, before = await ok(first, "get_current_state")
    await first.aclose()
    await first.aclose()  # closing twice is harmless

    second = load_server(SOURCE, ServerConfig(data_dir=tmp_path, database_url=database_url))
    try:
        await second.switch_context("s", "t")
        _, after = await ok(second, "get_current_state")
        assert after == before
        assert after.last_cleared_goal == "durable"
        _, state = await ok(second, "add_todo", name="b")
        assert [todo.id for todo in state.todos] == [1, 2]
    finally:
        await second.aclose()


async def test_without_a_data_dir_the_state_is_kept_in_memory() -> None:
    srv = load_server(SOURCE, ServerConfig())
    try:
        assert srv.data_dir is None
        await ok(srv, "add_todo", name="ephemeral")
        _, state = await ok(srv, "get_current_state")
        assert state.todos == [Todo(id=1, name="ephemeral")]
    finally:
        await srv.aclose()


async def test_json_wire_form_unwraps_to_the_same_typed_state(server: Server) -> None:
    await ok(server, "create_goal", goal="g")
    await ok(server, "add_todo", name="t")
    response = await call(server, "mark_todo", id=1)
    wire = msgspec.json.decode(encode(response))
    wire.pop("structuredResult", None)  # what a plain MCP client would see
    assert wire["result"]["structuredContent"]["lastClearedGoal"] is None
    state = unwrap(wire, PlanningState)
    assert state == response.structured_result
    assert state.todos[0].completed is True


async def test_service_context_shows_the_plan_for_the_current_scope(server: Server) -> None:
    assert "no active plan" in await server.get_service_context()
    await server.switch_context("s", "t")
    await ok(server, "create_goal", goal="ctx goal")
    await ok(server, "add_todo", name="step one")
    await ok(server, "add_observation", observation="note")
    text = await server.get_service_context()
    assert "Goal: ctx goal" in text
    assert "ID:1 [ ] step one" in text
    assert "- note" in text
    assert "Next action: Work on ID:1, then call mark_todo(id=1)." in text
    await server.switch_context("other", "t")
    assert "no active plan" in await server.get_service_context()
