"""The worker pool: every tool source behind one catalog, and typed proxies.

```python
async with WorkerPool(data_dir="~/.local/share/app", mcp_servers="mcp.json") as pool:
    store = pool.server("content-store")
    listing = await store.list_content(store_id=store_id)
    tools = await pool.list_tools()          # every source, full names
    response = await pool.call_tool("time__get_current_time", {"timezone": "UTC"})
```

The pool takes server specs — a worker process, this process, an external MCP server —
and starts them all concurrently; each becomes a `ServerHandle`, and nothing after
start-up asks which kind it holds.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar, Unpack, overload

import anyio
import anyio.abc

from nativemcp.protocol import (
    APPS_EXTENSION,
    NativeMCPResponse,
    Tool,
    ToolNameError,
    UnknownTool,
    resolved,
    tool_ui,
)
from nativemcp.workers import (
    ClientRequestError,
    ServerClosed,
    ServerSource,
)

from ._agent_loop import AgentLoop
from ._bootstrap import exit_if_bootstrapping
from ._catalog import Catalog, CatalogEntry, UIAction
from ._config import PoolConfig, PoolOptions, check_options, root_uris
from ._handle import (
    DEFAULT,
    CallOptions,
    LogHandler,
    ProgressCallback,
    ResourceListener,
    ServerHandle,
    _Default,
    find_server,
    merge_options,
)
from ._proxy import ServerProxy, coerce_arguments, server_and_interface
from ._server_specs import ServerSpec, server_specs, start_in_order, supervisor_group
from ._worker import start_failure
from .external import (
    DEFAULT_INPUT_ROUNDS,
    AssertionHook,
    Authorizations,
    ClientSide,
    ExternalServer,
    RedirectHook,
    roots_answer,
)
from .telemetry import TRACING, traced
from .telemetry import refresh as refresh_tracing

__all__ = ["ClientHandler", "WorkerPool"]

ClientHandler = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""Answers a tool's request to its client; sync or async.

Spec-shaped params in (``sampling/createMessage`` or ``elicitation/create``),
spec-shaped result out."""

P = TypeVar("P")
A = ParamSpec("A")
R = TypeVar("R")


def _loop_method(
    method: Callable[Concatenate[AgentLoop, A], R],
) -> Callable[Concatenate[WorkerPool, A], R]:
    """`WorkerPool`'s method of the same name and signature: its `AgentLoop`'s."""

    @functools.wraps(method)
    def through(pool: WorkerPool, /, *args: A.args, **kwargs: A.kwargs) -> R:
        return method(pool._agent_loop, *args, **kwargs)

    return through


class WorkerPool:
    """Runs tool servers and gives out typed proxies and one catalog over all of them.

    Each server runs where it fits: user servers and the ``content-store`` and
    ``planning`` built-ins in worker processes of their own (a crash is contained and
    restarted); ``workspace``, and any server named in ``in_process``, in this process;
    external MCP servers (``mcp_servers``) through the official ``mcp`` client.
    ``pool.server(name)`` gives a server's typed proxy (the same one each time);
    ``pool.list_tools()`` / ``pool.call_tool(full_name, ...)`` are the catalog of every
    tool under its full name, which ``tool_definitions`` / ``run_tool_call`` hand to an
    LLM and ``nativemcp serve`` to MCP clients.

    The pool options (every argument but ``servers`` and the two handlers) are
    `PoolOptions`, checked into a `PoolConfig` (``pool.config``).

    Args:
        servers: user-defined servers: `Server` objects, factories taking a
            `ServerConfig`, or ``"module:attribute"`` strings naming either.
        sampling_handler: answers tools' ``ctx.sample(...)`` (``sampling/createMessage``
            params in, ``CreateMessageResult`` JSON out); without it they get a
            `ClientRequestError`.
        elicitation_handler: answers tools' ``ctx.elicit(...)`` (``elicitation/create``).
        relay_client_requests: the pool's callers answer servers' sampling and
            elicitation requests (each call's ``CallOptions.on_request``, as
            ``nativemcp serve`` forwards them to its MCP clients): declare both to
            external servers even without handlers.
        input_rounds: rounds of input (``InputRequiredResult``s of a 2026-07-28
            external server) one call may take; past them the call answers a
            JSON-RPC error naming the limit.
        oauth_redirect: for a remote server whose entry has ``"oauth"``, called with the
            authorization URL when a person must authorize nativemcp: show it (or follow
            it) and return the URL the browser was redirected to, or None for a browser
            that comes back to the loopback callback port. Without it, a server with no
            usable kept grant is listed as needing authorization (`needs_authorization`),
            does not stop the pool, and comes back at its next use once a grant is kept
            (`authorize`). Grants: ``data_dir/oauth`` (without a data_dir, memory).
        oauth_assertion: given the authorization server's issuer and the server's
            resource URL: the ID-JAG of a ``"identity_assertion"`` entry (SEP-990), or
            the JWT of a ``"workload_identity"`` one with no assertion file or variable.
        apps: the app shows MCP Apps: declare ``io.modelcontextprotocol/ui`` to
            external servers (`offers_apps` says which servers offer apps), and
            `run_tool_call` tells the model when a tool's app shows its result.

    Keyword Args:
        data_dir: where the built-in servers keep their data; with it, the built-in
            servers (``content-store``, ``planning``, ``workspace``) start too
            (``browser`` only when named in ``builtins``).
        workspace_root: the workspace server's root folder.
        builtins: which built-in servers to start (default: all, when ``data_dir`` is set).
        in_process: names of servers to run in this process instead of a worker
            (default: ``workspace``: its file tools gain nothing from a process).
        options: per-server options, by server name.
        mcp_servers: external MCP servers: an ``mcpServers`` mapping as Claude Desktop,
            Cursor and VS Code write it, or the path of such a JSON file.
        database_url: a ``postgresql://`` URL: the content store and planning keep their
            state in that database, shared with every pool that uses it (default:
            ``$NATIVEMCP_DATABASE_URL``; unset or ``""``: SQLite files under data_dir).
        timeout: default seconds per call (None: no limit; 0 or less, as before, too).
        start_timeout: seconds a worker or external server has to become ready.
        max_frame: the largest message in bytes, either way.
        start_method: ``"spawn"`` (default) or ``"forkserver"``.
        restart: how crashed workers are restarted.
        replicas: worker processes per server (default 1), keyed as the server is given:
            its name, or the ``"module:attribute"`` string passed in ``servers``. Each call goes to
            the least-loaded one, a crash restarts only that one, and `switch_context`
            reaches all. For servers whose shared state lives outside the process (the
            built-ins keep theirs in SQLite).
        browser_allowed_origins: the only origins (``scheme://host[:port]``) the
            ``browser`` server's pages load from, private addresses included; without it
            any public http(s) address loads and private ones are refused.
        roots: folders (paths or ``file://`` URIs) external servers may work in: the
            pool declares ``roots`` to them and answers ``roots/list`` with these
            (change them with `set_roots`). None: no roots declared.
        pinned: a pin file (``nativemcp tools --pin FILE``) or `ToolPins`: a tool
            whose definition is not pinned, or changed since, is left out of the
            catalog with a warning naming what changed.
        search_embed: whether `search_tools` (and the meta-tool) fuses BM25 with a
            small embedding model's ranking, which finds paraphrases BM25 misses
            (wordllama, a dependency; loaded once, on the first search). None (the
            default): fused wherever wordllama is installed; False: BM25 alone.
        search_learn: keep a session's search as words of the tool it calls next (`learn_call`).
        result_budget: the tokens one tool result may take in `run_tool_call`'s
            messages (default `DEFAULT_RESULT_BUDGET`, 8,000; None: no limit). One over
            it is cut at a readable boundary and kept whole, and the model reads the
            rest with the ``read_result`` tool (see docs/guides/agent-loop.md).
        code_limits: the `CodeLimits` of a `run_code` run that names none (default:
            `DEFAULT_LIMITS`; the ``code`` extra).

    External MCP servers are told the pool can sample, elicit or list roots only when
    it can (see ``docs/guides/mcp-config.md``); their requests go to the caller of the
    call they belong to, else to the handlers. Its tool search, agent-loop and code-mode
    methods (`search_tools`, `tool_definitions`, `run_tool_call`, `run_code` …) are its
    `AgentLoop`'s, under the same names and signatures.

    Raises:
        ValueError: options `PoolConfig.build` refuses (an unknown built-in, a bad
            ``database_url`` or ``replicas``, ``search_learn`` without a ``data_dir`` or
            ``database_url``...), or ``input_rounds`` below 1.
        NotADirectoryError: ``data_dir`` is a file.
        ImportError: ``search_embed=True`` where wordllama is not installed.
        TypeError: a `Server` to run in a worker is not importable by name (defined
            inside a function); raised here, before any process starts.

    A script that opens a pool must do so under ``if __name__ == "__main__":``: each
    worker imports the script again. Without the guard, the worker exits at once and
    the pool raises `ServerStartError` naming the guard.
    """

    def __init__(
        self,
        servers: Iterable[ServerSource] = (),
        *,
        sampling_handler: ClientHandler | None = None,
        elicitation_handler: ClientHandler | None = None,
        relay_client_requests: bool = False,
        input_rounds: int = DEFAULT_INPUT_ROUNDS,
        oauth_redirect: RedirectHook | None = None,
        oauth_assertion: AssertionHook | None = None,
        apps: bool = False,
        **options: Unpack[PoolOptions],
    ) -> None:
        exit_if_bootstrapping("WorkerPool")
        check_options(options, PoolOptions.__optional_keys__, "WorkerPool")
        self._config = PoolConfig.build(servers, **options)
        self._roots = self._config.roots
        self._relay = relay_client_requests
        if isinstance(input_rounds, bool) or not isinstance(input_rounds, int) or input_rounds < 1:
            raise ValueError(f"input_rounds must be at least 1, not {input_rounds!r}")
        self._input_rounds = input_rounds
        self._oauth_redirect = oauth_redirect
        self._oauth_assertion = oauth_assertion
        self._apps = apps
        self._handles: dict[str, ServerHandle] = {}
        self._proxies: dict[tuple[str, type[Any] | None], ServerProxy] = {}
        self._catalog = Catalog(self._handles, self._config.pinned)
        self._resource_listeners: list[ResourceListener] = []
        handlers = {
            "sampling/createMessage": sampling_handler,
            "elicitation/create": elicitation_handler,
        }
        self._client_handlers = {m: h for m, h in handlers.items() if h is not None}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self._closed = False
        self._authorizations = Authorizations(
            self._handles, redirect=oauth_redirect, closed=lambda: self._closed
        )
        self._agent_loop = AgentLoop(self, result_budget=self._config.result_budget, apps=apps)

    @property
    def config(self) -> PoolConfig:
        """What this pool runs and how (checked when the pool was made)."""
        return self._config

    def _specs(self) -> list[ServerSpec]:
        side = ClientSide(
            sampling=self._relay or "sampling/createMessage" in self._client_handlers,
            elicitation=self._relay or "elicitation/create" in self._client_handlers,
            roots=self._roots is not None,
            apps=self._apps,
            answer=self.answer_client_request,
            input_rounds=self._input_rounds,
        )
        return server_specs(self._config, side, self._oauth_redirect, self._oauth_assertion)

    async def __aenter__(self) -> Self:
        if self._task_group is not None or self._closed:
            raise RuntimeError("a WorkerPool can be entered only once")
        self._config.make_data_dir()
        refresh_tracing()  # the app sets up OpenTelemetry before it starts the pool
        # A failure half-way (a server that does not start, a cancellation) unwinds what
        # was entered: the servers closed, then the supervisors' task group left.
        async with contextlib.AsyncExitStack() as stack:
            self._task_group = await stack.enter_async_context(supervisor_group())
            stack.push_async_callback(self._stop_servers)
            await self._start_all()
            self._exit_stack = stack.pop_all()
        return self

    async def _stop_servers(self) -> None:
        await self.aclose()
        self._task_group = None

    async def _start_all(self) -> None:
        assert self._task_group is not None
        outer = self._task_group
        started, errors = await start_in_order(self._specs(), outer)
        by_name: dict[str, list[ServerHandle]] = {}
        for handle in started:
            by_name.setdefault(handle.name, []).append(handle)
        for name, same in by_name.items():
            if len(same) > 1:
                kinds = " and ".join(f"{h.backend}" for h in same)
                errors.append(ValueError(f"two servers are named {name!r} ({kinds})"))
            same[0].on_resource_updated = self._resource_updated
            self._handles[name] = same[0]
        if not errors:
            try:
                self._catalog.check()
            except ToolNameError as exc:
                errors.append(exc)
        if errors:
            # Close whatever did start before reporting (the pool's aclose does it).
            for handle in started:
                if handle not in self._handles.values():
                    await handle.aclose()
            raise start_failure(errors)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._exit_stack = self._exit_stack, None
        if stack is None:
            await self.aclose()
            return None
        # The caller's own exception propagates from its `async with` unchanged: the
        # stack unwinds as after a clean exit.
        await stack.aclose()
        return None

    async def aclose(self) -> None:
        """Shut every server down (bounded, shielded, idempotent); no process is left."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for handle in self._handles.values():
                    tg.start_soon(handle.aclose)
                tg.start_soon(self._agent_loop.aclose)

    async def answer_client_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer a tool's request to its client with the pool's handler for ``method``.

        ``roots/list`` is answered with the pool's roots.

        Raises:
            ClientRequestError: the pool has no handler for ``method`` (or no roots).
        """
        if method == "roots/list":
            if self._roots is None:
                raise ClientRequestError(
                    "a server asked for roots/list, but the pool has no roots: pass "
                    "WorkerPool(roots=[...]) or --root DIR"
                )
            return roots_answer(self._roots)
        handler = self._client_handlers.get(method)
        if handler is None:
            kind = "sampling_handler" if method.startswith("sampling") else "elicitation_handler"
            raise ClientRequestError(
                f"a tool sent {method!r}, but the pool has no {kind}: pass "
                f"WorkerPool({kind}=...), or serve the server to an MCP client"
            )
        return dict(await resolved(handler(params)))

    @property
    def roots(self) -> list[str]:
        """The ``file://`` URIs of the pool's roots (empty when it has none)."""
        return list(self._roots or ())

    async def set_roots(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        """Replace the pool's roots and tell every external server they changed.

        The servers get ``notifications/roots/list_changed``.

        Raises:
            NotADirectoryError: a path that is not a folder.
            ValueError: the pool was made without ``roots`` (it declared none to the
                servers, which would not ask again).
        """
        if self._roots is None:
            raise ValueError("the pool declared no roots; make it with WorkerPool(roots=[...])")
        self._roots = root_uris(roots)
        for handle in list(self._handles.values()):
            if isinstance(handle, ExternalServer):
                await handle.roots_changed()

    def add_resource_listener(self, listener: ResourceListener) -> None:
        """Call ``await listener(uri)`` whenever a tool reports that ``uri`` changed.

        A tool reports it with ``await ctx.resource_updated(uri)``; the MCP boundary
        notifies subscribers."""
        self._resource_listeners.append(listener)

    async def _resource_updated(self, uri: str) -> None:
        for listener in list(self._resource_listeners):
            await listener(uri)

    @property
    def is_running(self) -> bool:
        """True between entering the pool and closing it."""
        return self._task_group is not None and not self._closed

    @property
    def catalog(self) -> Catalog:
        """Every source's tools under their full names, as the pool lists and calls them.

        Raises:
            ServerClosed: the pool is closed.
        """
        self._check_open()
        return self._catalog

    @property
    def handles(self) -> dict[str, ServerHandle]:
        """The running servers' handles, by name (what the MCP boundary serves)."""
        return dict(self._handles)

    @property
    def names(self) -> list[str]:
        """The names of the running servers."""
        return list(self._handles)

    @overload
    def server(self, name: str, /) -> ServerProxy: ...
    # Typed as a callable, not `type[P]`: type checkers refuse a Protocol class where
    # `type[P]` is expected (only concrete classes may be; mypy's [type-abstract]), and
    # an interface is a Protocol. The body checks that it is a class.
    @overload
    def server(self, interface: Callable[..., P], /) -> P: ...
    def server(self, name_or_interface: str | Callable[..., Any], /) -> Any:
        """A proxy for a server, by name or by a typed interface.

        A typed interface is a class (typically a `typing.Protocol`) with a
        ``server_name`` class attribute and one ``async def`` per tool; the proxy is
        returned as that type, so type checkers see each tool's signature and result.

        Raises:
            UnknownServer: no server by that name (the message lists the servers).
            ServerClosed: the pool is closed.
            TypeError: not a name, or an interface without ``server_name``.
        """
        name, interface = server_and_interface(name_or_interface)
        handle = find_server(self._handles, name, closed=self._closed)
        proxy = self._proxies.get((name, interface))
        if proxy is None:
            timeout = handle.default_timeout or self._config.timeouts.call
            proxy = ServerProxy(
                handle,
                timeout=timeout,
                interface=interface,
                on_request=self.answer_client_request,
            )
            self._proxies[(name, interface)] = proxy
        return proxy

    # -- the catalog -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ServerClosed("the pool is closed", server="*")

    async def list_tools(self) -> list[Tool]:
        """Every tool of every source under its full name, those only an app may call too.

        ``builtin_server__tool`` for a built-in server, ``server__tool`` for an external
        or the user's own, its `ServiceInfo` in its ``_meta`` (`service_info`); the
        model's lists (`tool_definitions`, `search_tools`) omit tools only an app calls.

        Raises:
            ToolNameError: two sources now give the same full name (both named).
            ServerClosed: the pool is closed.
        """
        self._check_open()
        await self._authorizations.freshen()  # a grant kept since (auth login) brings a server back
        return self._catalog.tools()

    async def call_tool(
        self,
        full_name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        on_log: LogHandler | None = None,
        options: CallOptions | None = None,
    ) -> NativeMCPResponse[Any]:
        """Call a tool by its full name; tool errors are responses.

        Every content block of the result carries ``_meta["io.github.nativemcp/service"]``.

        ``timeout``: seconds, ``None`` for no limit, ``DEFAULT`` for the server's or the
        pool's; or pass every option at once as ``options``.

        Raises:
            UnknownTool: no such full name (the message suggests the nearest).
            ServerError: the source timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        self._check_open()
        entry = await self._catalog_entry(full_name)
        handle = entry.handle
        call_options = merge_options(options, timeout, on_progress, on_log).resolve(
            handle.default_timeout or self._config.timeouts.call, self.answer_client_request
        )
        tool = entry.tool.name
        merged = coerce_arguments(full_name, arguments, {})
        if TRACING.tracer is None:
            response = await handle.call(tool, merged, call_options)
        else:
            response = await traced(
                handle.name,
                "tools/call",
                tool,
                lambda: handle.call(tool, merged, call_options),
            )
        return self._catalog.tag(response, entry)

    def offers_apps(self, name: str, /) -> bool:
        """Whether server ``name`` offers MCP Apps.

        It does when it advertised the extension, or a tool of it names a ``ui://`` app
        (a 2025-11-25 server's advertisement is lost).

        Raises:
            UnknownServer: no server ``name`` (the message lists them); ServerClosed.
        """
        handle = find_server(self._handles, name, closed=self._closed)
        advertised = getattr(handle, "extensions", None) or {}
        return APPS_EXTENSION in advertised or any(tool_ui(tool.meta) for tool in handle.tools)

    def resolve_ui_action(self, action: Mapping[str, Any], content: Any) -> UIAction:
        """Resolve a UI action to the full tool name to call and its arguments.

        ``content`` is what showed the action (a content block, a result or the
        response from `call_tool`): a base ``toolName`` takes its server from the
        service on it; a full name passes unchanged; host actions (``intent``,
        ``prompt``, ``notify``, ``link``) give ``tool_name`` None.

        Raises:
            ValueError: a malformed action, or a base name with no service to go by.
            UnknownTool: the resolved name is not in the catalog.
        """
        return self._catalog.resolve_ui_action(action, content)

    # -- remote servers that need authorization: its Authorizations' ------------------

    @property
    def needs_authorization(self) -> dict[str, str]:
        """The remote servers waiting for someone to authorize nativemcp, with the reason.

        ``nativemcp auth login SERVER`` (then the pool's next use of the server) or
        ``await pool.authorize(SERVER)`` authorizes one; until then its one listed tool
        says so."""
        return self._authorizations.waiting()

    async def authorize(self, name: str, /, redirect: RedirectHook | None = None) -> None:
        """Authorize remote server ``name`` now, while the pool runs.

        A grant kept since the server gave up (``nativemcp auth login`` in another
        process) is used; else ``redirect`` (default: the pool's ``oauth_redirect``) is
        given the authorization URL, as at start. Once authorized, the server's tools
        take the place of its ``needs_authorization`` tool in the catalog. A server that
        is authorized already is left as it is.

        Raises:
            UnknownServer: no server ``name``; ServerClosed: the pool is closed.
            ValueError: ``name`` is not a remote server with an ``"oauth"`` entry.
            NeedsAuthorization: still not authorized: no grant kept and no hook to ask
                a person, or the authorization server refused, or nobody came back.
        """
        await self._authorizations.authorize(name, redirect)

    async def _catalog_entry(self, full_name: str) -> CatalogEntry:
        """The catalog entry of ``full_name``, looked for again once a server that
        needed authorization is authorized (its tools were not listed before); a
        server that still waits answers with its ``needs_authorization`` tool.

        Raises:
            UnknownTool: no such full name, even after that.
        """
        try:
            return self._catalog.entry(full_name)
        except UnknownTool as unknown:
            if await self._authorizations.freshen():
                with contextlib.suppress(UnknownTool):
                    return self._catalog.entry(full_name)
            for placeholder in self._authorizations.placeholders(full_name):
                with contextlib.suppress(UnknownTool):
                    return self._catalog.entry(placeholder)
            raise unknown from None

    # -- the agent loop: its AgentLoop's, under the same names -----------------------

    @property
    def result_budget(self) -> int | None:
        """The tokens one tool result may take in `run_tool_call`'s messages (None: none)."""
        return self._agent_loop.result_budget

    tool_index = _loop_method(AgentLoop.tool_index)
    fresh_tool_index = _loop_method(AgentLoop.fresh_tool_index)
    search_tools = _loop_method(AgentLoop.search_tools)
    searched = _loop_method(AgentLoop.searched)
    learn_call = _loop_method(AgentLoop.learn_call)
    tool_definitions = _loop_method(AgentLoop.tool_definitions)
    run_tool_call = _loop_method(AgentLoop.run_tool_call)
    run_tool_calls = _loop_method(AgentLoop.run_tool_calls)
    answer_code_tool = _loop_method(AgentLoop.answer_code_tool)
    describe_tools = _loop_method(AgentLoop.describe_tools)
    run_code = _loop_method(AgentLoop.run_code)
