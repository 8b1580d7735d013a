"""What both eras' tasks share: a task's state and how it moves (`TaskState`), and a
table of tasks, run in a task group of their own, each dropped (its tool call
cancelled) when its ttl passes, asked about or not.

`TaskTable` is the base of `ServedTasks` (2025-11-25 tasks) and `ExtensionTasks` (the
2026-07-28 Tasks extension), `TaskState` of their tasks (`ServedTask`,
`ExtensionTask`); each says what else its task holds and how it is asked about.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Generic, Protocol, Self, TypeVar

import anyio
import anyio.abc
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import INTERNAL_ERROR, INVALID_REQUEST, TERMINAL_TASK_STATUSES

__all__ = ["POLL_INTERVAL_MS", "Expiring", "TaskState", "TaskTable", "check_task_limits"]

POLL_INTERVAL_MS: Final = 1000
"""How often a client is asked to poll a task, in ms (2025-11-25's ``pollInterval``,
the extension's ``pollIntervalMs``)."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(eq=False, kw_only=True)
class TaskState:
    """A task as either era reports it: whose it is, its status and status message,
    when it was made and last changed, when it expires, and the scope of its tool call."""

    task_id: str
    owner: str | None
    ttl_ms: int
    input_timeout: float
    status: str = "working"
    status_message: str | None = None
    created_at: str = field(default_factory=_now)
    last_updated_at: str = ""
    expires: float = 0.0
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def __post_init__(self) -> None:
        self.last_updated_at = self.created_at
        self.expires = anyio.current_time() + self.ttl_ms / 1000

    def set_status(self, status: str, message: str | None = None) -> None:
        """Move the task to ``status`` (a task that ended stays as it ended)."""
        if self.status in TERMINAL_TASK_STATUSES:
            return
        self.status = status
        if message is not None:
            self.status_message = message
        self.last_updated_at = _now()

    def report(self, message: str) -> None:
        """The tool's progress message becomes the task's status message."""
        self.set_status(self.status, message)


class Expiring(Protocol):
    """A task as the table keeps it: whose it is, when it expires, and the scope of its
    tool call."""

    @property
    def owner(self) -> str | None: ...
    @property
    def expires(self) -> float: ...
    @property
    def scope(self) -> anyio.CancelScope: ...


T = TypeVar("T", bound=Expiring)


class TaskTable(anyio.AsyncContextManagerMixin, Generic[T]):
    """Tasks by id, run in the table's task group while it is entered.

    Args:
        enabled: False for stateless replicas: entering runs nothing, no task is kept.
        max_tasks: tasks one owner may hold at once (``--max-tasks``).
        max_ttl: the longest a task is kept, in seconds (``--max-task-ttl``).

    Raises:
        ValueError: ``max_tasks`` is not at least 1, or ``max_ttl`` not positive.
    """

    def __init__(self, *, enabled: bool, max_tasks: int, max_ttl: float) -> None:
        check_task_limits(max_tasks, max_ttl)
        self._enabled = enabled
        self.max_tasks = max_tasks
        self.max_ttl_ms = max(1, int(max_ttl * 1000))
        self._tasks: dict[str, T] = {}
        self._group: anyio.abc.TaskGroup | None = None
        # Set when a task is added: the sweeper's next expiry may now be sooner.
        self._added = anyio.Event()

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Self]:
        if not self._enabled:
            yield self
            return
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._sweep)
            try:
                yield self
            finally:
                # Serving ends: the tasks still running end with it.
                self._group = None
                self._tasks.clear()
                group.cancel_scope.cancel()

    @property
    def running(self) -> bool:
        """Whether tasks are offered at all (inside ``async with``, enabled)."""
        return self._group is not None

    def __len__(self) -> int:
        return len(self._tasks)

    def _admit(self, owner: str | None, holder: str, hint: str) -> None:
        """Refuse a new task of ``owner`` (``holder`` in words) outside serving or past
        ``max_tasks``; ``hint`` says what to do.

        Raises:
            MCPError: INTERNAL_ERROR outside serving, INVALID_REQUEST past the limit
                (data ``{"reason": "too_many_tasks", "maxTasks": N}``).
        """
        if self._group is None:
            raise MCPError(INTERNAL_ERROR, "tasks are not running on this server")
        self._expire()
        self._limit(sum(1 for task in self._tasks.values() if task.owner == owner), holder, hint)

    def _limit(self, held: int, holder: str, hint: str) -> None:
        """Refuse one more task to a ``holder`` who holds ``held``, past ``max_tasks``.

        Raises:
            MCPError: INVALID_REQUEST, as `_admit` says.
        """
        if held >= self.max_tasks:
            raise MCPError(
                INVALID_REQUEST,
                f"{holder} holds {held} tasks, the most it may (max_tasks "
                f"{self.max_tasks}, nativemcp serve --max-tasks): a task counts until "
                f"its ttl passes; {hint}",
                {"reason": "too_many_tasks", "maxTasks": self.max_tasks},
            )

    def _begin(self, task_id: str, task: T, drive: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Keep ``task`` and run ``drive`` (its tool call) in the table's task group."""
        assert self._group is not None  # callers refuse a task outside serving first
        self._tasks[task_id] = task
        self._added.set()
        self._group.start_soon(drive)

    def _expire(self) -> None:
        now = anyio.current_time()
        for task_id, task in list(self._tasks.items()):
            if task.expires <= now:
                task.scope.cancel()
                del self._tasks[task_id]

    async def _sweep(self) -> None:
        """End each task when its ttl passes, asked about or not (its result and its
        owner's share of the task limit go with it)."""
        while True:
            self._expire()
            self._added = anyio.Event()
            soonest = min((task.expires for task in self._tasks.values()), default=math.inf)
            with anyio.move_on_at(soonest):
                await self._added.wait()


def check_task_limits(max_tasks: int, max_ttl: float) -> None:
    """Refuse task limits that would serve no task.

    Raises:
        ValueError: ``max_tasks`` is not at least 1, or ``max_ttl`` is not a positive,
            finite number of seconds.
    """
    if isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1:
        raise ValueError(f"max_tasks must be at least 1 task per session, not {max_tasks!r}")
    if not (math.isfinite(max_ttl) and max_ttl > 0):
        raise ValueError(f"max_task_ttl must be a positive number of seconds, not {max_ttl!r}")
