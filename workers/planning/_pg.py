"""Planning state on PostgreSQL: the same tables as the SQLite store, prefixed ``planning_``.

Every change is one transaction that first takes the scope's row lock (creating the
row if needed), so two workers on two machines changing one (session, thread) scope
apply their changes one after the other, and each answer is the state it committed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from nativemcp.workers._database import Database

from ._models import MAX_OBSERVATIONS, PlanningState, Todo
from ._store import Scope, UnknownTodoIds, dropped_oldest_first, todos_to_remove

__all__ = ["COMPONENT", "MIGRATIONS", "PostgresPlanningStore"]

COMPONENT: Final = "planning"
"""This schema's name in the shared schema-version table."""

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """CREATE TABLE planning_scopes (
            session_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            goal TEXT,
            last_cleared_goal TEXT,
            next_todo_id INTEGER NOT NULL DEFAULT 1,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (session_id, thread_id)
        )""",
        """CREATE TABLE planning_todos (
            session_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            id INTEGER NOT NULL,
            name TEXT NOT NULL,
            completed BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (session_id, thread_id, id)
        )""",
        """CREATE TABLE planning_observations (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX planning_observations_by_scope"
        " ON planning_observations (session_id, thread_id, seq)",
    ),
)
"""The schema, one tuple of statements per version (see `Database`)."""

_WHERE: Final = "WHERE session_id = %s AND thread_id = %s"


def _read(conn: Any, scope: Scope) -> PlanningState:
    row = conn.execute(
        f"SELECT goal, last_cleared_goal FROM planning_scopes {_WHERE}", scope
    ).fetchone()
    todos = [
        Todo(id=todo_id, name=name, completed=completed)
        for todo_id, name, completed in conn.execute(
            f"SELECT id, name, completed FROM planning_todos {_WHERE} ORDER BY id", scope
        )
    ]
    observations = [
        text
        for (text,) in conn.execute(
            f"SELECT text FROM planning_observations {_WHERE} ORDER BY seq", scope
        )
    ]
    goal, last_cleared = row if row is not None else (None, None)
    return PlanningState(
        goal=goal, last_cleared_goal=last_cleared, todos=todos, observations=observations
    )


class PostgresPlanningStore:
    """The planning state in a PostgreSQL database shared by every worker using it.

    Raises:
        ValueError: ``url`` is not a PostgreSQL URL.
    """

    def __init__(self, url: str) -> None:
        self.db = Database(url, COMPONENT, MIGRATIONS)

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        self.db.close()

    @contextmanager
    def _write(self, scope: Scope, *, touch: bool = True) -> Iterator[Any]:
        """A transaction holding the scope's row lock (the row made if missing)."""
        with self.db.transaction() as conn:
            if touch:
                conn.execute(
                    "INSERT INTO planning_scopes (session_id, thread_id, updated_at)"
                    " VALUES (%s, %s, %s) ON CONFLICT (session_id, thread_id)"
                    " DO UPDATE SET updated_at = excluded.updated_at",
                    (*scope, time.time()),
                )
            else:
                conn.execute(
                    "INSERT INTO planning_scopes (session_id, thread_id, updated_at)"
                    " VALUES (%s, %s, %s) ON CONFLICT (session_id, thread_id) DO NOTHING",
                    (*scope, time.time()),
                )
                conn.execute(f"SELECT 1 FROM planning_scopes {_WHERE} FOR UPDATE", scope)
            yield conn

    def _touch(self, conn: Any, scope: Scope) -> None:
        conn.execute(f"UPDATE planning_scopes SET updated_at = %s {_WHERE}", (time.time(), *scope))

    def state(self, scope: Scope) -> PlanningState:
        """The scope's current plan (empty when the scope was never used)."""
        # One snapshot for the three reads: never half of a concurrent change.
        with self.db.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _read(conn, scope)

    def set_goal(self, scope: Scope, goal: str) -> tuple[PlanningState, str | None]:
        """Make ``goal`` the active goal; returns the new state and the goal before."""
        with self._write(scope) as conn:
            (previous,) = conn.execute(
                f"SELECT goal FROM planning_scopes {_WHERE}", scope
            ).fetchone()
            replaced = previous if previous != goal else None
            conn.execute(
                "UPDATE planning_scopes SET goal = %s,"
                f" last_cleared_goal = coalesce(%s, last_cleared_goal) {_WHERE}",
                (goal, replaced, *scope),
            )
            return _read(conn, scope), previous

    def clear_goal(self, scope: Scope) -> tuple[PlanningState, str | None]:
        """Clear the active goal, remembering it; returns the new state and the cleared goal."""
        with self._write(scope) as conn:
            (previous,) = conn.execute(
                f"SELECT goal FROM planning_scopes {_WHERE}", scope
            ).fetchone()
            if previous is not None:
                conn.execute(
                    f"UPDATE planning_scopes SET goal = NULL, last_cleared_goal = goal {_WHERE}",
                    scope,
                )
            return _read(conn, scope), previous

    def add_todo(self, scope: Scope, name: str) -> tuple[PlanningState, Todo]:
        """Append a pending todo with the scope's next id."""
        with self._write(scope) as conn:
            (todo_id,) = conn.execute(
                "UPDATE planning_scopes SET next_todo_id = next_todo_id + 1"
                f" {_WHERE} RETURNING next_todo_id - 1",
                scope,
            ).fetchone()
            conn.execute(
                "INSERT INTO planning_todos (session_id, thread_id, id, name)"
                " VALUES (%s, %s, %s, %s)",
                (*scope, todo_id, name),
            )
            return _read(conn, scope), Todo(id=todo_id, name=name)

    def mark_todo(
        self, scope: Scope, todo_id: int, completed: bool
    ) -> tuple[PlanningState, Todo, bool]:
        """Set a todo's completion; returns the state, the todo before, and whether it changed.

        Raises:
            UnknownTodoIds: the scope has no todo ``todo_id``.
        """
        with self._write(scope, touch=False) as conn:
            row = conn.execute(
                f"SELECT name, completed FROM planning_todos {_WHERE} AND id = %s",
                (*scope, todo_id),
            ).fetchone()
            if row is None:
                raise UnknownTodoIds([todo_id], _read(conn, scope))
            before = Todo(id=todo_id, name=row[0], completed=row[1])
            changed = before.completed != completed
            if changed:
                self._touch(conn, scope)
                conn.execute(
                    f"UPDATE planning_todos SET completed = %s {_WHERE} AND id = %s",
                    (completed, *scope, todo_id),
                )
            return _read(conn, scope), before, changed

    def clear_todos(
        self, scope: Scope, ids: Sequence[int] | None
    ) -> tuple[PlanningState, list[Todo]]:
        """Remove the todos ``ids`` (all when None); returns the state and the removed todos.

        Raises:
            UnknownTodoIds: some of ``ids`` do not exist (nothing is removed then).
        """
        with self._write(scope, touch=False) as conn:
            before = _read(conn, scope)
            removed = todos_to_remove(before, ids)
            if removed:
                self._touch(conn, scope)
                conn.execute(
                    f"DELETE FROM planning_todos {_WHERE} AND id = ANY(%s::int4[])",
                    (*scope, [todo.id for todo in removed]),
                )
            return _read(conn, scope), removed

    def add_observation(self, scope: Scope, text: str) -> tuple[PlanningState, list[str]]:
        """Append an observation, keeping the newest `MAX_OBSERVATIONS`.

        Returns the new state and the observations dropped to make room, oldest first.
        """
        with self._write(scope) as conn:
            conn.execute(
                "INSERT INTO planning_observations (session_id, thread_id, text)"
                " VALUES (%s, %s, %s)",
                (*scope, text),
            )
            dropped = dropped_oldest_first(
                conn.execute(
                    "DELETE FROM planning_observations WHERE seq IN ("
                    f" SELECT seq FROM planning_observations {_WHERE}"
                    " ORDER BY seq DESC OFFSET %s) RETURNING seq, text",
                    (*scope, MAX_OBSERVATIONS),
                ).fetchall()
            )
            return _read(conn, scope), dropped

    def clear_session(self, scope: Scope) -> tuple[PlanningState, PlanningState]:
        """Forget the scope's goal, last cleared goal, todos and observations.

        Todo ids keep counting up. Returns the state before and after.
        """
        with self._write(scope, touch=False) as conn:
            before = _read(conn, scope)
            self._touch(conn, scope)
            conn.execute(
                f"UPDATE planning_scopes SET goal = NULL, last_cleared_goal = NULL {_WHERE}",
                scope,
            )
            conn.execute(f"DELETE FROM planning_todos {_WHERE}", scope)
            conn.execute(f"DELETE FROM planning_observations {_WHERE}", scope)
            return before, _read(conn, scope)
