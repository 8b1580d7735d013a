"""Planning state in SQLite: one row per (session, thread) scope, its todos and observations.

Every change is one ``BEGIN IMMEDIATE`` transaction that ends by reading the state back,
so a tool's answer is exactly what a restarted worker will find. WAL mode with
``synchronous=NORMAL`` survives the worker being killed (not a power cut, which planning
state does not need).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from ._models import MAX_OBSERVATIONS, PlanningState, Todo

__all__ = ["PlanningStore", "Scope", "UnknownTodoIds", "dropped_oldest_first", "todos_to_remove"]

Scope = tuple[str, str]
"""``(session_id, thread_id)``, both already defaulted."""

DB_FILENAME: Final = "planning.sqlite3"
"""The database file inside the server's data folder."""

_SCHEMA_VERSION: Final = 1
_BUSY_TIMEOUT_MS: Final = 5_000

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS scopes (
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    goal TEXT,
    last_cleared_goal TEXT,
    next_todo_id INTEGER NOT NULL DEFAULT 1,
    updated_at REAL NOT NULL,
    PRIMARY KEY (session_id, thread_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS todos (
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    name TEXT NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, thread_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS observations_by_scope ON observations (session_id, thread_id, seq);
"""


class UnknownTodoIds(LookupError):
    """Some requested todo ids do not exist in the scope; nothing was changed."""

    def __init__(self, unknown: Sequence[int], state: PlanningState) -> None:
        self.unknown = list(unknown)
        self.state = state
        super().__init__(f"unknown todo ids: {self.unknown}")


def todos_to_remove(before: PlanningState, ids: Sequence[int] | None) -> list[Todo]:
    """The todos ``ids`` names in ``before`` (all when None), in the order asked.

    Raises:
        UnknownTodoIds: some of ``ids`` are not in ``before``.
    """
    if ids is None:
        return before.todos
    by_id = {todo.id: todo for todo in before.todos}
    wanted = list(dict.fromkeys(ids))
    unknown = [todo_id for todo_id in wanted if todo_id not in by_id]
    if unknown:
        raise UnknownTodoIds(unknown, before)
    return [by_id[todo_id] for todo_id in wanted]


def dropped_oldest_first(rows: Iterable[tuple[int, str]]) -> list[str]:
    """The texts of the ``(seq, text)`` rows a ``DELETE … RETURNING`` gave, oldest
    first (RETURNING rows come in no promised order)."""
    return [text for _, text in sorted(rows)]


class PlanningStore:
    """The planning database; ``path=None`` keeps it in memory (tests, no data_dir).

    Calls are serialised by a lock, so the store may be used from worker threads too.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are begun explicitly in `_write`.
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path),
            isolation_level=None,
            check_same_thread=False,
        )
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._prepare()
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        if self.path is not None:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
        with self._write():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise RuntimeError(
                    f"planning database {self.path} has schema version {version}; "
                    f"this nativemcp understands up to {_SCHEMA_VERSION}"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the database (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    # -- reading ---------------------------------------------------------------------

    def _read(self, scope: Scope) -> PlanningState:
        db = self._db
        row = db.execute(
            "SELECT goal, last_cleared_goal FROM scopes WHERE session_id = ? AND thread_id = ?",
            scope,
        ).fetchone()
        todos = [
            Todo(id=todo_id, name=name, completed=bool(completed))
            for todo_id, name, completed in db.execute(
                "SELECT id, name, completed FROM todos"
                " WHERE session_id = ? AND thread_id = ? ORDER BY id",
                scope,
            )
        ]
        observations = [
            text
            for (text,) in db.execute(
                "SELECT text FROM observations WHERE session_id = ? AND thread_id = ? ORDER BY seq",
                scope,
            )
        ]
        goal, last_cleared = row if row is not None else (None, None)
        return PlanningState(
            goal=goal, last_cleared_goal=last_cleared, todos=todos, observations=observations
        )

    def state(self, scope: Scope) -> PlanningState:
        """The scope's current plan (empty when the scope was never used)."""
        with self._lock:
            return self._read(scope)

    # -- changing --------------------------------------------------------------------

    def _touch(self, db: sqlite3.Connection, scope: Scope) -> None:
        db.execute(
            "INSERT INTO scopes (session_id, thread_id, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, thread_id) DO UPDATE SET updated_at = excluded.updated_at",
            (*scope, time.time()),
        )

    def set_goal(self, scope: Scope, goal: str) -> tuple[PlanningState, str | None]:
        """Make ``goal`` the active goal; returns the new state and the goal before.

        A different goal it replaces is remembered as the last cleared goal; setting the
        same goal again changes nothing.
        """
        with self._write() as db:
            self._touch(db, scope)
            (previous,) = db.execute(
                "SELECT goal FROM scopes WHERE session_id = ? AND thread_id = ?", scope
            ).fetchone()
            replaced = previous if previous != goal else None
            db.execute(
                "UPDATE scopes SET goal = ?, last_cleared_goal = coalesce(?, last_cleared_goal)"
                " WHERE session_id = ? AND thread_id = ?",
                (goal, replaced, *scope),
            )
            return self._read(scope), previous

    def clear_goal(self, scope: Scope) -> tuple[PlanningState, str | None]:
        """Clear the active goal, remembering it; returns the new state and the cleared goal."""
        with self._write() as db:
            self._touch(db, scope)
            (previous,) = db.execute(
                "SELECT goal FROM scopes WHERE session_id = ? AND thread_id = ?", scope
            ).fetchone()
            if previous is not None:
                db.execute(
                    "UPDATE scopes SET goal = NULL, last_cleared_goal = goal"
                    " WHERE session_id = ? AND thread_id = ?",
                    scope,
                )
            return self._read(scope), previous

    def add_todo(self, scope: Scope, name: str) -> tuple[PlanningState, Todo]:
        """Append a pending todo with the scope's next id."""
        with self._write() as db:
            self._touch(db, scope)
            (todo_id,) = db.execute(
                "UPDATE scopes SET next_todo_id = next_todo_id + 1"
                " WHERE session_id = ? AND thread_id = ? RETURNING next_todo_id - 1",
                scope,
            ).fetchone()
            db.execute(
                "INSERT INTO todos (session_id, thread_id, id, name) VALUES (?, ?, ?, ?)",
                (*scope, todo_id, name),
            )
            return self._read(scope), Todo(id=todo_id, name=name)

    def mark_todo(
        self, scope: Scope, todo_id: int, completed: bool
    ) -> tuple[PlanningState, Todo, bool]:
        """Set a todo's completion; returns the state, the todo before, and whether it changed.

        Raises:
            UnknownTodoIds: the scope has no todo ``todo_id``.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT name, completed FROM todos"
                " WHERE session_id = ? AND thread_id = ? AND id = ?",
                (*scope, todo_id),
            ).fetchone()
            if row is None:
                raise UnknownTodoIds([todo_id], self._read(scope))
            before = Todo(id=todo_id, name=row[0], completed=bool(row[1]))
            changed = before.completed != completed
            if changed:
                self._touch(db, scope)
                db.execute(
                    "UPDATE todos SET completed = ?"
                    " WHERE session_id = ? AND thread_id = ? AND id = ?",
                    (int(completed), *scope, todo_id),
                )
            return self._read(scope), before, changed

    def clear_todos(
        self, scope: Scope, ids: Sequence[int] | None
    ) -> tuple[PlanningState, list[Todo]]:
        """Remove the todos ``ids`` (all when None); returns the state and the removed todos.

        Raises:
            UnknownTodoIds: some of ``ids`` do not exist (nothing is removed then).
        """
        with self._write() as db:
            before = self._read(scope)
            removed = todos_to_remove(before, ids)
            if removed:
                self._touch(db, scope)
                db.executemany(
                    "DELETE FROM todos WHERE session_id = ? AND thread_id = ? AND id = ?",
                    [(*scope, todo.id) for todo in removed],
                )
            return self._read(scope), removed

    def add_observation(self, scope: Scope, text: str) -> tuple[PlanningState, list[str]]:
        """Append an observation, keeping the newest `MAX_OBSERVATIONS`.

        Returns the new state and the observations dropped to make room, oldest first.
        """
        with self._write() as db:
            self._touch(db, scope)
            db.execute(
                "INSERT INTO observations (session_id, thread_id, text) VALUES (?, ?, ?)",
                (*scope, text),
            )
            dropped = dropped_oldest_first(
                db.execute(
                    "DELETE FROM observations WHERE seq IN ("
                    " SELECT seq FROM observations WHERE session_id = ? AND thread_id = ?"
                    " ORDER BY seq DESC LIMIT -1 OFFSET ?) RETURNING seq, text",
                    (*scope, MAX_OBSERVATIONS),
                ).fetchall()
            )
            return self._read(scope), dropped

    def clear_session(self, scope: Scope) -> tuple[PlanningState, PlanningState]:
        """Forget the scope's goal, last cleared goal, todos and observations.

        Todo ids keep counting up, so an id seen before the reset never names a new todo.
        Returns the state before and after.
        """
        with self._write() as db:
            before = self._read(scope)
            self._touch(db, scope)
            db.execute(
                "UPDATE scopes SET goal = NULL, last_cleared_goal = NULL"
                " WHERE session_id = ? AND thread_id = ?",
                scope,
            )
            db.execute("DELETE FROM todos WHERE session_id = ? AND thread_id = ?", scope)
            db.execute("DELETE FROM observations WHERE session_id = ? AND thread_id = ?", scope)
            return before, self._read(scope)
