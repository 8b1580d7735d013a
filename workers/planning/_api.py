"""`PlanningAPI`: the planning server's tools as a typed interface for `WorkerPool.server`.

```python
planning = pool.server(PlanningAPI)
await planning.switch_context("session-1", "thread-1")  # the proxy's own method
state = await planning.add_todo(name="Write the tests")  # -> PlanningState
```

Each method mirrors one tool of `create_server` (same argument names, types and
defaults) and returns the tool's value type: every planning tool answers with the
whole `PlanningState`. ``tests/workers/test_builtin_interfaces.py`` checks the two stay the same.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from ._models import PlanningState

__all__ = ["PlanningAPI"]


class PlanningAPI(Protocol):
    """The ``planning`` server as a typed proxy: ``pool.server(PlanningAPI)``."""

    server_name: ClassVar[str] = "planning"

    async def create_goal(self, *, goal: str) -> PlanningState:
        """Set the plan's goal (the current one is remembered as the previous goal)."""

    async def clear_goal(self) -> PlanningState:
        """Clear the current goal; todos and observations stay."""

    async def add_todo(self, *, name: str) -> PlanningState:
        """Add a pending todo."""

    async def mark_todo(self, *, id: int, completed: bool = True) -> PlanningState:
        """Mark a todo as completed (or, with ``completed=False``, as pending again)."""

    async def clear_todos(self, *, ids: list[int] | None = None) -> PlanningState:
        """Remove the given todos, or every todo when ``ids`` is None."""

    async def add_observation(self, *, observation: str) -> PlanningState:
        """Record an observation; only the newest are kept."""

    async def clear_session(self) -> PlanningState:
        """Reset this scope's plan: goal, previous goal, todos and observations."""

    async def get_current_state(self) -> PlanningState:
        """The whole plan."""
