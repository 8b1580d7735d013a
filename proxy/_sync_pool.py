"""The blocking pool: the same servers and typed methods as `WorkerPool`, for sync code.

```python
with SyncWorkerPool(data_dir="~/.local/share/app") as pool:
    store = pool.server("content-store")
    listing = store.list_content(store_id=store_id)
```

For scripts, Django or Flask views and notebooks without ``await``. Every server runs
in a worker process (the async pool's in-process option does not apply) and each call
is blocking I/O on that worker's socket, on the calling thread (see `_sync_worker`).
One pool may be shared by many threads.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack, overload

from nativemcp.protocol import (
    BackendType,
    NativeMCPResponse,
    ServiceInfo,
    Tool,
    UnknownTool,
    quoted_name,
    tag_service,
    tool_name_index,
    tool_ui,
    ui_visibility,
)
from nativemcp.protocol.wire import (
    GetServiceContext,
    ListTools,
    Ping,
    SwitchContext,
)
from nativemcp.workers import ServerClosed, ServerError, ServerStartError

from ._bootstrap import exit_if_bootstrapping
from ._config import PoolConfig, SyncPoolOptions, check_options
from ._handle import DEFAULT, _Default, find_server, time_limit
from ._proxy import BoundTool, coerce_arguments, result_type, server_and_interface
from ._records import to_records
from ._sync_worker import SyncWorker
from ._worker import start_failure
from .codemode import (
    CodeLimits,
    CodeResult,
    SyncCodeSandbox,
    chosen_tools,
    code_tools,
    tool_stubs,
)
from .telemetry import TRACING, traced_sync
from .telemetry import refresh as refresh_tracing
from .tool_search import IndexedTool, ToolIndex, ToolMatch, ToolProfile

__all__ = ["SyncServerProxy", "SyncToolMethod", "SyncWorkerPool"]

P = TypeVar("P")


class SyncWorkerPool:
    """Runs servers in worker processes and gives out blocking, typed proxies.

    Takes the arguments of `WorkerPool` (`SyncPoolOptions`: not ``in_process``, as
    every server gets a worker, nor the options only the async pool has).
    ``with SyncWorkerPool(...) as pool:`` starts the workers and stops them on the way
    out; `close` does the same by hand.

    Raises:
        ValueError, NotADirectoryError, TypeError: as `WorkerPool`.
        ServerStartError: a server could not start (from ``with`` / `start`).

    As with `WorkerPool`, a script must open the pool under
    ``if __name__ == "__main__":``.
    """

    def __init__(self, servers: Iterable[Any] = (), **options: Unpack[SyncPoolOptions]) -> None:
        exit_if_bootstrapping("SyncWorkerPool")
        check_options(options, SyncPoolOptions.__optional_keys__, "SyncWorkerPool")
        # The async pool's configuration, checked by the same code.
        self._config = PoolConfig.build(servers, in_process=(), **options)
        self._workers: dict[str, SyncWorker] = {}
        self._started = False
        self._closed = False
        # The tool lists indexed (a restarted worker lists anew), the index, and each
        # full name's server and tool.
        self._tool_index: tuple[list[list[Tool]], ToolIndex, dict[str, ServiceInfo]] | None = None
        self._code_sandbox = SyncCodeSandbox()  # its processes start with the first run

    @property
    def config(self) -> PoolConfig:
        """What this pool runs and how (checked when the pool was made)."""
        return self._config

    def start(self) -> None:
        """Start every worker (in parallel) and wait until all are ready.

        Raises:
            ServerStartError: a server failed to start (the others are stopped again).
            RuntimeError: the pool was started before.
        """
        if self._started or self._closed:
            raise RuntimeError("a SyncWorkerPool can be started only once")
        self._started = True
        config = self._config
        config.make_data_dir()
        refresh_tracing()  # the app sets up OpenTelemetry before it starts the pool
        launched: list[tuple[SyncWorker, Any]] = []
        try:
            # Spawn every process first, then wait for each READY: the starts overlap.
            for label, source in config.plan():
                worker = SyncWorker(config.worker_settings(label, source, "SyncWorkerPool"))
                launched.append((worker, worker.spawn()))
            errors: list[ServerError] = []
            for worker, conn in launched:
                try:
                    worker.finish_start(conn)
                except ServerStartError as exc:
                    errors.append(exc)
                    continue
                if worker.name in self._workers:
                    errors.append(
                        ServerStartError(
                            f"two servers are named {worker.name!r}", server=worker.name
                        )
                    )
                self._workers.setdefault(worker.name, worker)
            if errors:
                raise start_failure(errors)
        except BaseException:
            for worker, _ in launched:
                worker.close()
            self._workers.clear()
            self._closed = True
            raise

    def close(self) -> None:
        """Stop every worker (bounded escalation, idempotent): no process is left."""
        if self._closed and not self._workers:
            return
        self._closed = True
        self._code_sandbox.close()
        workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def names(self) -> list[str]:
        """The names of the running servers."""
        return list(self._workers)

    @overload
    def server(self, name: str, /) -> SyncServerProxy: ...
    @overload
    def server(self, interface: Callable[..., P], /) -> P: ...
    def server(self, name_or_interface: str | Callable[..., Any], /) -> Any:
        """A blocking proxy for a server, by name or by a typed interface.

        A typed interface is a class with ``server_name`` and one plain ``def`` per tool.

        Raises:
            UnknownServer: no server by that name (the message lists the servers).
            ServerClosed: the pool is closed.
            TypeError: not a name, or an interface without ``server_name``.
        """
        name, interface = server_and_interface(name_or_interface)
        worker = find_server(self._workers, name, closed=self._closed)
        return SyncServerProxy(worker, timeout=self._config.timeouts.call, interface=interface)

    def _indexed(self) -> tuple[ToolIndex, dict[str, ServiceInfo]]:
        """The BM25 index of every server's tools, rebuilt when a worker's list changed,
        and each full name's server and tool."""
        if self._closed:
            raise ServerClosed("the pool is closed", server="*")
        listed = [worker.tools for worker in self._workers.values()]
        kept = self._tool_index
        if (
            kept is None
            or len(kept[0]) != len(listed)
            or any(a is not b for a, b in zip(kept[0], listed, strict=True))
        ):
            tools: dict[tuple[str, str], Tool] = {}
            services = []
            for worker in self._workers.values():
                for tool in worker.tools:
                    tools[(worker.name, tool.name)] = tool
                    services.append(
                        ServiceInfo(worker.name, tool.name, BackendType(worker.backend))
                    )
            names = tool_name_index(services)
            # A tool only its app may call (MCP Apps) is not found for the model.
            found = {full: tools[(s.server_name, s.tool_name)] for full, s in names.items()}
            indexed = [
                IndexedTool(full, names[full].server_name, tool)
                for full, tool in found.items()
                if "model" in ui_visibility(tool.meta)
            ]
            index = ToolIndex(indexed, embed=self._config.search_embed)
            kept = self._tool_index = (listed, index, names)
        return kept[1], kept[2]

    def list_tools(self) -> list[Tool]:
        """Every tool of every server under its full name, those only an app may call too.

        As `WorkerPool.list_tools` lists them; `search_tools` omits tools only an MCP App
        may call (visibility ``["app"]``).

        Raises:
            ServerClosed: the pool is closed.
        """
        names = self._indexed()[1]
        tools = {(w.name, t.name): t for w in self._workers.values() for t in w.tools}
        return [
            tag_service(tools[(service.server_name, service.tool_name)], service, name=full)
            for full, service in names.items()
        ]

    def offers_apps(self, name: str, /) -> bool:
        """Whether server ``name`` offers MCP Apps: a tool of it names a ``ui://`` page.

        The sync pool runs the app's own servers only, which need no declaration of the
        extension (`WorkerPool(apps=True)` declares it to external servers).

        Raises:
            UnknownServer: no server ``name`` (the message lists them); ServerClosed.
        """
        worker = find_server(self._workers, name, closed=self._closed)
        return any(tool_ui(tool.meta) for tool in worker.tools)

    def search_tools(
        self, query: str, limit: int = 5, *, profile: ToolProfile | None = None
    ) -> list[ToolMatch]:
        """The ``limit`` tools of every server that best fit ``query``, best first.

        Ranked as `WorkerPool.search_tools` ranks them; call one with `call_tool`.

        Raises:
            ValueError: ``limit`` is not between 1 and 50.
            ServerClosed: the pool is closed.
        """
        where = profile.allows if profile is not None and profile.filters else None
        return self._indexed()[0].search(query, limit, where=where)

    def call_tool(
        self,
        full_name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
    ) -> NativeMCPResponse[Any]:
        """Call a tool by its full name and return the raw response.

        The full name is ``server__tool``, as `search_tools` gives it; the call is
        ``pool.server(server).call_tool(tool, ...)``.

        Raises:
            UnknownTool: no tool by that full name (the message names the nearest).
            ServerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        names = self._indexed()[1]
        service = names.get(full_name)
        if service is None:
            near = difflib.get_close_matches(full_name, list(names), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise UnknownTool(f"no tool named {quoted_name(full_name)}{hint}")
        proxy = self.server(service.server_name)
        return proxy.call_tool(service.tool_name, arguments, timeout=timeout)

    # -- code mode -------------------------------------------------------------------

    def _code_tools(self, profile: ToolProfile | None) -> dict[str, Tool]:
        """Identifier → tool (under its full name) for each tool the model may see: the
        search index's (app-only tools left out), narrowed by ``profile``."""
        visible = [(item.full_name, item.tool) for item in self._indexed()[0].tools]
        return code_tools(visible, profile.allows if profile is not None else None)

    def describe_tools(self, names: Iterable[str], *, profile: ToolProfile | None = None) -> str:
        """The named tools as the Python stubs a program calls them by.

        As `WorkerPool.describe_tools`.

        Raises:
            UnknownTool: a name the caller may not see; ServerClosed.
        """
        return tool_stubs(chosen_tools(self._code_tools(profile), names))

    def run_code(
        self,
        code: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        limits: CodeLimits | None = None,
        profile: ToolProfile | None = None,
        timeout: float | _Default | None = DEFAULT,
    ) -> CodeResult:
        """Run a model's Python program with the tools callable; what it printed.

        As `WorkerPool.run_code`: each inner call is `call_tool` (``timeout`` each), on
        a thread of the sandbox's own, so the calls a program gathers run at once.

        Raises:
            CodeError: the program raised, does not parse, passed a limit or its
                sandbox died (``error.result`` holds what ran).
            ImportError: the ``code`` extra (pydantic-monty) is not installed.
            ServerClosed: the pool is closed.
        """
        tools = self._code_tools(profile)
        clash = sorted(set(inputs or ()) & set(tools))
        if clash:
            raise ValueError(f"inputs named like tools: {', '.join(clash)}")

        def call(full_name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
            return self.call_tool(full_name, arguments, timeout=timeout)

        limits = limits or self._config.code_limits
        return self._code_sandbox.run(code, tools=tools, call=call, inputs=inputs, limits=limits)


class SyncToolMethod(BoundTool):
    """A bound tool: ``method(**arguments)`` returns the typed value."""

    def __init__(self, proxy: SyncServerProxy, tool: Tool, result_type: Any) -> None:
        super().__init__(tool, result_type)
        self._proxy = proxy

    def __call__(
        self,
        arguments: Mapping[str, Any] | str | None = None,
        /,
        *,
        call_timeout: float | _Default | None = DEFAULT,
        **kwargs: Any,
    ) -> Any:
        """Call the tool and unwrap its value (``call_timeout``: seconds, ``None`` for no
        limit, ``DEFAULT`` for the pool's).

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the result does not convert to the tool's type.
            ServerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        name = self.tool.name
        merged = coerce_arguments(name, arguments, kwargs)
        worker = self._proxy._worker
        # The common case (no per-call limit) skips the checks: this is every call's path.
        timeout = (
            self._proxy.timeout
            if call_timeout is DEFAULT
            else time_limit(call_timeout, self._proxy.timeout)
        )
        if TRACING.tracer is None:
            return self._run(name, merged, timeout)
        return traced_sync(
            worker.name, "tools/call", name, lambda: self._run(name, merged, timeout)
        )

    def _run(self, name: str, arguments: dict[str, Any], timeout: float | None) -> Any:
        worker = self._proxy._worker
        if self.result_type is Any:
            response = worker.call(name, arguments, timeout=timeout)
            return to_records(self._untyped.unwrap(response, name))
        return worker.call_value(name, arguments, self._expected, timeout=timeout)

    def __repr__(self) -> str:
        return f"<tool {self._proxy.name}.{self.tool.name}>"


class SyncServerProxy:
    """The blocking caller's side of one server: raw calls, typed tool methods, hooks."""

    def __init__(
        self, worker: SyncWorker, *, timeout: float | None, interface: type[Any] | None = None
    ) -> None:
        self._worker = worker
        self._timeout = timeout
        self._interface = interface
        self._methods: dict[str, SyncToolMethod] = {}

    @property
    def name(self) -> str:
        """The server's name."""
        return self._worker.name

    @property
    def timeout(self) -> float | None:
        """The default seconds per call (None: no limit)."""
        return self._timeout

    @property
    def tools(self) -> list[Tool]:
        """The server's tool definitions."""
        return self._worker.tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | _Default | None = DEFAULT,
    ) -> NativeMCPResponse[Any]:
        """Call a tool and return the raw response, rich text included.

        Errors are responses, not raised. ``timeout``: seconds, ``None`` for no limit,
        ``DEFAULT`` for the pool's.

        Raises:
            ServerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        merged = coerce_arguments(name, arguments, {})
        limit = time_limit(timeout, self._timeout)
        return traced_sync(
            self._worker.name,
            "tools/call",
            name,
            lambda: self._worker.call(name, merged, timeout=limit),
        )

    def list_tools(self) -> list[Tool]:
        """Ask the server for its tools."""
        value = self._worker.request(lambda i: ListTools(id=i), "list tools", self._timeout)
        return self._worker.take_tools(value)

    def get_service_context(self) -> str:
        """The server's text for an agent's system prompt."""
        return str(
            self._worker.request(
                lambda i: GetServiceContext(id=i), "get service context", self._timeout
            )
        )

    def switch_context(self, session_id: str | None, thread_id: str | None = None) -> None:
        """Scope later calls to a session and thread."""
        self._worker.request(
            lambda i: SwitchContext(id=i, session_id=session_id, thread_id=thread_id),
            "switch context",
            self._timeout,
        )

    def ping(self) -> None:
        """Round-trip an empty message to the server."""
        self._worker.request(lambda i: Ping(id=i), "ping", self._timeout)

    def __getattr__(self, name: str) -> SyncToolMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        method = self._methods.get(name)
        if method is not None:
            return method
        for tool in self._worker.tools:
            if tool.name == name:
                method = SyncToolMethod(
                    self, tool, result_type(tool, self._interface, trusts_type_refs=True)
                )
                self._methods[name] = method
                return method
        available = ", ".join(tool.name for tool in self._worker.tools) or "(none)"
        raise AttributeError(f"server {self.name!r} has no tool {name!r}; tools: {available}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(tool.name for tool in self._worker.tools)})

    def __repr__(self) -> str:
        return f"<SyncServerProxy {self.name!r} ({len(self.tools)} tools)>"
