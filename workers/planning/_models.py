"""The planning state as code sees it: typed, camelCase on the wire, snake_case in Python."""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["DEFAULT_SCOPE", "MAX_OBSERVATIONS", "MAX_TEXT_CHARS", "PlanningState", "Todo"]

MAX_OBSERVATIONS: Final = 10
"""Observations kept per scope; adding one more drops the oldest."""

MAX_TEXT_CHARS: Final = 10_000
"""Default longest goal, todo name or observation (the ``max_text_chars`` option)."""

DEFAULT_SCOPE: Final = "default"
"""The session or thread id used while the caller has not switched to one (None)."""


class Todo(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """One step of the plan."""

    id: int
    """Unique within its (session, thread) scope and never reused there."""
    name: str
    completed: bool = False


class PlanningState(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """The plan of one (session, thread) scope; every planning tool returns it."""

    goal: str | None = None
    """The active goal, or None when there is none."""
    last_cleared_goal: str | None = None
    """The goal most recently cleared (or replaced by a new one)."""
    todos: list[Todo] = msgspec.field(default_factory=list)
    """In the order they were added."""
    observations: list[str] = msgspec.field(default_factory=list)
    """Oldest first; at most `MAX_OBSERVATIONS`."""

    @property
    def pending(self) -> list[Todo]:
        """The todos not yet completed, in order."""
        return [todo for todo in self.todos if not todo.completed]
