"""The planning server in real worker processes, reached through `WorkerPool`."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from nativemcp.protocol import ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers.planning import PlanningState, Todo

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


def planning_pool(data_dir: Path, database_url: str | None) -> WorkerPool:
    return WorkerPool(
        data_dir=data_dir, database_url=database_url, builtins=["planning"], in_process=()
    )


async def test_tools_return_typed_state_and_rich_text_through_a_worker(
    tmp_path: Path, database_url: str | None
) -> None:
    with anyio.fail_after(30):
        async with planning_pool(tmp_path, database_url) as pool:
            planning = pool.server("planning")
            state = await planning.create_goal(goal="계획을 세운다")
            assert state == PlanningState(goal="계획을 세운다")
            state = await planning.add_todo(name="first step")
            assert state.todos == [Todo(id=1, name="first step")]

            response = await planning.call_tool("mark_todo", {"id": 1})
            assert response.result is not None
            text = response.result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("Todo ID:1 marked completed.")
            assert "  ID:1 [✓] first step" in text
            assert response.result.structured_content is not None
            assert response.result.structured_content["lastClearedGoal"] is None

            context = await planning.get_service_context()
            assert "Goal: 계획을 세운다" in context


async def test_unknown_todo_id_raises_tool_error_with_valid_ids_and_worker_keeps_serving(
    tmp_path: Path,
    database_url: str | None,
) -> None:
    with anyio.fail_after(30):
        async with planning_pool(tmp_path, database_url) as pool:
            planning = pool.server("planning")
            await planning.add_todo(name="a")
            await planning.add_todo(name="b")
            with pytest.raises(ToolError) as caught:
                await planning.mark_todo(id=9)
            assert "Valid todo ids: 1, 2" in caught.value.message
            assert caught.value.structured_content is not None
            assert caught.value.structured_content["validIds"] == [1, 2]
            state = await planning.get_current_state()
            assert [todo.completed for todo in state.todos] == [False, False]


async def test_state_is_per_session_and_thread_and_survives_a_pool_restart(
    tmp_path: Path,
    database_url: str | None,
) -> None:
    with anyio.fail_after(30):
        async with planning_pool(tmp_path, database_url) as pool:
            planning = pool.server("planning")
            await planning.switch_context("s1", "t1")
            await planning.create_goal(goal="goal one")
            await planning.add_todo(name="todo one")
            await planning.add_observation(observation="seen in t1")
            await planning.switch_context("s1", "t2")
            await planning.create_goal(goal="goal two")
            await planning.clear_goal()
            await planning.switch_context("s2", "t1")
            assert await planning.get_current_state() == PlanningState()

        async with planning_pool(tmp_path, database_url) as pool:
            planning = pool.server("planning")
            await planning.switch_context("s1", "t1")
            assert await planning.get_current_state() == PlanningState(
                goal="goal one",
                todos=[Todo(id=1, name="todo one")],
                observations=["seen in t1"],
            )
            await planning.switch_context("s1", "t2")
            assert await planning.get_current_state() == PlanningState(
                goal=None, last_cleared_goal="goal two"
            )
            await planning.switch_context("s1", "t1")
            state = await planning.add_todo(name="todo two")
            assert [todo.id for todo in state.todos] == [1, 2]
