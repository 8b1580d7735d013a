"""External MCP servers (backend ``ExternalMCP``) through the official ``mcp`` client.

Each server is one entry of an MCP config file, read by `_mcp_config` into an
`ExternalServerSpec`: stdio or HTTP (Streamable HTTP, or SSE for old servers).

Each server gets a supervisor task, like a worker: it connects (bounded by the start
timeout), lists the tools, and — for a stdio server — watches the child's stderr, which
also feeds `logging` and keeps a tail for error messages. A stdio server runs through
`stdio_transport` (``_stdio``): its stdout is read tolerantly, and when reading stops
(the child died, closed its stdout, or the reader failed) the SDK's dispatcher fails
the pending calls at once; this turns them into `ServerCrashed` naming the server and
tool, and the supervisor reconnects with backoff. A timed-out or cancelled call is
abandoned through the SDK, which sends ``notifications/cancelled``. An optional server's
broken tools are left out, not the server (``_tool_listing``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc

from nativemcp.protocol import (
    PYTHON_LOG_LEVELS,
    NativeMCPResponse,
    Tool,
    resolved,
    response_from_sdk,
    text_response,
)
from nativemcp.protocol.wire import DEFAULT_MAX_FRAME
from nativemcp.workers import ServerClosed, ServerCrashed, ServerStartError
from nativemcp.workers.telemetry import MCP_PROTOCOL_VERSION, MCP_SESSION_ID

from .._handle import (
    CallOptions,
    LogHandler,
    ResourceListener,
    call_deadline,
    deliver_log,
)
from .._restart import RestartPolicy, Supervised
from ..telemetry import current_call_span, log_ids
from ._client_side import ClientSide, ServerRequests
from ._external_handle import ExternalHandle
from ._features import request_feature
from ._log_redaction import secrets_kept_out_of_logs, shown_cause
from ._mcp_config import ExternalServerSpec
from ._stderr import Stderr
from ._stdio import StdioLink
from ._tasks import call_as_task, runs_as_task
from ._tool_list import Freshness, ToolListChanges, read_tool_list
from ._tool_listing import drop_repeated_tools
from ._transport import ServerTransport, describe, refusal, too_many_rounds
from .oauth import (
    UNAVAILABLE_TOOL,
    GrantWait,
    NeedsAuthorization,
    RedirectHook,
    ServerAuthorization,
    first_of,
    login_hint,
    unavailable_response,
    unavailable_tool,
)

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

__all__ = ["ExternalServer"]

_logger = logging.getLogger("nativemcp.external")

CONNECTION_CLOSED: Final = -32000
"""The SDK's code for a connection that ended under a pending request."""
PING_REMOVED_IN: Final = "2026-07-28"
"""The MCP revision without ``ping``; earlier ones (dates sort as text) answer it."""


class ExternalServer(ExternalHandle, Supervised):
    """An external MCP server behind the pool's handle, through the official client."""

    _logger = _logger

    def __init__(
        self,
        spec: ExternalServerSpec,
        *,
        start_timeout: float | None,
        restart: RestartPolicy,
        client_side: ClientSide | None = None,
        max_frame: int = DEFAULT_MAX_FRAME,
        authorization: ServerAuthorization | None = None,
    ) -> None:
        self.spec = spec
        self.authorization = authorization
        """The server's OAuth client (None: the entry asks for no OAuth)."""
        self._grant = GrantWait(spec.name, authorization)
        self._requests = ServerRequests(spec.name, client_side or ClientSide())
        self.name = spec.name
        self.description = ""
        self._start_timeout = start_timeout
        self._restart = restart
        self.default_timeout = spec.timeout
        self.on_resource_updated: ResourceListener | None = None
        self._tools: list[Tool] = []
        self._freshness = Freshness()
        # A new one for each connection (`_lifetime`).
        self._tool_changes = ToolListChanges(spec.name, spec.redact)
        self.on_tools_changed: Callable[[], None] | None = None
        """Called after the tool list was read again on the server's
        ``notifications/tools/list_changed`` (the pool's catalog and tool search follow
        at their next read)."""
        self.extensions: dict[str, Any] = {}
        """The extensions the server advertised at the last connect (2026-07-28)."""
        self._client: Client | None = None
        self._init_supervision()
        self._lost = anyio.Event()
        self._stop = anyio.Event()
        self._stderr: Stderr | None = None
        self._link: StdioLink | None = None
        self._log_handlers: dict[int, LogHandler] = {}
        self._traced_calls: dict[int, Any] = {}  # key -> its client span (traced calls)
        self._transport = ServerTransport(
            spec, max_frame=max_frame, authorization=authorization, requests=self._requests
        )
        self._next_call = 0
        self.pid: int | None = None
        """The live stdio server's process id (Linux; None for HTTP or when unknown)."""

    @property
    def needs_authorization(self) -> str | None:
        """Why the server is unavailable until someone authorizes it (None: it is not)."""
        return self._grant.reason

    async def reauthorize(self, redirect: RedirectHook | None = None) -> bool:
        """If the server waits for authorization, connect again when a grant is kept
        now (another process's ``nativemcp auth login``) or ``redirect`` can ask a
        person, and wait for that attempt; whether the server is authorized now."""
        return await self._grant.retry(redirect)

    @property
    def tools(self) -> list[Tool]:
        """The server's tools that the entry allows, as listed at the last connect."""
        return self._tools

    # -- lifecycle -------------------------------------------------------------------

    async def _lifetime(self, stderr: Stderr | None, state: dict[str, bool], on_ready: Any) -> None:
        """One connection: connect, list tools, serve until lost or stopped."""
        link = StdioLink(self.name) if stderr else None
        self._link = link
        self._tool_changes = ToolListChanges(self.name, self.spec.redact)
        await self._transport.prepare()
        client, http = self._transport.client(
            stderr, link, on_log=self._on_log, on_message=self._tool_changes.on_message
        )
        async with contextlib.AsyncExitStack() as stack:
            if http is not None:
                await stack.enter_async_context(http)
            try:
                await stack.enter_async_context(client)
            finally:
                if stderr is not None:
                    stderr.close_writer()
            if link is not None:
                self.pid = link.pid
            # Changes are heard before the first listing (a 2026-07-28 stream is open
            # and acknowledged), so none falls between the two.
            follower = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(follower.cancel_scope.cancel)
            relist = functools.partial(self._relist, client)
            await follower.start(self._tool_changes.follow, client, relist)
            tools, ttl = await read_tool_list(client, self.name)
            self._freshness.listed(ttl)
            self.description = client.instructions or ""
            self.extensions = dict(client.server_capabilities.extensions or {})
            self._tools = self._usable(tools)
            self._client = client
            self._grant.authorized()
            state["ready"] = True
            self._connected.set()
            on_ready()
            watch = [self._lost, self._stop]
            if link is not None:
                # Reading stdout stopped: the connection is gone whether or not the
                # process lives on (a closed stdout, a failed reader).
                watch.append(link.ended)
            try:
                await first_of(*watch)
            finally:
                self._client = None
                self._reset_connected()

    async def _relist(self, client: Client) -> None:
        """Read the tools again (past the SDK's cache) on the server's word that they
        changed. A failed read keeps the last list: a lost connection is the
        supervisor's to notice."""
        from mcp import MCPError

        try:
            tools, ttl = await read_tool_list(client, self.name, cache_mode="bypass")
        except MCPError as exc:
            message = self.spec.redact(exc.message)
            _logger.warning(
                "MCP server %r: listing its changed tools failed: %s", self.name, message
            )
            return
        self._freshness.listed(ttl)
        self._tools = self._usable(tools)
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    def _usable(self, tools: list[Tool]) -> list[Tool]:
        """The listed tools the entry allows; an optional server's repeated names out."""
        allowed = [tool for tool in tools if self.spec.allows(tool.name)]
        return allowed if self.spec.required else drop_repeated_tools(allowed, self.name)

    async def _connect_once(self, on_ready: Any) -> None:
        """Run one connection; a failure before it is ready is a `ServerStartError`.

        Raises:
            ServerStartError: the server did not start (its stderr tail included).
        """
        spec = self.spec
        stderr = Stderr(self.name, spec.redact) if spec.transport == "stdio" else None
        self._stderr = stderr
        self._transport.refused = None
        state = {"ready": False, "timed_out": False}

        async def watchdog(scope: anyio.CancelScope) -> None:
            if self._start_timeout is None:
                return
            await anyio.sleep(self._start_timeout)
            asked = self.authorization.person_done if self.authorization else None
            while asked is not None and not asked.is_set():
                # A person is signing in: their time is not the server's start-up.
                await asked.wait()
                await anyio.sleep(self._start_timeout)
                asked = self.authorization.person_done if self.authorization else None
            if not state["ready"]:
                state["timed_out"] = True
                scope.cancel()

        try:
            async with anyio.create_task_group() as tg:
                if stderr is not None:
                    tg.start_soon(stderr.pump)
                tg.start_soon(watchdog, tg.cancel_scope)
                try:
                    await self._lifetime(stderr, state, on_ready)
                finally:
                    tg.cancel_scope.cancel()
        except Exception as exc:
            if state["ready"]:
                _logger.warning(
                    "MCP server %r: connection ended with %s",
                    self.name,
                    spec.redact(describe(exc)),
                )
                return
            cause = shown_cause(self.spec, exc)
            if self.authorization is not None and self.authorization.needs_authorization:
                raise NeedsAuthorization(
                    self.name, self.authorization.needs_authorization
                ) from cause
            refused = self._transport.refused
            if refused is not None and self.authorization is None:
                raise self._start_error(refusal(refused, spec), stderr) from cause
            raise self._start_error(f"failed to start: {describe(exc)}", stderr) from cause
        finally:
            if stderr is not None:
                stderr.close_writer()
        if state["timed_out"]:
            raise self._start_error(f"did not answer within {self._start_timeout:g} s", stderr)

    def _reset_connected(self) -> None:
        # Waiters hold the old event: set it so they loop and wait on the new one.
        old, self._connected = self._connected, anyio.Event()
        old.set()

    def _start_error(self, what: str, stderr: Stderr | None) -> ServerStartError:
        tail = f"; stderr:\n{stderr.text()}" if stderr is not None else ""
        message = self.spec.redact(f"{what}{tail}")
        return ServerStartError(
            f"MCP server {self.name!r} ({self.spec.describe()}) {message}", server=self.name
        )

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Supervise the connection until closed; ``started()`` after the first connect.

        Raises:
            ServerStartError: the first connect failed (later failures are retried).
        """
        started = False
        recent: list[float] = []
        backoff = self._restart.backoff

        def on_ready() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        try:
            with secrets_kept_out_of_logs(self.spec):
                while not self._closing:
                    self._lost = anyio.Event()
                    try:
                        await self._connect_once(on_ready)
                    except NeedsAuthorization as exc:
                        # Not a failure of the pool: the server waits for a grant.
                        self._tools = [unavailable_tool(self.name, exc.reason)]
                        await self._grant.wait(exc, on_ready=on_ready, stop=self._stop)
                        if self._closing:
                            return
                        continue  # a grant came: no backoff, someone is waiting
                    except ServerStartError as exc:
                        if not started:
                            raise
                        self._grant.settle()
                        if not self._retry(exc, recent, backoff):
                            return
                    else:
                        if self._closing:
                            return
                        self._log_stopped()
                        if not self._restart.allow_restart(recent):
                            stopped = f"MCP server {self.name!r} stopped"
                            self._give_up(ServerStartError(stopped, server=self.name))
                            return
                        self._restarted()
                    await anyio.sleep(backoff)
                    backoff = min(backoff * 2, self._restart.max_backoff)
        finally:
            self._client = None
            self._grant.settle()
            self._finished.set()

    def _log_stopped(self) -> None:
        """Log a connection that ended after it was ready: why, and the stderr tail."""
        tail = self._stderr.text() if self._stderr is not None else ""
        link = self._link
        why = f" ({link.reason()})" if link and link.ended.is_set() else ""
        _logger.error(
            "MCP server %r (%s) stopped%s; restarting. stderr:\n%s",
            self.name,
            self.spec.describe(),
            self.spec.redact(why),
            tail,
        )

    async def freshen(self) -> bool:
        """Before the pool reads the tools: a server that needs authorization tries a
        grant kept since (`reauthorize`), and a list past its ``ttlMs`` is read again.
        Whether the tools may have changed."""
        if self.needs_authorization is not None:
            return await self.reauthorize()
        client = self._client
        if client is None or not self._freshness.take_stale():
            return False
        await self._relist(client)
        return True

    def _what(self) -> str:
        return f"MCP server {self.name!r}"

    async def aclose(self) -> None:
        """Disconnect; a stdio server's process is ended by `stdio_transport` (stdin
        closed, then terminate, then kill, then what it left in its session and the
        descendants that left the session). Shielded, bounded, idempotent."""
        with anyio.CancelScope(shield=True):
            self._closing = True
            self._stop.set()
            self._connected.set()
            with anyio.move_on_after(10):
                await self._finished.wait()
            if self.authorization is not None:
                self.authorization.close()  # a loopback port held for a sign-in

    # -- calls -----------------------------------------------------------------------

    async def _session(self, tool: str) -> Client:
        reason = self.needs_authorization
        if reason is not None and not await self.reauthorize():
            # No connection will come by waiting: say so now, not at the time limit.
            raise ServerStartError(
                f"MCP server {self.name!r} is not connected: it needs authorization "
                f"({reason}); {login_hint(self.name)}",
                server=self.name,
            )
        client = await self._live(lambda: self._client, f"call {tool!r}")
        span = current_call_span()
        if span is not None:  # traced: the pool's client span names the MCP version spoken
            span.set_attribute(MCP_PROTOCOL_VERSION, client.protocol_version)
            if self._transport.session_id.value is not None:
                span.set_attribute(MCP_SESSION_ID, self._transport.session_id.value)
        return client

    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        logger = logging.getLogger(f"nativemcp.external.{self.name}")
        level = PYTHON_LOG_LEVELS.get(str(params.level), logging.INFO)
        extra = {"mcp_server": self.name}
        if len(self._traced_calls) == 1:
            # MCP log messages name no request: with one call in flight, they are its.
            extra |= log_ids(next(iter(self._traced_calls.values())))
        logger.log(level, "%s", params.data, extra=extra)
        for handler in list(self._log_handlers.values()):
            await deliver_log(handler, str(params.level), params.data, params.logger)

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Call ``tool`` on the server through the SDK client.

        A JSON-RPC error from the server is an error response, not an exception.
        MCP log messages carry no request id: while calls are in flight, each log
        message reaches the ``on_log`` of every one of them (and always `logging`).

        Raises:
            CallTimeout: no answer within the time limit (``notifications/cancelled``
                is sent).
            ServerCrashed: the server's connection ended during the call.
            ServerClosed: the pool is closing.
        """
        from mcp import InputRequiredRoundsExceededError, MCPError

        if self.needs_authorization is not None and not await self.reauthorize():
            return unavailable_response(self.name, self.needs_authorization)
        if tool == UNAVAILABLE_TOOL and not any(t.name == tool for t in self._tools):
            # The placeholder called after a grant came: the server's tools are back.
            return text_response(f"MCP server {self.name!r} is authorized; list its tools")
        timeout = options.limit
        report = options.on_progress
        on_progress = None
        if report is not None:

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                await resolved(report(progress, total, message))

        self._next_call += 1
        key = self._next_call
        if options.on_log is not None:
            self._log_handlers[key] = options.on_log
        span = current_call_span()
        if span is not None:
            self._traced_calls[key] = span
        try:
            with call_deadline(self.name, tool, timeout):
                client = await self._session(tool)
                with self._requests.during(options):
                    # From 2026-07-28 a task is the Tasks extension's (`TasksClaim`).
                    if self._runs_as_task(tool) and client.protocol_version < PING_REMOVED_IN:
                        result = await call_as_task(client, tool, arguments, on_progress)
                    else:
                        result = await client.call_tool(
                            tool, arguments, progress_callback=on_progress
                        )
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED and not self._closing:
                raise self._connection_lost(client, tool) from shown_cause(self.spec, exc)
            if self._closing:
                raise ServerClosed(
                    f"pool closed during a call to {self.name}.{tool}", server=self.name
                ) from shown_cause(self.spec, exc)
            refused = self.authorization.take_scope_refusal(tool) if self.authorization else None
            if refused is not None:
                return unavailable_response(self.name, refused)
            # The SDK makes some errors from httpx's, which may hold the expanded URL.
            error = exc.error.model_copy(update={"message": self.spec.redact(exc.message)})
            return response_from_sdk(error)
        except InputRequiredRoundsExceededError as exc:
            # The SDK's message tells the caller to change its Client, which the caller
            # of the pool cannot reach: the limit is the pool's.
            return response_from_sdk(too_many_rounds(self.name, tool, exc.max_rounds))
        finally:
            self._log_handlers.pop(key, None)
            self._traced_calls.pop(key, None)
        return response_from_sdk(result)

    def _connection_lost(self, client: Client, tool: str) -> ServerCrashed:
        """The error for a request whose connection ended; later requests wait for the
        supervisor's new connection, not this one."""
        if self._client is client:
            self._client = None
            self._reset_connected()
        self._lost.set()
        return ServerCrashed(server=self.name, exitcode=None, pid=self.pid, tool=tool)

    def _runs_as_task(self, tool: str) -> bool:
        """Whether ``tool`` answers only a task-augmented call (as listed)."""
        return any(t.name == tool and runs_as_task(t.execution) for t in self._tools)

    async def list_tools(self, options: CallOptions) -> list[Tool]:
        """Ask the server for its tools again (the entry's filters applied).

        Raises:
            ServerCrashed: the connection ended.
            CallTimeout: no answer within the time limit.
        """
        from mcp import MCPError

        if self.needs_authorization is not None and not await self.reauthorize():
            return self._tools
        with call_deadline(self.name, "tools/list", options.limit):
            client = await self._session("tools/list")
            try:
                tools, ttl = await read_tool_list(client, self.name)
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED and not self._closing:
                    raise self._connection_lost(client, "tools/list") from shown_cause(
                        self.spec, exc
                    )
                raise
        self._freshness.listed(ttl)
        self._tools = self._usable(tools)
        return self._tools

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any:
        """Answer a resources/prompts/completion request through the server (the
        spec-shaped JSON result).

        Raises:
            FeatureError: the server refused it, or ``method`` is not one of these.
            CallTimeout: no answer within the time limit.
        """
        from mcp import MCPError

        from nativemcp.protocol import FeatureError

        try:
            with call_deadline(self.name, method, options.limit):
                client = await self._session(method)
                result = await request_feature(client, method, params)
        except MCPError as exc:
            message = self.spec.redact(exc.message)
            raise FeatureError(message, code=exc.code) from shown_cause(self.spec, exc)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (``notifications/roots/list_changed``), if
        the pool declared roots to it and it is connected."""
        client = self._client
        if client is None or not self._requests.side.roots:
            return
        from mcp import MCPDeprecationWarning

        with warnings.catch_warnings():
            # Roots are deprecated from 2026-07-28; servers of earlier versions use them.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()

    async def ping(self, options: CallOptions) -> None:
        """Round-trip a request that the SDK client's response cache cannot answer (a
        cached ``tools/list`` succeeds after the server is gone): ``ping`` where the
        negotiated protocol has it, else ``tools/list`` past the cache (``ping`` is gone
        from 2026-07-28). An error answer is an answer: the server is there.

        Raises:
            ServerCrashed: the connection ended (the next call would fail too).
            CallTimeout: no answer within the time limit.
        """
        from mcp import MCPDeprecationWarning, MCPError

        with call_deadline(self.name, "ping", options.limit):
            client = await self._session("ping")
            try:
                if client.protocol_version < PING_REMOVED_IN:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.send_ping()
                else:
                    await client.list_tools(cache_mode="bypass")
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED and not self._closing:
                    raise self._connection_lost(client, "ping") from shown_cause(self.spec, exc)
