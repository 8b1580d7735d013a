"""Task constants both eras and both sides share (serve's tasks, the pool's clients)."""

from __future__ import annotations

from typing import Final

__all__ = ["TASKS_EXTENSION", "TERMINAL_TASK_STATUSES"]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 Tasks extension's identifier.

It is the key in ``capabilities.extensions`` on both sides (the official SDK does not
define it)."""

TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves, in 2025-11-25 tasks and the 2026-07-28 extension."""
