"""The planning store against a plain-Python model: any sequence of changes agrees."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nativemcp.workers.planning import MAX_OBSERVATIONS, PlanningState, Todo
from nativemcp.workers.planning._storage import PlanningStorage
from nativemcp.workers.planning._store import PlanningStore, Scope, UnknownTodoIds

SCOPES: list[Scope] = [("default", "default"), ("s1", "t1"), ("s1", "t2")]
texts = st.text(min_size=1, max_size=20)


@dataclass
class ModelScope:
    goal: str | None = None
    last_cleared_goal: str | None = None
    todos: dict[int, Todo] = field(default_factory=dict)
    observations: list[str] = field(default_factory=list)
    next_id: int = 1

    def state(self) -> PlanningState:
        return PlanningState(
            goal=self.goal,
            last_cleared_goal=self.last_cleared_goal,
            todos=list(self.todos.values()),
            observations=list(self.observations),
        )


class PlanningMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store: PlanningStorage = PlanningStore(None)
        self.model = {scope: ModelScope() for scope in SCOPES}
        self.scope = SCOPES[0]

    @property
    def current(self) -> ModelScope:
        return self.model[self.scope]

    @rule(index=st.integers(0, len(SCOPES) - 1))
    def switch(self, index: int) -> None:
        self.scope = SCOPES[index]

    @rule(goal=st.one_of(texts, st.just("same")))
    def set_goal(self, goal: str) -> None:
        _, previous = self.store.set_goal(self.scope, goal)
        assert previous == self.current.goal
        if self.current.goal not in (None, goal):
            self.current.last_cleared_goal = self.current.goal
        self.current.goal = goal

    @rule()
    def clear_goal(self) -> None:
        _, cleared = self.store.clear_goal(self.scope)
        assert cleared == self.current.goal
        if self.current.goal is not None:
            self.current.last_cleared_goal = self.current.goal
            self.current.goal = None

    @rule(name=texts)
    def add_todo(self, name: str) -> None:
        _, todo = self.store.add_todo(self.scope, name)
        assert todo == Todo(id=self.current.next_id, name=name)
        self.current.todos[todo.id] = todo
        self.current.next_id += 1

    @rule(todo_id=st.integers(0, 12), completed=st.booleans())
    def mark_todo(self, todo_id: int, completed: bool) -> None:
        if todo_id not in self.current.todos:
            with pytest.raises(UnknownTodoIds):
                self.store.mark_todo(self.scope, todo_id, completed)
            return
        _, before, changed = self.store.mark_todo(self.scope, todo_id, completed)
        assert before == self.current.todos[todo_id]
        assert changed == (before.completed != completed)
        self.current.todos[todo_id] = Todo(id=todo_id, name=before.name, completed=completed)

    @precondition(lambda self: self.current.todos)
    @rule(data=st.data())
    def clear_some_todos(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(sorted(self.current.todos)), min_size=1))
        _, removed = self.store.clear_todos(self.scope, ids)
        assert [todo.id for todo in removed] == list(dict.fromkeys(ids))
        for todo_id in ids:
            self.current.todos.pop(todo_id, None)

    @rule(ids=st.lists(st.integers(0, 12), min_size=1))
    def clear_todos_maybe_unknown(self, ids: list[int]) -> None:
        if all(todo_id in self.current.todos for todo_id in ids):
            self.store.clear_todos(self.scope, ids)
            for todo_id in ids:
                self.current.todos.pop(todo_id, None)
            return
        with pytest.raises(UnknownTodoIds) as caught:
            self.store.clear_todos(self.scope, ids)
        unknown = [todo_id for todo_id in dict.fromkeys(ids) if todo_id not in self.current.todos]
        assert caught.value.unknown == unknown

    @rule()
    def clear_all_todos(self) -> None:
        _, removed = self.store.clear_todos(self.scope, None)
        assert removed == list(self.current.todos.values())
        self.current.todos.clear()

    @rule(text=texts)
    def add_observation(self, text: str) -> None:
        _, dropped = self.store.add_observation(self.scope, text)
        observations = [*self.current.observations, text]
        assert dropped == observations[:-MAX_OBSERVATIONS]
        self.current.observations = observations[-MAX_OBSERVATIONS:]

    @rule()
    def clear_session(self) -> None:
        before, after = self.store.clear_session(self.scope)
        assert before == self.current.state()
        assert after == PlanningState()
        next_id = self.current.next_id
        self.model[self.scope] = ModelScope(next_id=next_id)

    @invariant()
    def every_scope_agrees_with_the_model(self) -> None:
        for scope in SCOPES:
            assert self.store.state(scope) == self.model[scope].state()

    def teardown(self) -> None:
        self.store.close()


PlanningMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
test_any_sequence_of_changes_matches_the_model = PlanningMachine.TestCase


def test_any_sequence_of_changes_matches_the_model_on_postgresql(postgres_url: str) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    from nativemcp.workers.planning._pg import PostgresPlanningStore

    class PostgresMachine(PlanningMachine):
        def __init__(self) -> None:
            super().__init__()
            self.store.close()
            pg = PostgresPlanningStore(postgres_url)
            with pg.db.transaction() as conn:  # each run starts from an empty plan
                conn.execute("TRUNCATE planning_scopes, planning_todos, planning_observations")
            self.store = pg

    run_state_machine_as_test(
        PostgresMachine,
        settings=settings(max_examples=15, stateful_step_count=20, deadline=None),
    )


def test_two_stores_on_one_file_never_hand_out_the_same_todo_id(tmp_path: Path) -> None:
    # A restarted worker may open the database while the old one is still closing.
    path = tmp_path / "planning.sqlite3"
    first, second = PlanningStore(path), PlanningStore(path)
    try:
        scope = ("s", "t")
        ids = []
        for number in range(10):
            store = first if number % 2 else second
            _, todo = store.add_todo(scope, f"todo {number}")
            ids.append(todo.id)
        assert ids == list(range(1, 11))
        assert first.state(scope) == second.state(scope)
    finally:
        first.close()
        second.close()


def test_a_database_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "planning.sqlite3"
    PlanningStore(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(RuntimeError, match="schema version 99"):
        PlanningStore(path)


@pytest.mark.real_process
def test_committed_changes_survive_the_process_being_killed(tmp_path: Path) -> None:
    # No close, no checkpoint: the process dies by SIGKILL right after its last change.
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from nativemcp.workers.planning._store import PlanningStore\n"
        "store = PlanningStore(Path(sys.argv[1]))\n"
        "store.set_goal(('s', 't'), 'survive')\n"
        "store.add_todo(('s', 't'), 'after the kill')\n"
        "store.add_observation(('s', 't'), 'last words')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    path = tmp_path / "planning.sqlite3"
    finished = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60, check=False)
    assert finished.returncode == -signal.SIGKILL
    store = PlanningStore(path)
    try:
        assert store.state(("s", "t")) == PlanningState(
            goal="survive",
            todos=[Todo(id=1, name="after the kill")],
            observations=["last words"],
        )
    finally:
        store.close()
