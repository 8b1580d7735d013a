"""The Tasks extension of MCP 2026-07-28 (``io.modelcontextprotocol/tasks``), receiver side.

2026-07-28 moved tasks out of the core protocol into an extension (SEP-2663), which the
official SDK does not implement: `ExtensionTasks` is the store, the three ``tasks/*``
methods, and a server middleware, beside the 2025-11-25 tasks of `ServedTasks`.

- **Negotiated per request.** A client that lists the extension in its request's
  ``clientCapabilities.extensions`` may get a ``CreateTaskResult`` (``resultType:
  "task"``) for a ``tools/call`` of a tool that declares task support; any other call,
  and any other client, gets the tool's result as before (the server decides; the
  client never asks for a task). ``server/discover`` lists the extension.
- ``tasks/get`` answers the task with its result, its JSON-RPC error, or its
  outstanding ``inputRequests``; ``tasks/update`` delivers ``inputResponses``;
  ``tasks/cancel`` stops the tool call. A client that did not declare the extension
  gets -32021 (missing required client capability) for all three.
- **Input while a task waits.** A tool's request to the client (elicitation, sampling,
  roots) puts the task in ``input_required`` with the request under a key never used
  before in that task, until a ``tasks/update`` answers it (the tool goes on) or
  ``input_timeout`` passes (the tool's request fails, saying so).
- **Whose task.** A task belongs to its caller: the OAuth subject; without OAuth (the
  static token, or none) to whoever holds its id, which is unguessable. One caller holds
  at most ``max_tasks`` tasks until their ttl passes; each is swept on a timer then.
- A tool result with ``isError`` is ``completed`` (the extension's rule; 2025-11-25 tasks
  call it ``failed``); a JSON-RPC error during the call is ``failed``, with the error.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Self

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from nativemcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    TASKS_EXTENSION,
    TERMINAL_TASK_STATUSES,
    ClientRequestError,
)

from .._defaults import DEFAULT_MAX_TASK_TTL, DEFAULT_MAX_TASKS
from .._suspended import client_request
from ..auth import request_caller
from ._task_rows import ROW_SWEEP_INTERVAL, SYNC_INTERVAL, TaskRows
from ._task_table import POLL_INTERVAL_MS, TaskState, TaskTable
from ._tasks import DEFAULT_TASK_TTL_MS

__all__ = [
    "MISSING_CLIENT_CAPABILITY",
    "ExtensionTask",
    "ExtensionTasks",
    "TaskExtensionCalls",
    "declares_tasks",
]

_logger = logging.getLogger("nativemcp.serve")

MISSING_CLIENT_CAPABILITY: Final = -32021
"""The JSON-RPC error of a request that needs a capability its client did not declare."""

Work = Callable[["ExtensionTask"], Awaitable[types.CallToolResult]]
"""A task's tool call, given its task (to ask the client through, and report to)."""


@dataclass(eq=False)
class _Asked:
    """One of a task's requests to the client, until a ``tasks/update`` answers it."""

    request: dict[str, Any]
    result_type: type[types.Result]
    answered: anyio.Event = field(default_factory=anyio.Event)
    response: dict[str, Any] | None = None


@dataclass(eq=False, kw_only=True)
class ExtensionTask(TaskState):
    """One task: what ``tasks/get`` says of it, and its requests waiting for answers."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: dict[str, _Asked] = field(default_factory=dict)
    _requests_made: int = 0

    def wire(self) -> dict[str, Any]:
        """The task as ``tasks/get`` answers it (a ``DetailedTask``)."""
        wire: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            wire["statusMessage"] = self.status_message
        if self.status == "input_required":
            wire["inputRequests"] = {key: asked.request for key, asked in self.asked.items()}
        elif self.status == "completed" and self.result is not None:
            wire["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            wire["error"] = self.error
        return wire

    def driver(self) -> ServerRequestContext[Any] | None:
        """No request carries a task's progress or logs (the extension sends neither)."""
        return None

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The tool's request to the client: listed in ``inputRequests`` (the task is
        ``input_required``) until a ``tasks/update`` answers it.

        Raises:
            ClientRequestError: a request serve cannot send, or no answer within the
                input timeout.
        """
        request, result_type = client_request(method, params)
        self._requests_made += 1
        # A key is never reused within a task, as the extension requires.
        key = f"{method.replace('/', '-')}-{self._requests_made}"
        wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        asked = _Asked(wire, result_type)
        self.asked[key] = asked
        self.set_status("input_required")
        try:
            with anyio.move_on_after(self.input_timeout):
                await asked.answered.wait()
        finally:
            del self.asked[key]
            if not self.asked:
                self.set_status("working")
        if asked.response is None:
            raise ClientRequestError(
                f"the task's {method} request (inputRequests key {key!r}) got no answer in "
                f"a tasks/update within {self.input_timeout:g} s"
            )
        return asked.response

    def answer(self, responses: Mapping[str, Any]) -> int:
        """Deliver ``responses`` (``inputResponses``) to the requests waiting under their
        keys; a key not waiting now is ignored, as the extension says. How many were.

        Raises:
            MCPError: INVALID_PARAMS for a response that is not its request's result
                (nothing is delivered then).
        """
        delivered: list[tuple[_Asked, dict[str, Any]]] = []
        for key, raw in responses.items():
            asked = self.asked.get(key)
            if asked is None or asked.answered.is_set():
                continue
            try:
                parsed = asked.result_type.model_validate(raw)
            except ValidationError as exc:
                method = asked.request.get("method")
                raise MCPError(
                    INVALID_PARAMS, f"inputResponses[{key!r}] is not a {method} result: {exc}"
                ) from exc
            dumped = parsed.model_dump(by_alias=True, mode="json", exclude_none=True)
            delivered.append((asked, dumped))
        for waiting, response in delivered:
            waiting.response = response
            waiting.answered.set()
        return len(delivered)


def declares_tasks(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the client of ``ctx`` listed the Tasks extension on this request."""
    capabilities = getattr(ctx.session, "client_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _checked(request: Mapping[str, Any], raw: Any) -> dict[str, Any]:
    """``raw`` as the result of ``request`` (a listed input request), or refused.

    Raises:
        MCPError: INVALID_PARAMS when it is not that request's result.
    """
    method = str(request.get("method"))
    try:
        _, result_type = client_request(method, dict(request.get("params") or {}))
        parsed = result_type.model_validate(raw)
    except (ValidationError, ClientRequestError) as exc:
        raise MCPError(
            INVALID_PARAMS, f"an inputResponses entry is not a {method} result: {exc}"
        ) from exc
    dumped: dict[str, Any] = parsed.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


@dataclass(eq=False)
class _Shared:
    """A task this replica runs with rows: its drive's scope (stopped when the row is
    gone), and its state as last written."""

    task: ExtensionTask
    scope: anyio.CancelScope
    written: dict[str, Any]


def _owner(ctx: ServerRequestContext[Any]) -> str | None:
    caller = request_caller(ctx)
    return caller.subject if caller is not None else None


class ExtensionTasks(TaskTable[ExtensionTask]):
    """The 2026-07-28 Tasks extension's tasks of one served MCP server.

    Use as an async context manager around serving; outside it (and when not
    ``enabled``) the extension is not offered and every call answers as before.

    Args:
        input_timeout: seconds a task's request to the client waits for its answer.
        enabled: False for stateless replicas, whose next request may reach another
            process that does not know the task.
        max_tasks: tasks one caller may hold at once (``--max-tasks``).
        max_ttl: how long a task is kept, at most, in seconds (``--max-task-ttl``).
        rows: the tasks' rows in PostgreSQL (`TaskRows`), shared by replicas: the
            extension is then offered also where ``enabled`` is False (stateless), and
            ``tasks/*`` are answered from the rows, whichever replica runs the task.

    Raises:
        ValueError: ``max_tasks`` is not at least 1, or ``max_ttl`` not positive.
    """

    def __init__(
        self,
        input_timeout: float,
        *,
        enabled: bool = True,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_ttl: float = DEFAULT_MAX_TASK_TTL,
        rows: TaskRows | None = None,
    ) -> None:
        shared = rows is not None
        super().__init__(enabled=enabled or shared, max_tasks=max_tasks, max_ttl=max_ttl)
        self._rows = rows
        self._input_timeout = input_timeout
        # The tasks this replica runs with rows: `_beat_rows` writes for them all at once.
        self._shared: dict[str, _Shared] = {}
        # No client asks a ttl here: each task is kept the default, or the longest granted.
        self.ttl_ms = min(DEFAULT_TASK_TTL_MS, self.max_ttl_ms)

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Self]:
        async with contextlib.AsyncExitStack() as stack:
            if self._rows is not None:
                await stack.enter_async_context(self._rows)
                await self._rows.sweep()  # before the first request, then on a timer
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)  # unwound first: the sweeper ends
                group.start_soon(self._sweep_rows, self._rows)
                group.start_soon(self._beat_rows, self._rows)
            await stack.enter_async_context(super().__asynccontextmanager__())
            yield self

    @staticmethod
    async def _sweep_rows(rows: TaskRows) -> None:
        """Delete the rows past their ttl every `ROW_SWEEP_INTERVAL` seconds (whichever
        replica does it first)."""
        while True:
            await anyio.sleep(ROW_SWEEP_INTERVAL)
            await rows.sweep()

    async def create(self, ctx: ServerRequestContext[Any], work: Work) -> dict[str, Any]:
        """Start ``work`` as a task of the caller of ``ctx``; its ``CreateTaskResult``.

        Raises:
            MCPError: INVALID_REQUEST when the caller holds ``max_tasks`` tasks already.
        """
        owner = _owner(ctx)
        hint = f"wait for one to expire (each is kept {self.ttl_ms} ms)"
        self._admit(owner, "this caller", hint)
        task = ExtensionTask(
            task_id=secrets.token_urlsafe(16),
            owner=owner,
            ttl_ms=self.ttl_ms,
            input_timeout=self._input_timeout,
        )
        drive = functools.partial(self._drive, task, work)
        if self._rows is not None:
            await self._rows.sweep()
            # The limit is the caller's across replicas: their rows count.
            self._limit(await self._rows.held(owner), "this caller", hint)
            # Durably created before it is answered: any replica's tasks/get finds it.
            await self._rows.insert(task.task_id, owner, task.wire(), task.ttl_ms / 1000)
            drive = functools.partial(self._drive_shared, task, work, self._rows)
        self._begin(task.task_id, task, drive)
        return {"resultType": "task", **task.wire()}

    async def _drive_shared(self, task: ExtensionTask, work: Work, rows: TaskRows) -> None:
        """`_drive`, beating for the task (`_beat_rows`) while it runs, and writing its
        end at once."""
        shared = _Shared(task, anyio.CancelScope(), task.wire())  # as inserted
        self._shared[task.task_id] = shared
        try:
            with shared.scope:
                await self._drive(task, work)
        finally:
            del self._shared[task.task_id]
        # While the database is away, again each beat; past ``stale_after`` other
        # replicas call the task lost anyway, and its end is not written over that.
        with anyio.move_on_after(rows.stale_after):
            while True:
                try:
                    await rows.beat({task.task_id: task.wire()})
                    return
                except MCPError as exc:
                    _logger.warning("task %s: %s", task.task_id, exc.error.message)
                await anyio.sleep(SYNC_INTERVAL)

    async def _beat_rows(self, rows: TaskRows) -> None:
        """Every `SYNC_INTERVAL` seconds, one statement for every task this replica runs
        (its heartbeat, its state if it changed), taking what other replicas' requests
        left in the rows: a cancel, input responses. A task whose row is gone (expired:
        nobody can ask) is stopped."""
        while True:
            await anyio.sleep(SYNC_INTERVAL)
            running = list(self._shared.values())
            wires = {shared.task.task_id: shared.task.wire() for shared in running}
            try:
                asked = await rows.beat(
                    {
                        task_id: None if wire == shared.written else wire
                        for shared, (task_id, wire) in zip(running, wires.items(), strict=True)
                    }
                )
            except MCPError as exc:  # the database is away: the next beat tries again
                _logger.warning("tasks' heartbeat: %s", exc.error.message)
                continue
            for shared in running:
                task = shared.task
                shared.written = wires[task.task_id]
                found = asked.get(task.task_id)
                if found is None:
                    shared.scope.cancel()
                    continue
                cancel, responses = found
                if cancel:
                    task.scope.cancel()
                    task.set_status("cancelled", "cancelled by the client")
                elif responses:
                    with contextlib.suppress(MCPError):  # checked when they were given
                        task.answer(responses)

    async def _drive(self, task: ExtensionTask, work: Work) -> None:
        with task.scope:
            try:
                result = await work(task)
            except MCPError as exc:
                task.error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.set_status("failed", exc.error.message)
            except Exception as exc:  # the top of a background task: the client reads why
                _logger.exception("task %s failed", task.task_id)
                task.error = {"code": INTERNAL_ERROR, "message": str(exc)}
                task.set_status("failed", str(exc))
            else:
                task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                task.set_status("completed")
        task.set_status("cancelled")  # cancelled by tasks/cancel, expiry or shutdown

    def _named(self, ctx: ServerRequestContext[Any]) -> tuple[str, Mapping[str, Any]]:
        """The task id a ``tasks/*`` request names, and its params.

        Raises:
            MCPError: -32021 for a client that did not declare the extension,
                INVALID_PARAMS for a missing, unknown, expired or another's task.
        """
        if not declares_tasks(ctx):
            raise MCPError(
                MISSING_CLIENT_CAPABILITY,
                f"{ctx.method} is a method of the {TASKS_EXTENSION} extension: declare it "
                "in the request's clientCapabilities.extensions",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise MCPError(INVALID_PARAMS, f"{ctx.method} needs params.taskId, a string")
        # The client names the task in Mcp-Name, for routers at the edge: one that
        # disagrees with the body could send the request past their rules.
        headers = getattr(ctx.request, "headers", None)
        named = headers.get(MCP_NAME_HEADER) if headers is not None else None
        if named is not None and decode_header_value(named) != task_id:
            raise MCPError(
                types.HEADER_MISMATCH,
                f"{MCP_NAME_HEADER} header does not match the request body's 'taskId'",
            )
        return task_id, params

    def _find(self, ctx: ServerRequestContext[Any]) -> tuple[ExtensionTask, Mapping[str, Any]]:
        """The task a ``tasks/*`` request names (the caller's own), and its params.

        Raises:
            MCPError: as `_named`, and INVALID_PARAMS for an unknown, expired or
                another's task.
        """
        task_id, params = self._named(ctx)
        self._expire()
        task = self._tasks.get(task_id)
        if task is None or task.owner != _owner(ctx):
            raise MCPError(INVALID_PARAMS, f"no task {task_id!r} (unknown, or expired)")
        return task, params

    async def _row(self, ctx: ServerRequestContext[Any], rows: TaskRows) -> dict[str, Any]:
        task_id, _ = self._named(ctx)
        wire = await rows.load(task_id, _owner(ctx))
        if wire is None:
            raise MCPError(INVALID_PARAMS, f"no task {task_id!r} (unknown, or expired)")
        return wire

    async def get_task(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """``tasks/get``: the task, with its result, error or input requests."""
        if self._rows is not None:
            return {"resultType": "complete", **await self._row(ctx, self._rows)}
        task, _ = self._find(ctx)
        return {"resultType": "complete", **task.wire()}

    async def update_task(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """``tasks/update``: deliver ``inputResponses`` to the task's waiting requests."""
        _, params = self._named(ctx)
        responses = params.get("inputResponses")
        if not isinstance(responses, Mapping):
            raise MCPError(INVALID_PARAMS, "tasks/update needs params.inputResponses, an object")
        if self._rows is None:
            task, _ = self._find(ctx)
            task.answer(responses)
            return {"resultType": "complete"}
        wire = await self._row(ctx, self._rows)
        # Checked here, against the requests the row lists, so a bad one is refused now.
        waiting = wire.get("inputRequests", {})
        checked = {
            key: _checked(waiting[key], raw) for key, raw in responses.items() if key in waiting
        }
        await self._rows.request(wire["taskId"], _owner(ctx), cancel=False, responses=checked)
        return {"resultType": "complete"}

    async def cancel_task(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """``tasks/cancel``: stop the task's tool call (a task that ended stays so)."""
        if self._rows is not None:
            wire = await self._row(ctx, self._rows)
            await self._rows.request(wire["taskId"], _owner(ctx), cancel=True, responses={})
            return {"resultType": "complete"}
        task, _ = self._find(ctx)
        if task.status not in TERMINAL_TASK_STATUSES:
            task.scope.cancel()
            task.set_status("cancelled", "cancelled by the client")
        return {"resultType": "complete"}

    def install(
        self,
        server: LowLevelServer[Any],
        start: Callable[
            [ServerRequestContext[Any], types.CallToolRequestParams],
            Awaitable[dict[str, Any] | None],
        ],
    ) -> None:
        """Offer the extension on ``server``: ``start`` decides whether a ``tools/call``
        of a declaring client runs as a task (its ``CreateTaskResult``) or not (None)."""
        if self._enabled:
            server.extensions[TASKS_EXTENSION] = {}
            server.middleware.append(TaskExtensionCalls(self, start))


class TaskExtensionCalls:
    """The middleware: the ``tasks/*`` methods of 2026-07-28 (the SDK knows them only
    as 2025-11-25 methods), and a declaring client's ``tools/call`` offered to
    ``start``."""

    def __init__(
        self,
        tasks: ExtensionTasks,
        start: Callable[
            [ServerRequestContext[Any], types.CallToolRequestParams],
            Awaitable[dict[str, Any] | None],
        ],
    ) -> None:
        self._tasks = tasks
        self._start = start
        self._methods = {
            "tasks/get": tasks.get_task,
            "tasks/update": tasks.update_task,
            "tasks/cancel": tasks.cancel_task,
        }

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS or not self._tasks.running:
            return await call_next(ctx)
        method = self._methods.get(ctx.method)
        if method is not None:
            return await method(ctx)
        wire = ctx.params
        if (
            ctx.method == "tools/call"
            and isinstance(wire, Mapping)
            # A retry that carries answers resumes a suspended call: not a new task.
            and wire.get("requestState") is None
            and declares_tasks(ctx)
        ):
            try:
                params = types.CallToolRequestParams.model_validate(wire, by_name=False)
            except ValidationError as exc:
                raise MCPError(INVALID_PARAMS, f"invalid tools/call params: {exc}") from exc
            created = await self._start(ctx, params)
            if created is not None:
                return created
        return await call_next(ctx)
