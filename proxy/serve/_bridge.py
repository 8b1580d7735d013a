"""The MCP boundary: an official `mcp` low-level server whose requests go to the pool.

No MCP protocol handling is written here: the SDK's low-level `Server` parses, validates
and dispatches; its stdio transport and Streamable HTTP session manager carry the
messages (see `_serve`). Tools are the pool's catalog (`WorkerPool.list_tools`,
`WorkerPool.call_tool`), so what is served is exactly what an agent loop sees, external
servers included; each result's content blocks carry their service in ``_meta``.
Resources, prompts and completions are passed through as JSON to the server that owns
them. Results leave as spec ``CallToolResult``s, with a typed value that differs from
its JSON form in ``_meta["io.github.nativemcp/structuredResult"]``.

Per call, the MCP request's context travels with it: progress and log notifications
ride the request's own stream, a tool's ``ctx.sample``/``ctx.elicit`` become requests
to the client that made the call (on 2025-11-25) or suspend the call behind an
``InputRequiredResult`` until the client's retry brings the answers (on 2026-07-28, see
`SuspendedCalls`), and the client's session id is the call's scope. A 2025-11-25 client
may run a tool that declares task support as a task (`ServedTasks`).

The bridge holds its parts, each given what it reads: ``tools`` (`ServedTools`, the
served catalog), ``calls`` (`ToolCalls`, the pool call and its shaped result),
``features`` (`PassThroughFeatures`, resources, prompts, completions), ``results``
(`ServedResults`, results cut to a budget and kept), ``apps``,
``suspended``, ``tasks``, ``task_extension`` and ``logs`` (`ClientLogs`, the clients'
log levels); what is per request (the MCP context, the client's declared capabilities,
the scope check) stays here.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from nativemcp.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ClientRequestError,
    NativeMCPResponse,
    Tool,
)

from ..external import accepts_task
from ..tool_search import CALL_TOOL, SEARCH_TOOLS, ToolProfile
from ._apps import ServedApps
from ._capabilities import client_capabilities, missing_capability, require_capability
from ._code_mode import CODE_MODE_TOOLS, CodeMode, program_progress
from ._defaults import DEFAULT_MAX_TASK_TTL, DEFAULT_MAX_TASKS
from ._logs import ClientLogs
from ._pass_through import PassThroughFeatures
from ._search_mode import SearchMode, search_session
from ._selection import select_servers
from ._served_results import ServedResults
from ._served_tools import ServedTools
from ._suspended import DEFAULT_INPUT_TIMEOUT, ClientAsk, SuspendedCalls, client_request
from ._tool_calls import ToolCalls
from .auth import ScopeMap, request_caller, request_token
from .tasks import ExtensionTasks, ServedTasks, TaskRows, session_key

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["McpBridge"]


class TaskSide(Protocol):
    """What a task's tool call needs of its task, in either era's tasks."""

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...
    def driver(self) -> ServerRequestContext[Any] | None: ...
    def report(self, message: str) -> None: ...


class McpBridge(anyio.AsyncContextManagerMixin):
    """One MCP server over some of a running pool's servers.

    Its tools are the pool's catalog entries of those servers: under their full names
    (``builtin_server__tool``, ``server__tool`` for an external or the user's own) when several
    servers are served, under the tools' own names when one is. Prompts are named the
    same way.

    Args:
        pool: the running pool.
        servers: the names of the servers to serve (default: all), in listing order.
        name: the MCP server's name (``serverInfo.name``).
        version: its ``serverInfo.version`` (default: the installed nativemcp's).
        timeout: seconds per call (0 or less: no limit).
        suspend: let a tool ask a 2026-07-28 client for input by suspending its call
            until the client's retry, and run task-augmented calls (False for
            stateless replicas: the tool's request then fails with a
            `ClientRequestError` saying why, and no tasks are offered).
        input_timeout: seconds a suspended call waits for its client's retry before
            it is cancelled, and a task waits for a ``tasks/result`` to carry its
            request to the client.
        max_tasks: tasks one client session may hold at once (see `ServedTasks`).
        max_task_ttl: the longest ``ttl`` granted to a task, in seconds.
        profile: which tools are offered (globs on full names) and whether through
            the two meta-tools ``search_tools`` and ``call_tool`` (see `ToolProfile`);
            a tool the profile leaves out cannot be called either.
        scopes: the OAuth scope each tool needs (see `ScopeMap`): a caller sees in
            ``tools/list`` and may call only the tools its token's scopes cover. Under
            OAuth (`ResourceServer` in front), the caller's subject is each call's
            session scope, so per-caller state (browser pages, plans) is per user.
        result_budget: tokens per tool result (None, the default: no limit). One over
            it is cut, kept for its caller and linked as ``nativemcp://results/<id>``;
            ``read_result`` is listed to read the rest (see `ServedResults`).

    Calls are suspended, and tasks run, in the bridge's own task groups: run it with
    ``async with bridge:`` around serving (`serve_stdio` and `http_app` do).

    Its parts: ``tools`` (`ServedTools`: what is served, listed, found by name),
    ``calls`` (`ToolCalls`: the pool call and its result; ``calls.stop_calls`` at
    shutdown), ``features`` (`PassThroughFeatures`: resources, prompts, completions).

    Raises:
        ValueError: a named server is not running in the pool, or ``input_timeout`` is
            not a positive number, or a task limit is not, or ``result_budget`` is
            below `MIN_BUDGET` tokens.
    """

    def __init__(
        self,
        pool: WorkerPool,
        servers: Sequence[str] | None = None,
        *,
        name: str = "nativemcp",
        version: str | None = None,
        timeout: float = 0,
        instructions: str | None = None,
        suspend: bool = True,
        input_timeout: float = DEFAULT_INPUT_TIMEOUT,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_task_ttl: float = DEFAULT_MAX_TASK_TTL,
        profile: ToolProfile | None = None,
        scopes: ScopeMap | None = None,
        result_budget: int | None = None,
    ) -> None:
        self.pool = pool
        self.results = ServedResults(pool, result_budget)
        self.scopes = scopes or ScopeMap()
        self.servers = select_servers(pool, servers)
        # Resources, prompts and completions pass through as JSON: a typed proxy would
        # drop the fields of an external server's listings that nativemcp does not model.
        self.handles = {server: pool.handles[server] for server in self.servers}
        self.name = name
        self.version = version if version is not None else importlib.metadata.version("nativemcp")
        self.timeout = timeout
        # 0 or less: no limit (the handles take None for that).
        self._limit = timeout if timeout > 0 else None
        self.instructions = instructions
        self.suspend = suspend
        self.suspended = SuspendedCalls(input_timeout)
        # Tasks outlive the request that made them: a stateless replica cannot keep them.
        self.tasks = ServedTasks(
            _ask_client,
            input_timeout,
            enabled=suspend,
            max_tasks=max_tasks,
            max_ttl=max_task_ttl,
        )
        # 2026-07-28's Tasks extension, kept apart: its own ids, owners and rules; with a
        # database, in it, so that stateless replicas share them.
        url = pool.config.database_url
        self.task_extension = ExtensionTasks(
            input_timeout,
            enabled=suspend,
            max_tasks=max_tasks,
            max_ttl=max_task_ttl,
            rows=TaskRows(url) if url else None,
        )
        self.profile = profile or ToolProfile()
        self._single = len(self.servers) == 1
        self._search = SearchMode(pool)
        self._code = CodeMode(pool)
        self.apps = ServedApps(self.handles, namespaced=not self._single)
        # Under the meta-tools, tools are called by the full names a search gives.
        self.tools = ServedTools(
            pool,
            self.handles,
            self.profile,
            self.scopes,
            self.apps,
            self.results,
            own_names=self._single and not (self.profile.search or self.profile.code_mode),
        )
        self.calls = ToolCalls(pool, self.apps, self.results, self._limit)
        self.features = PassThroughFeatures(
            self.handles, self.apps, self.results, self._limit, single=self._single
        )
        self.logs = ClientLogs()  # each connection's level, and the sending

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Self]:
        await self.tools.catalog()  # read once, so a first call's headers are checked too
        # Together: if the tasks fail to start, the suspended calls' group is unwound.
        async with self.suspended, self.tasks, self.task_extension:
            yield self

    # -- handlers --------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every served tool of the catalog, in its order."""
        return await self.tools.tool_listing(
            self.tasks.offered(ctx), self.apps.offered(ctx), request_caller(ctx)
        )

    def _check_scopes(self, ctx: ServerRequestContext[Any], tool: Tool) -> None:
        # The HTTP layer answers 403 first; this covers what reaches the bridge otherwise.
        caller = request_caller(ctx)
        refused = self.scopes.refusal(tool.name, caller.scopes) if caller else None
        if refused is not None:
            raise MCPError(INVALID_REQUEST, refused)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the tool through the pool's catalog.

        Progress, logs, client requests and the client's session (the call's scope)
        ride along.

        On protocol 2026-07-28 a tool's request to the client suspends the call: the
        answer is an ``InputRequiredResult``, and the client's retry (carrying the
        responses and the echoed ``requestState``) resumes it (see `SuspendedCalls`)."""
        legacy = ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        if not legacy and params.request_state is not None:
            wire = (ctx.params or {}).get("inputResponses")
            responses = wire if isinstance(wire, dict) else None
            result: types.CallToolResult | types.InputRequiredResult = await self.suspended.resume(
                ctx, params.request_state, responses
            )
            return result
        routed = await self._routed(params, ctx)
        if isinstance(routed, types.CallToolResult):
            return routed
        tool, arguments = routed
        self._check_scopes(ctx, tool)  # the tool itself, also when `call_tool` names it
        if legacy and self.suspend:

            async def on_request(method: str, request_params: dict[str, Any]) -> dict[str, Any]:
                return await _ask_client(ctx, method, request_params)

            return await self._run(
                tool, arguments, ctx, self._declared(ctx, on_request), lambda: ctx
            )
        if not self.suspend or not self.suspended.running:
            return await self._run(tool, arguments, ctx, self.cannot_ask, lambda: ctx)

        async def run(ask: ClientAsk, driver: Callable[[], Any]) -> types.CallToolResult:
            # The envelope of the request that started the call declares what its client
            # can answer; the call suspends only for that.
            return await self._run(tool, arguments, ctx, self._declared(ctx, ask), driver)

        started: types.CallToolResult | types.InputRequiredResult = await self.suspended.start(
            ctx, run
        )
        return started

    async def call_tool_as_task(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        """Start a task-augmented call (2025-11-25) and answer its ``CreateTaskResult``.

        The tool must declare task support. Its progress messages become the task's
        status, its requests to the client ride a ``tasks/result`` (see `ServedTasks`).

        Raises:
            MCPError: METHOD_NOT_FOUND for a tool without task support (as the
                specification asks), INVALID_PARAMS for an unknown tool.
        """
        if self._code_meta_tool(params.name):
            raise MCPError(
                METHOD_NOT_FOUND,
                f"{params.name!r} does not support task-augmented calls: call it without 'task'",
            )
        routed = await self._routed(params, ctx)
        if isinstance(routed, types.CallToolResult):
            raise MCPError(INVALID_PARAMS, _text_of(routed))
        tool, arguments = routed
        self._check_scopes(ctx, tool)
        # Through `call_tool` any tool runs as a task: the bridge runs the pool call in
        # the task either way (the meta-tool offers tasks, whatever it will call).
        if params.name != CALL_TOOL and not accepts_task(tool.execution):
            raise MCPError(
                METHOD_NOT_FOUND,
                f"tool {params.name!r} does not support task-augmented calls "
                "(its execution.taskSupport is 'forbidden'): call it without 'task'",
            )

        assert params.task is not None  # the middleware routes only calls that carry it
        return await self.tasks.create(ctx, params.task, self._task_work(ctx, tool, arguments))

    async def call_tool_in_task(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any] | None:
        """Run a call of a tool that declares task support as a task (2026-07-28 Tasks).

        Returns its ``CreateTaskResult``, or None for any other call, which runs as usual."""
        if self._code_meta_tool(params.name):
            return None  # answered by `_routed` once, as a plain call (not run twice)
        routed = await self._routed(params, ctx)
        if isinstance(routed, types.CallToolResult) or not accepts_task(routed[0].execution):
            return None
        tool, arguments = routed
        self._check_scopes(ctx, tool)
        return await self.task_extension.create(ctx, self._task_work(ctx, tool, arguments))

    def _task_work(
        self, ctx: ServerRequestContext[Any], tool: Tool, arguments: dict[str, Any]
    ) -> Callable[[TaskSide], Awaitable[types.CallToolResult]]:
        """A task's tool call: its requests to the client go through the task, its
        progress messages become the task's status."""

        async def work(task: TaskSide) -> types.CallToolResult:
            ask = self._declared(ctx, task.ask)
            return await self._run(tool, arguments, ctx, ask, task.driver, task.report)

        return work

    def _code_meta_tool(self, name: str) -> bool:
        """Whether ``name`` is a code-mode meta-tool here (never run as a task)."""
        return self.profile.code_mode and name in CODE_MODE_TOOLS

    async def _routed(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any]
    ) -> tuple[Tool, dict[str, Any]] | types.CallToolResult:
        """The served tool a ``tools/call`` runs and its arguments, or, under search, the
        answer itself (a search's matches; a ``call_tool`` that names no served tool).

        Raises:
            MCPError: INVALID_PARAMS for an unknown tool (the nearest names suggested).
        """
        arguments = dict(params.arguments or {})
        if self._code_meta_tool(params.name):
            return await self._code_answer(params.name, arguments, ctx)
        if not self.profile.search or params.name not in (SEARCH_TOOLS, CALL_TOOL):
            return await self.tools.served_tool(params.name, self.apps.offered(ctx)), arguments
        # The catalog as last read, as a direct call reads it (`ServedTools.served_tool`).
        served = self.tools.callable_by(await self.tools.last_read(), self.apps.offered(ctx))
        if params.name == SEARCH_TOOLS:
            # A tool the caller may not call is not found; named by `call_tool`, the
            # scope check says which scope it needs.
            visible = self.tools.visible(request_caller(ctx), served)
            return await self._search.answer(arguments, visible, search_session(ctx))
        return await self._search.target(arguments, served, search_session(ctx))

    async def _code_answer(
        self, name: str, arguments: dict[str, Any], ctx: ServerRequestContext[Any]
    ) -> types.CallToolResult:
        """A code-mode meta-tool's answer. The program may call what its caller may: the
        served tools in its scopes (the catalog as last read, as a direct call reads
        it), each inner call under this caller's options (scope, identity, limit), its
        progress told to the caller with the ``run_code`` request's token and its log
        messages at the caller's level (`ClientLogs`), the logger naming the call."""
        caller = request_caller(ctx)
        options = self.calls.call_options(
            caller.subject if caller is not None else session_key(ctx),
            caller=caller,
            caller_token=request_token(ctx),
            on_request=self._program_asks(ctx),
            on_progress=program_progress(ctx),
            on_log=functools.partial(self.logs.send, ctx),
        )
        served = await self.tools.last_read()
        owner = options.scope[0] or "" if options.scope else ""

        async def fit(response: NativeMCPResponse[Any]) -> NativeMCPResponse[Any]:
            return await self.results.fitted(name, response, owner)

        answer = None
        with self.calls.stoppable():  # a program stops with the calls at shutdown
            answer = await self._code.answer(
                name,
                arguments,
                self._code.allowed(served, caller, self.tools.visible),
                options,
                fit,
            )
        if answer is None:
            raise self.calls.stopped()
        return answer

    def _declared(self, ctx: ServerRequestContext[Any], ask: ClientAsk) -> ClientAsk:
        """``ask`` for what the client of ``ctx`` declared it can answer: a tool's or an
        external server's sampling, elicitation (form, URL) and roots requests, passed on
        in the call; roots it did not declare are the pool's own (``--root``), if any."""

        async def declared(method: str, params: dict[str, Any]) -> dict[str, Any]:
            missing = missing_capability(client_capabilities(ctx), method, params)
            if missing == "roots" and self.pool.roots:
                return await self.pool.answer_client_request(method, params)
            require_capability(ctx, method, params)
            return await ask(method, params)

        return declared

    def _program_asks(self, ctx: ServerRequestContext[Any]) -> ClientAsk:
        """Who answers a tool's request to the client from inside a program: a
        2025-11-25 client on the request's stream, for what it declared; on 2026-07-28 a
        request would suspend the call, which a program cannot, so nobody."""
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return self.cannot_ask

        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return await _ask_client(ctx, method, params)

        return self._declared(ctx, ask)

    async def cannot_ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Refuse a tool's request to the client where none can reach it.

        That is stateless serving, or the bridge not running.

        Raises:
            ClientRequestError: always, saying why and what to do.
        """
        if not self.suspend:
            raise ClientRequestError(
                f"this server is stateless: a tool's {method} request cannot reach the "
                "client (its answer, or a 2026-07-28 client's retry, may land on another "
                "replica); serve without --stateless (stateless=False) for sampling and "
                "elicitation"
            )
        raise ClientRequestError(
            f"a tool's {method} request needs the bridge running "
            "('async with bridge:') to suspend the call for a 2026-07-28 client"
        )

    async def _run(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        ctx: ServerRequestContext[Any],
        on_request: ClientAsk,
        driver: Callable[[], ServerRequestContext[Any] | None],
        on_status: Callable[[str], None] | None = None,
    ) -> types.CallToolResult:
        """The pool call; progress and logs go to ``driver()``, the request now waiting
        on the call (a suspended call's retries each have their own, a task's the
        ``tasks/result`` waiting on it), progress messages to ``on_status`` too."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if on_status is not None and message:
                on_status(message)
            now = driver()
            token = (now.meta or {}).get("progress_token") if now is not None else None
            if now is None or token is None:
                return
            await now.session.report_progress(progress, total, message)

        async def on_log(level: str, data: Any, logger: str | None) -> None:
            now = driver()
            if now is not None:  # suspended: nobody to tell
                await self.logs.send(now, level, data, logger)

        token = (ctx.meta or {}).get("progress_token")
        reports = token is not None or on_status is not None
        # Who is calling scopes per-caller state: the authenticated subject under OAuth
        # (one user, one browser page and plan, in both protocol eras, with or without
        # MCP sessions), else the client's MCP session.
        caller = request_caller(ctx)
        options = self.calls.call_options(
            caller.subject if caller is not None else session_key(ctx),
            caller=caller,
            caller_token=request_token(ctx),
            on_request=on_request,
            on_progress=on_progress if reports else None,
            on_log=on_log,
        )
        return await self.calls.run_tool(
            tool, arguments, ctx.protocol_version, options, apps=self.apps.offered(ctx)
        )

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """Send this connection only log messages at ``level`` or above."""
        self.logs.set_level(ctx, params.level)
        return types.EmptyResult()

    def server(self) -> LowLevelServer[Any]:
        """A new official low-level MCP server wired to this bridge."""
        server: LowLevelServer[Any] = LowLevelServer(
            self.name,
            version=self.version,
            instructions=self.instructions,
            get_tool_input_schema=self.tools.tool_input_schema,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.features.list_resources,
            on_list_resource_templates=self.features.list_resource_templates,
            on_read_resource=self.features.read_resource,
            on_subscribe_resource=self.features.subscribe,
            on_unsubscribe_resource=self.features.unsubscribe,
            on_list_prompts=self.features.list_prompts,
            on_get_prompt=self.features.get_prompt,
            on_completion=self.features.complete,
        )
        # Registered here, not as a constructor argument: the constructor warns that
        # logging is deprecated in a future protocol version, which clients still use.
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        self.apps.install(server)
        self.tasks.install(server, self.call_tool_as_task)
        self.task_extension.install(server, self.call_tool_in_task)
        # The echoed requestState is attacker-controlled: the SDK's boundary seals it
        # (bound to the method, tool, arguments and an expiry) and refuses any other.
        security = RequestStateSecurity.ephemeral(ttl=self.suspended.timeout)
        server.middleware.append(RequestStateBoundary(security, default_audience=self.name))
        return server


def _text_of(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _ask_client(
    ctx: ServerRequestContext[Any], method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Send a request to the client that made the call, on that call's stream."""
    request, result_type = client_request(method, params)
    try:
        result = await ctx.session.send_request(
            request,
            result_type,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except MCPError as exc:
        raise ClientRequestError(
            f"the client refused {method}: {exc.message}", code=exc.code
        ) from exc
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped
