"""The one interface behind the planning tools, and how a backend is chosen.

`PlanningStore` keeps the state in a SQLite file in the data folder (the embedded
default, or in memory without one); `PostgresPlanningStore` in a PostgreSQL database
that workers on many machines share. Both are synchronous and thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ._models import PlanningState, Todo
from ._store import DB_FILENAME, Scope

__all__ = ["PlanningStorage", "open_storage"]


class PlanningStorage(Protocol):
    """Goal, todos and observations per (session, thread) scope.

    Every change is one transaction that ends by reading the state back. A PostgreSQL
    backend raises `DatabaseUnavailable` from any method while its database is down.
    """

    def close(self) -> None:
        """Release the database (idempotent)."""

    def state(self, scope: Scope) -> PlanningState:
        """The scope's current plan (empty when the scope was never used)."""

    def set_goal(self, scope: Scope, goal: str) -> tuple[PlanningState, str | None]:
        """Make ``goal`` the active goal; the new state and the goal before."""

    def clear_goal(self, scope: Scope) -> tuple[PlanningState, str | None]:
        """Clear the active goal; the new state and the cleared goal."""

    def add_todo(self, scope: Scope, name: str) -> tuple[PlanningState, Todo]:
        """Append a pending todo with the scope's next id."""

    def mark_todo(
        self, scope: Scope, todo_id: int, completed: bool
    ) -> tuple[PlanningState, Todo, bool]:
        """Set a todo's completion; the state, the todo before, and whether it changed.

        Raises:
            UnknownTodoIds: the scope has no todo ``todo_id``.
        """

    def clear_todos(
        self, scope: Scope, ids: Sequence[int] | None
    ) -> tuple[PlanningState, list[Todo]]:
        """Remove the todos ``ids`` (all when None); the state and the removed todos.

        Raises:
            UnknownTodoIds: some of ``ids`` do not exist (nothing is removed then).
        """

    def add_observation(self, scope: Scope, text: str) -> tuple[PlanningState, list[str]]:
        """Append an observation; the new state and the observations dropped, oldest first."""

    def clear_session(self, scope: Scope) -> tuple[PlanningState, PlanningState]:
        """Forget the scope's plan (todo ids keep counting); the state before and after."""


def open_storage(folder: Path | None, database_url: str | None) -> PlanningStorage:
    """PostgreSQL when ``database_url`` is given, else the SQLite file `DB_FILENAME` in
    ``folder`` (in memory when ``folder`` is None).

    Raises:
        ValueError: ``database_url`` is not a PostgreSQL URL.
    """
    if database_url:
        from ._pg import PostgresPlanningStore

        return PostgresPlanningStore(database_url)
    from ._store import PlanningStore

    return PlanningStore(folder / DB_FILENAME if folder is not None else None)
