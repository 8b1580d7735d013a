"""Task-augmented tool calls at the MCP boundary (MCP 2025-11-25 tasks, the receiver side).

A client that sees ``execution.taskSupport`` on a served tool may send ``tools/call``
with ``task`` in its params: the call then runs in the background, the answer is a
``CreateTaskResult`` at once, and the client polls ``tasks/get``, waits on
``tasks/result``, lists its tasks with ``tasks/list`` and stops one with
``tasks/cancel``.

The SDK's server (``mcp`` 2.3) parses and dispatches but keeps no tasks: it leaves the
``tasks/*`` methods to the application on 2025-11-25, and it checks a ``tools/call``
answer against ``CallToolResult``, which a ``CreateTaskResult`` is not. So `ServedTasks`
is the store, the four ``tasks/*`` request handlers, and a server middleware that
answers a task-augmented ``tools/call`` itself and adds the ``tasks`` capability to the
``initialize`` result. Tasks belong to the client session that created them (the HTTP
session; over stdio there is one client); their ids are unguessable.

What one session may hold is bounded: at most ``max_tasks`` tasks at once (a task
counts until its ``ttl`` passes, finished or not, as its result is kept that long; one
more is refused with a JSON-RPC error naming the limit), and no ``ttl`` longer than
``max_ttl`` seconds (a longer one is cut to it, which the ``CreateTaskResult`` says).
A session's tasks end with the session (deleted, idle, or its connection gone), and a
timer ends each task when its ``ttl`` passes, whether or not anyone asks about it.

While a task runs, the client is not waiting on any request of its own except, maybe,
a ``tasks/result``: the tool's progress messages become the task's ``statusMessage``,
its log messages go to a waiting ``tasks/result``, and a request to the client
(sampling, elicitation) puts the task in ``input_required`` until a ``tasks/result``
arrives to carry it, as the specification describes.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from nativemcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    TERMINAL_TASK_STATUSES,
    ClientRequestError,
)

from ..._sdk_seam import client_connection
from .._defaults import DEFAULT_MAX_TASK_TTL, DEFAULT_MAX_TASKS
from ._task_table import POLL_INTERVAL_MS, TaskState, TaskTable

__all__ = [
    "DEFAULT_TASK_TTL_MS",
    "TASKS_PROTOCOL_VERSION",
    "ServedTask",
    "ServedTasks",
    "TaskCalls",
    "session_key",
]

_logger = logging.getLogger("nativemcp.serve")

TASKS_PROTOCOL_VERSION: Final = "2025-11-25"
"""The protocol version whose tasks are served (2026-07-28 moved tasks to an extension)."""
DEFAULT_TASK_TTL_MS: Final = 3_600_000
"""How long a task is kept after its creation when the client asks for no ``ttl`` (ms),
unless the longest ``ttl`` granted is shorter."""
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key that ties a result or a request to its task."""
_CAPABILITY: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
_ENDS_TASKS: Final = "io.github.nativemcp/ends-tasks"
"""The key in a connection's state saying its end already ends its tasks."""
_T = TypeVar("_T", bound=types.Task)

Send = Callable[[ServerRequestContext[Any], str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Sends a request to the client of a context, on that request's stream."""


def _connection(ctx: ServerRequestContext[Any]) -> Any:
    """The SDK's `Connection` of ``ctx``'s client (its session id, state and exit stack);
    the request context names only the session around it."""
    return client_connection(ctx.session)


def session_key(ctx: ServerRequestContext[Any]) -> str | None:
    """The client session of ``ctx`` (the HTTP session id; None over stdio)."""
    value = getattr(_connection(ctx), "session_id", None)
    return value if isinstance(value, str) else None


@dataclass(eq=False, kw_only=True)
class ServedTask(TaskState):
    """One task: its state as the client reads it, and what its tool call needs to
    reach the client (a waiting ``tasks/result``)."""

    send: Send
    status: types.TaskStatus = "working"
    result: types.CallToolResult | None = None
    error: types.ErrorData | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    # The tasks/result requests waiting now: the client's open streams for this task.
    listeners: list[ServerRequestContext[Any]] = field(default_factory=list)
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    def wire(self, kind: type[_T]) -> _T:
        """The task as ``tasks/get``, ``tasks/cancel`` and ``tasks/list`` describe it."""
        return kind(
            task_id=self.task_id,
            status=self.status,
            status_message=self.status_message,
            created_at=self.created_at,
            last_updated_at=self.last_updated_at,
            ttl=self.ttl_ms,
            poll_interval=POLL_INTERVAL_MS,
        )

    def set_status(self, status: str, message: str | None = None) -> None:
        """`TaskState.set_status`; a task that ends wakes its waiting ``tasks/result``."""
        super().set_status(status, message)
        if self.status in TERMINAL_TASK_STATUSES:
            self.done.set()

    def driver(self) -> ServerRequestContext[Any] | None:
        """The request a log message can ride now: the newest waiting ``tasks/result``."""
        return self.listeners[-1] if self.listeners else None

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send the tool's request to the client on a ``tasks/result`` stream, waiting
        for one (the task is ``input_required`` meanwhile).

        Raises:
            ClientRequestError: no ``tasks/result`` came within the input timeout.
        """
        with anyio.move_on_after(self.input_timeout):
            while not self.listeners:
                self.set_status("input_required")
                self._arrived = anyio.Event()
                await self._arrived.wait()
        if not self.listeners:
            raise ClientRequestError(
                f"the task's {method} request found no tasks/result to reach the client "
                f"within {self.input_timeout:g} s (the task was input_required)"
            )
        self.set_status("working")
        meta = {**params.get("_meta", {}), RELATED_TASK: {"taskId": self.task_id}}
        return await self.send(self.listeners[-1], method, {**params, "_meta": meta})

    def listen(self, ctx: ServerRequestContext[Any]) -> None:
        """``ctx``, a ``tasks/result`` request, now waits on the task (and carries its
        requests to the client)."""
        self.listeners.append(ctx)
        self._arrived.set()


class ServedTasks(TaskTable[ServedTask]):
    """The tasks of one served MCP server, run in its own task group.

    Use as an async context manager around serving; outside it no task is offered
    (no capability, no ``execution`` on tools, ``task`` params ignored as the spec
    asks of a server without tasks).

    Args:
        send: sends a request to the client of a context (sampling, elicitation).
        input_timeout: seconds a task waits for a ``tasks/result`` to carry its request.
        enabled: False for stateless replicas, whose next request may reach another
            process that does not know the task.
        max_tasks: tasks one client session may hold at once (``--max-tasks``).
        max_ttl: the longest ``ttl`` granted, in seconds (``--max-task-ttl``).

    Raises:
        ValueError: ``max_tasks`` is not at least 1, or ``max_ttl`` not positive.
    """

    def __init__(
        self,
        send: Send,
        input_timeout: float,
        *,
        enabled: bool = True,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_ttl: float = DEFAULT_MAX_TASK_TTL,
    ) -> None:
        super().__init__(enabled=enabled, max_tasks=max_tasks, max_ttl=max_ttl)
        self._send = send
        self._input_timeout = input_timeout

    def offered(self, ctx: ServerRequestContext[Any]) -> bool:
        """Whether the client of ``ctx`` may run tool calls as tasks."""
        return self.offered_at(ctx.protocol_version)

    def offered_at(self, version: str | None) -> bool:
        """Whether a client of protocol ``version`` may run tool calls as tasks."""
        return self.running and version == TASKS_PROTOCOL_VERSION

    async def create(
        self,
        ctx: ServerRequestContext[Any],
        metadata: types.TaskMetadata,
        work: Callable[[ServedTask], Awaitable[types.CallToolResult]],
    ) -> dict[str, Any]:
        """Start ``work`` as a task of the client of ``ctx``; the ``CreateTaskResult``."""
        owner = session_key(ctx)
        self._admit(owner, "this session", "wait for one to expire, or ask shorter ttls")
        asked = metadata.ttl if metadata.ttl is not None and metadata.ttl > 0 else None
        task = ServedTask(
            task_id=secrets.token_urlsafe(16),
            owner=owner,
            ttl_ms=min(asked or DEFAULT_TASK_TTL_MS, self.max_ttl_ms),
            send=self._send,
            input_timeout=self._input_timeout,
        )
        self._end_with_session(ctx, owner)
        self._begin(task.task_id, task, functools.partial(self._drive, task, work))
        created = types.CreateTaskResult(task=task.wire(types.Task))
        return created.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _drive(
        self, task: ServedTask, work: Callable[[ServedTask], Awaitable[types.CallToolResult]]
    ) -> None:
        with task.scope:
            try:
                result = await work(task)
            except MCPError as exc:
                task.error = exc.error
                task.set_status("failed", exc.error.message)
            except Exception as exc:  # the top of a background task: the client reads why
                _logger.exception("task %s failed", task.task_id)
                task.error = types.ErrorData(code=INTERNAL_ERROR, message=str(exc))
                task.set_status("failed", str(exc))
            else:
                task.result = result
                # A tool error is a failed task (its result still says why).
                task.set_status("failed" if result.is_error else "completed")
        task.set_status("cancelled")  # cancelled by tasks/cancel, expiry or shutdown

    def _end_with_session(self, ctx: ServerRequestContext[Any], owner: str | None) -> None:
        """Have the session of ``ctx`` end its tasks when it ends (once per session)."""
        connection = _connection(ctx)
        state = getattr(connection, "state", None)
        if not isinstance(state, dict) or state.get(_ENDS_TASKS):
            return
        state[_ENDS_TASKS] = True
        # Unwound when the session ends: deleted, idle past its timeout, or gone.
        connection.exit_stack.callback(self.end_session, owner)

    def end_session(self, owner: str | None) -> int:
        """End every task of session ``owner`` (its tool calls cancelled, its results
        dropped); how many there were."""
        ended = [task_id for task_id, task in self._tasks.items() if task.owner == owner]
        for task_id in ended:
            self._tasks.pop(task_id).scope.cancel()
        return len(ended)

    def _find(self, ctx: ServerRequestContext[Any], task_id: str) -> ServedTask:
        self._expire()
        task = self._tasks.get(task_id)
        if task is None or task.owner != session_key(ctx):
            raise MCPError(INVALID_PARAMS, f"no task {task_id!r} (unknown, or expired)")
        return task

    # -- the tasks/* requests ------------------------------------------------------------

    async def get_task(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams
    ) -> types.GetTaskResult:
        """The task's status."""
        task = self._find(ctx, params.task_id)
        return task.wire(types.GetTaskResult)

    async def task_result(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        """The tool's result once the task ends (this request waits for it, and carries
        the task's requests to the client meanwhile)."""
        task = self._find(ctx, params.task_id)
        task.listen(ctx)
        try:
            await task.done.wait()
        finally:
            task.listeners.remove(ctx)
        if task.error is not None:
            raise MCPError.from_error_data(task.error)
        if task.result is None:
            raise MCPError(INVALID_PARAMS, f"task {task.task_id!r} was cancelled: no result")
        wire = task.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire["_meta"] = {**wire.get("_meta", {}), RELATED_TASK: {"taskId": task.task_id}}
        return wire

    async def list_tasks(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListTasksResult:
        """The client session's tasks, oldest first, in one page."""
        if params.cursor is not None:
            raise MCPError(INVALID_PARAMS, f"unknown cursor {params.cursor!r} (one page only)")
        self._expire()
        owner = session_key(ctx)
        return types.ListTasksResult(
            tasks=[task.wire(types.Task) for task in self._tasks.values() if task.owner == owner]
        )

    async def cancel_task(
        self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> types.CancelTaskResult:
        """Stop the task's tool call; the task is ``cancelled``.

        Raises:
            MCPError: INVALID_PARAMS for an unknown task or one that already ended.
        """
        task = self._find(ctx, params.task_id)
        if task.status in TERMINAL_TASK_STATUSES:
            raise MCPError(
                INVALID_PARAMS, f"cannot cancel task {task.task_id!r}: it is already {task.status}"
            )
        task.scope.cancel()
        task.set_status("cancelled", "cancelled by the client")
        return task.wire(types.CancelTaskResult)

    def install(
        self,
        server: LowLevelServer[Any],
        start: Callable[[ServerRequestContext[Any], types.CallToolRequestParams], Awaitable[Any]],
    ) -> None:
        """Serve the ``tasks/*`` methods on ``server`` and route its task-augmented
        ``tools/call`` requests to ``start`` (which calls `create`)."""
        add = server.add_request_handler
        add("tasks/get", types.GetTaskRequestParams, self.get_task)
        add("tasks/result", types.GetTaskPayloadRequestParams, self.task_result)
        add("tasks/list", types.PaginatedRequestParams, self.list_tasks)
        add("tasks/cancel", types.CancelTaskRequestParams, self.cancel_task)
        server.middleware.append(TaskCalls(self, start))


_HANDSHAKE_ONLY: Final = frozenset({"tasks/result", "tasks/list"})
"""2025-11-25's task methods that 2026-07-28 does not have (its Tasks extension's
``tasks/get`` carries the result, and there is no listing)."""


class TaskCalls:
    """The middleware: a task-augmented ``tools/call`` goes to ``start`` (the SDK's
    handler would check its ``CreateTaskResult`` as a ``CallToolResult``), and
    ``initialize`` declares the ``tasks`` capability when tasks are offered."""

    def __init__(
        self,
        tasks: ServedTasks,
        start: Callable[[ServerRequestContext[Any], types.CallToolRequestParams], Awaitable[Any]],
    ) -> None:
        self._tasks = tasks
        self._start = start

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        version = ctx.protocol_version
        if ctx.method in _HANDSHAKE_ONLY and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # 2026-07-28 has no such method (its Tasks extension follows a task with
            # tasks/get alone): the SDK serves this handler for every version.
            raise MCPError(
                METHOD_NOT_FOUND,
                f"Method not found: {ctx.method} is a 2025-11-25 method; on "
                f"{version} the Tasks extension follows a task with tasks/get",
            )
        if ctx.method == "initialize":
            result = await call_next(ctx)
            if (
                self._tasks.running
                and isinstance(result, dict)
                and result.get("protocolVersion") == TASKS_PROTOCOL_VERSION
            ):
                result["capabilities"] = {**result.get("capabilities", {}), "tasks": _CAPABILITY}
            return result
        wire = ctx.params
        if (
            ctx.method == "tools/call"
            and isinstance(wire, Mapping)
            and wire.get("task") is not None
            and self._tasks.offered(ctx)
        ):
            try:
                params = types.CallToolRequestParams.model_validate(wire, by_name=False)
            except ValidationError as exc:
                raise MCPError(INVALID_PARAMS, f"invalid tools/call params: {exc}") from exc
            created: HandlerResult = await self._start(ctx, params)
            return created
        return await call_next(ctx)
