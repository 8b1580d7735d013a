"""Task-augmented tool calls to an external MCP server (MCP 2025-11-25 tasks).

A tool whose ``execution.taskSupport`` is ``"required"`` answers only a call that asks
for a task: ``tools/call`` with ``task`` in its params returns a ``CreateTaskResult``
at once, and the tool's result comes from ``tasks/result``, which waits for the task to
end. `call_as_task` makes such a call look like any other: it creates the task, waits
for its result, turns its status messages into progress, and cancels the task
(``tasks/cancel``) when the caller gives up (a time limit, a cancelled caller).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from nativemcp.protocol import TERMINAL_TASK_STATUSES

from .._sdk_seam import send_raw_request
from ._task_polling import StatusMessages, cancel_task, poll_pause

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

    from .._handle import ProgressCallback

__all__ = ["accepts_task", "call_as_task", "runs_as_task"]

_logger = logging.getLogger("nativemcp.external")


def runs_as_task(execution: Any) -> bool:
    """Whether a tool with this ``execution`` must be called as a task."""
    return execution is not None and getattr(execution, "task_support", None) == "required"


def accepts_task(execution: Any) -> bool:
    """Whether a tool with this ``execution`` may be called as a task (``"optional"`` or
    ``"required"``; absent is ``"forbidden"``)."""
    return execution is not None and getattr(execution, "task_support", None) in (
        "optional",
        "required",
    )


async def call_as_task(
    client: Client,
    tool: str,
    arguments: dict[str, Any],
    on_progress: ProgressCallback | None,
) -> mcp_types.CallToolResult:
    """Call ``tool`` as a task and return its result once the task ends.

    Raises:
        MCPError: the server refused the call or the task's result.
    """
    import mcp_types

    # The SDK checks a tools/call answer against CallToolResult, which a task's
    # CreateTaskResult is not: this one request is sent raw, the rest of the exchange
    # through the SDK's typed task requests.
    raw = await send_raw_request(
        client, "tools/call", {"name": tool, "arguments": arguments, "task": {}}
    )
    task = mcp_types.CreateTaskResult.model_validate(raw).task
    try:
        async with anyio.create_task_group() as watchers:
            if on_progress is not None:
                watchers.start_soon(_report_status, client, task, on_progress)
            result: mcp_types.CallToolResult = await client.session.send_request(
                mcp_types.GetTaskPayloadRequest(
                    params=mcp_types.GetTaskPayloadRequestParams(task_id=task.task_id)
                ),
                mcp_types.CallToolResult,
            )
            watchers.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        # Abandoned (a time limit, a cancelled caller): stop the work on the server.
        cancel = mcp_types.CancelTaskRequest(
            params=mcp_types.CancelTaskRequestParams(task_id=task.task_id)
        )
        await cancel_task(lambda: client.session.send_request(cancel, mcp_types.CancelTaskResult))
        raise
    return result


async def _report_status(client: Client, task: Any, on_progress: ProgressCallback) -> None:
    """Poll the task (at the interval it asks for) and report each new status message."""
    import mcp_types

    messages = StatusMessages(on_progress)
    while True:
        await messages.saw(task.status_message)
        if task.status in TERMINAL_TASK_STATUSES:
            return
        await poll_pause(task.poll_interval)
        try:
            task = await client.session.send_request(
                mcp_types.GetTaskRequest(
                    params=mcp_types.GetTaskRequestParams(task_id=task.task_id)
                ),
                mcp_types.GetTaskResult,
            )
        except Exception:  # progress is a courtesy: tasks/result still brings the result
            _logger.debug("task %s: a status poll failed; no more progress", task.task_id)
            return
