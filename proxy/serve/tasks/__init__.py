"""Task-augmented calls served in both protocol eras.

`_tasks` (2025-11-25: the SDK's task methods, answered by the bridge's `ServedTasks`,
and the middleware that answers a task-augmented ``tools/call``), `_task_extension`
(2026-07-28's Tasks extension, ``io.modelcontextprotocol/tasks``, which the SDK does
not know), `_task_rows` (the extension's tasks in PostgreSQL, shared by replicas: where
a task row is written) and `_task_table` (what both eras share: the task group, the ttl
sweeper, the per-owner limit). This room imports the protocol's public names, the
official SDK, `serve/_defaults`, `serve/_suspended` and `serve/auth`; the rest of serve
imports it by the names below.
"""

from ._task_extension import ExtensionTasks as ExtensionTasks
from ._task_extension import TaskExtensionCalls as TaskExtensionCalls
from ._task_rows import TaskRows as TaskRows
from ._task_table import check_task_limits as check_task_limits
from ._tasks import TASKS_PROTOCOL_VERSION as TASKS_PROTOCOL_VERSION
from ._tasks import ServedTasks as ServedTasks
from ._tasks import TaskCalls as TaskCalls
from ._tasks import session_key as session_key

__all__ = [
    "TASKS_PROTOCOL_VERSION",
    "ExtensionTasks",
    "ServedTasks",
    "TaskCalls",
    "TaskExtensionCalls",
    "TaskRows",
    "check_task_limits",
    "session_key",
]
