"""The 2026-07-28 Tasks extension (``io.modelcontextprotocol/tasks``) toward an external
MCP server: the pool as the requestor.

The official SDK's client does not implement the extension, but it lets an extension
claim a result shape of ``tools/call`` (`ResultClaim`): `TasksClaim` claims
``resultType: "task"``. The pool's client advertises the extension (at 2026-07-28 only:
the SDK drops a claim-bearing extension from a handshake-era connection, where
`call_as_task` runs 2025-11-25 tasks); a server that offers it may then answer a call of
a tool that supports tasks with a task, and `TasksClaim` follows that task to its end so
the caller gets an ordinary ``CallToolResult``:

- ``tasks/get`` at the task's ``pollIntervalMs`` (1 s when it gives none); each new
  ``statusMessage`` is the call's progress;
- a task that is ``input_required`` has its ``inputRequests`` answered as an input
  round's requests are (the call's own answerer, else the pool's handlers), sent back in
  a ``tasks/update``; a request nobody answers cancels the task and fails the call, and
  more requests than the pool's ``input_rounds`` likewise;
- ``completed`` is the task's result (a tool error included, as the extension says);
  ``failed`` its JSON-RPC error; a task the server cancelled, an error saying so;
- a caller that gives up (a time limit, a cancelled caller) cancels the task
  (``tasks/cancel``, shielded and bounded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import mcp_types
from mcp import InputRequiredRoundsExceededError, MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

from nativemcp.protocol import INTERNAL_ERROR, TASKS_EXTENSION

from ._task_polling import StatusMessages, cancel_task, poll_pause

if TYPE_CHECKING:
    from .._handle import CallOptions

__all__ = ["TaskInputs", "TasksClaim"]


class CreatedTask(mcp_types.Result):
    """A ``tools/call`` answered with a task (the extension's ``CreateTaskResult``)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None


class DetailedTask(mcp_types.Result):
    """What ``tasks/get`` answers: the task, with its result, error or input requests."""

    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] | None = None


class _TaskParams(mcp_types.RequestParams):
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _GetTask(mcp_types.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"  # the extension names the task in Mcp-Name


class _UpdateTask(mcp_types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class _CancelTask(mcp_types.Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class TaskInputs(Protocol):
    """Who answers a task's input requests (`ServerRequests`), and whose call it is."""

    server: str

    def current_call(self) -> CallOptions | None: ...

    async def answer_request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[Any, mcp_types.ErrorData | None]: ...


class TasksClaim(ClientExtension):
    """The Tasks extension on the pool's client of one external server: advertised, and
    its tasks followed to their end (module docstring). ``input_rounds``: the most input
    requests one task may make."""

    identifier = TASKS_EXTENSION

    def __init__(self, requests: TaskInputs, input_rounds: int) -> None:
        self._requests = requests
        self._input_rounds = input_rounds

    def claims(self) -> Sequence[ResultClaim[Any]]:
        """``resultType: "task"`` on ``tools/call``, resolved by `follow`."""
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=self.follow),)

    async def follow(self, created: CreatedTask, context: ClaimContext) -> mcp_types.CallToolResult:
        """Poll the task ``created`` to its end; its result as the call's.

        Raises:
            MCPError: the task failed (its error), the server cancelled it, or one of
                its input requests could not be answered.
            InputRequiredRoundsExceededError: it asked more than ``input_rounds`` times.
        """
        try:
            return await self._follow(context.session, context.tool_name, created)
        except anyio.get_cancelled_exc_class():
            # Abandoned (a time limit, a cancelled caller): stop the work on the server.
            await _cancel(context.session, created.task_id)
            raise

    async def _follow(
        self, session: Any, tool: str, created: CreatedTask
    ) -> mcp_types.CallToolResult:
        task = DetailedTask.model_validate(created.model_dump(by_alias=True))
        options = self._requests.current_call()
        messages = StatusMessages(options.on_progress if options is not None else None)
        answered: set[str] = set()  # a key answered stays listed until the server takes it
        limit = self._input_rounds
        while True:
            await messages.saw(task.status_message)
            ended = _ended(task, self._requests.server, tool)
            if ended is not None:
                return ended
            waiting = {
                key: request
                for key, request in (task.input_requests or {}).items()
                if key not in answered
            }
            if task.status == "input_required" and waiting:
                try:
                    if len(answered) + len(waiting) > limit:
                        raise InputRequiredRoundsExceededError(limit)
                    responses = {
                        key: await self._answer(key, request) for key, request in waiting.items()
                    }
                except (MCPError, InputRequiredRoundsExceededError):
                    # The pool gave up on the task: so does the server.
                    await _cancel(session, task.task_id)
                    raise
                answered |= responses.keys()
                params = _UpdateParams(task_id=task.task_id, input_responses=responses)
                await session.send_request(_UpdateTask(params=params), mcp_types.Result)
            else:
                await poll_pause(task.poll_interval_ms)
            task = await session.send_request(
                _GetTask(params=_TaskParams(task_id=task.task_id)), DetailedTask
            )

    async def _answer(self, key: str, request: dict[str, Any]) -> Any:
        """The answer to one of the task's input requests, as an input round's.

        Raises:
            MCPError: nobody could answer it (the answerer's error, and why).
        """
        method = str(request.get("method"))
        params = dict(request.get("params") or {})
        result, error = await self._requests.answer_request(method, params)
        if error is not None:
            raise MCPError(
                error.code,
                f"MCP server {self._requests.server!r}'s task asked {method} "
                f"(inputRequests key {key!r}) and it could not be answered: {error.message}",
            )
        return result


def _ended(task: DetailedTask, server: str, tool: str) -> mcp_types.CallToolResult | None:
    """The call's result for a task that ended (None while it runs).

    Raises:
        MCPError: the task failed, the server cancelled it, or it completed without a
            result.
    """
    if task.status == "completed":
        if task.result is None:  # not an empty success: the server lost or withheld it
            raise MCPError(
                INTERNAL_ERROR,
                f"MCP server {server!r} reported the task of {tool!r} ({task.task_id}) "
                "completed but sent no result",
            )
        return mcp_types.CallToolResult.model_validate(task.result)
    if task.status == "failed":
        error = task.error or {}
        raise MCPError(
            int(error.get("code", INTERNAL_ERROR)),
            str(error.get("message") or task.status_message or f"task {task.task_id} failed"),
            error.get("data"),
        )
    if task.status == "cancelled":
        raise MCPError(
            INTERNAL_ERROR,
            f"MCP server {server!r} cancelled the task of {tool!r} ({task.task_id})"
            + (f": {task.status_message}" if task.status_message else ""),
        )
    return None


async def _cancel(session: Any, task_id: str) -> None:
    """``tasks/cancel`` for ``task_id``, shielded and bounded (`cancel_task`)."""
    request = _CancelTask(params=_TaskParams(task_id=task_id))
    await cancel_task(lambda: session.send_request(request, mcp_types.Result))
