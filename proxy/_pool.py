"""The worker pool: starts servers in worker processes (or in-process) and hands out proxies.

```python
async with WorkerPool(data_dir="~/.local/share/app") as pool:
    store = pool.server("content-store")
    listing = await store.list_content(store_id=store_id)
```
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self, TypeVar, overload

import anyio
import anyio.abc
import multiprocess

from nativemcp.workers import (
    BUILTIN_SERVERS,
    ClientRequestError,
    Server,
    ServerConfig,
    ServerSource,
    WorkerClosed,
    WorkerError,
    load_server,
)
from nativemcp.workers._wire import DEFAULT_MAX_FRAME

from ._bootstrap import exit_if_bootstrapping
from ._exceptions import UnknownServer
from ._handle import ResourceListener, ServerHandle
from ._local import LocalServer
from ._proxy import ServerProxy
from ._worker import RestartPolicy, WorkerProcess

__all__ = ["DEFAULT_TIMEOUT", "ClientHandler", "WorkerPool"]

ClientHandler = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""Answers a tool's request to its client: spec-shaped params in (``sampling/createMessage``
or ``elicitation/create``), spec-shaped result out; sync or async."""

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds a call may take unless the pool or the call says otherwise."""
DEFAULT_START_TIMEOUT: Final = 20.0
"""Seconds a worker has to load its server and send READY."""

P = TypeVar("P")
StartMethod = Literal["spawn", "forkserver"]


def _builtin_available(name: str) -> bool:
    module = BUILTIN_SERVERS[name].partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class WorkerPool:
    """Runs servers, each in its own worker process, and gives out typed proxies.

    Args:
        servers: user-defined servers: `Server` objects, factories taking a
            `ServerConfig`, or ``"module:attribute"`` strings naming either.
        data_dir: where the built-in servers keep their data; with it, the built-in
            servers (``content-store``, ``planning``, ``workspace``) start too.
        workspace_root: the workspace server's root folder.
        builtins: which built-in servers to start (default: all, when ``data_dir`` is set).
        in_process: names of servers to run in this process instead of a worker
            (default: ``workspace``, which the original app ran natively).
        options: per-server options, by server name.
        timeout: default seconds per call (0 or less: no limit).
        start_timeout: seconds a worker has to become ready.
        max_frame: the largest message in bytes, either way.
        start_method: ``"spawn"`` (default) or ``"forkserver"``.
        restart: how crashed workers are restarted.
        sampling_handler: answers tools' ``ctx.sample(...)`` (``sampling/createMessage``
            params in, ``CreateMessageResult`` JSON out); without it they get a
            `ClientRequestError`.
        elicitation_handler: answers tools' ``ctx.elicit(...)`` (``elicitation/create``).

    Raises:
        ValueError: an unknown built-in, or built-ins without a ``data_dir``.
        NotADirectoryError: ``data_dir`` is a file.
        TypeError: a `Server` to run in a worker is not importable by name (defined
            inside a function); raised here, before any process starts.

    A script that opens a pool must do so under ``if __name__ == "__main__":``: each
    worker imports the script again. Without the guard, the worker exits at once and
    the pool raises `WorkerStartError` naming the guard.
    """

    def __init__(
        self,
        servers: Iterable[ServerSource] = (),
        *,
        data_dir: str | Path | None = None,
        workspace_root: str | Path | None = None,
        builtins: Iterable[str] | None = None,
        in_process: Iterable[str] = ("workspace",),
        options: Mapping[str, Mapping[str, Any]] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        start_method: StartMethod = "spawn",
        restart: RestartPolicy | None = None,
        sampling_handler: ClientHandler | None = None,
        elicitation_handler: ClientHandler | None = None,
    ) -> None:
        exit_if_bootstrapping()
        self._sources = list(servers)
        self._client_handlers = {
            method: handler
            for method, handler in (
                ("sampling/createMessage", sampling_handler),
                ("elicitation/create", elicitation_handler),
            )
            if handler is not None
        }
        self._data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        if self._data_dir is not None and self._data_dir.exists() and not self._data_dir.is_dir():
            raise NotADirectoryError(
                f"data_dir {str(self._data_dir)!r} is a file, not a folder: give a folder "
                "(it is created if missing)"
            )
        self._workspace_root = Path(workspace_root).expanduser() if workspace_root else None
        if builtins is None:
            chosen = [n for n in BUILTIN_SERVERS if _builtin_available(n)] if data_dir else []
        else:
            chosen = list(builtins)
            unknown = [name for name in chosen if name not in BUILTIN_SERVERS]
            if unknown:
                raise ValueError(
                    f"unknown built-in server(s) {', '.join(unknown)}; "
                    f"built-ins: {', '.join(BUILTIN_SERVERS)}"
                )
            if chosen and self._data_dir is None:
                raise ValueError("built-in servers need a data_dir for their data")
        self._builtins = chosen
        self._in_process = frozenset(in_process)
        for source in self._sources:
            if isinstance(source, Server) and source.name in self._in_process:
                continue
            if isinstance(source, Server) and source._reference() is None:
                # Now, with a short traceback, rather than when the worker is spawned.
                raise TypeError(source._not_importable_message())
        self._options = {name: dict(value) for name, value in (options or {}).items()}
        self._timeout = timeout
        self._start_timeout = start_timeout
        self._max_frame = max_frame
        self._mp_context = multiprocess.get_context(start_method)
        self._restart = restart or RestartPolicy()
        self._handles: dict[str, ServerHandle] = {}
        self._resource_listeners: list[ResourceListener] = []
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed = False

    def _config(self, name: str | None) -> ServerConfig:
        return ServerConfig(
            data_dir=self._data_dir,
            workspace_root=self._workspace_root,
            options=self._options.get(name or "", {}),
        )

    def _plan(self) -> list[tuple[str, ServerSource]]:
        plan: list[tuple[str, ServerSource]] = [(n, BUILTIN_SERVERS[n]) for n in self._builtins]
        for source in self._sources:
            label = (
                source.name
                if isinstance(source, Server)
                else (source if isinstance(source, str) else getattr(source, "__name__", "server"))
            )
            plan.append((label, source))
        return plan

    async def __aenter__(self) -> Self:
        if self._task_group is not None or self._closed:
            raise RuntimeError("a WorkerPool can be entered only once")
        if self._data_dir is not None:
            self._data_dir.mkdir(parents=True, exist_ok=True)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            await self._start_all()
        except BaseException as exc:
            await self.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def _start_all(self) -> None:
        assert self._task_group is not None
        outer = self._task_group
        errors: list[BaseException] = []
        started: list[ServerHandle] = []

        async def start(label: str, source: ServerSource) -> None:
            config = self._config(label)
            try:
                if label in self._in_process:
                    server = load_server(source, config)
                    started.append(LocalServer(server))
                    return
                worker = WorkerProcess(
                    source,
                    config=config,
                    mp_context=self._mp_context,
                    start_timeout=self._start_timeout,
                    max_frame=self._max_frame,
                    restart=self._restart,
                    label=label,
                )
                started.append(worker)
                await outer.start(worker.run)
            except (WorkerError, ValueError, OSError) as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for label, source in self._plan():
                tg.start_soon(start, label, source)
        for handle in started:
            handle.on_resource_updated = self._resource_updated
            if handle.name in self._handles:
                errors.append(ValueError(f"two servers are named {handle.name!r}"))
            self._handles.setdefault(handle.name, handle)
        if errors:
            # Close whatever did start before reporting.
            for handle in started:
                if handle not in self._handles.values():
                    await handle.aclose()
            if len(errors) == 1:
                # The frames of a worker that failed to start say nothing to the caller;
                # the message does (why, and what to do).
                error = errors[0]
                raise error.with_traceback(None) if isinstance(error, WorkerError) else error
            raise ExceptionGroup("several servers failed to start", errors)  # type: ignore[type-var]

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
            task_group, self._task_group = self._task_group, None
            # The supervisors are done (aclose waited, shielded); this only reaps them.
            # The caller's own exception propagates from its `async with` unchanged.
            await task_group.__aexit__(None, None, None)
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

    async def answer_client_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer a tool's request to its client with the pool's handler for ``method``.

        Raises:
            ClientRequestError: the pool has no handler for ``method``.
        """
        handler = self._client_handlers.get(method)
        if handler is None:
            kind = "sampling_handler" if method.startswith("sampling") else "elicitation_handler"
            raise ClientRequestError(
                f"a tool sent {method!r}, but the pool has no {kind}: pass "
                f"WorkerPool({kind}=...), or serve the server to an MCP client"
            )
        result = handler(params)
        if inspect.isawaitable(result):
            result = await result
        return dict(result)

    def add_resource_listener(self, listener: ResourceListener) -> None:
        """Call ``await listener(uri)`` whenever a tool reports that ``uri`` changed
        (``await ctx.resource_updated(uri)``); the MCP boundary notifies subscribers."""
        self._resource_listeners.append(listener)

    async def _resource_updated(self, uri: str) -> None:
        for listener in list(self._resource_listeners):
            await listener(uri)

    @property
    def is_running(self) -> bool:
        """True between entering the pool and closing it."""
        return self._task_group is not None and not self._closed

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
            WorkerClosed: the pool is closed.
            TypeError: not a name, or an interface without ``server_name``.
        """
        interface: type[Any] | None = None
        if isinstance(name_or_interface, str):
            name = name_or_interface
        elif not isinstance(name_or_interface, type):
            raise TypeError(f"a server name or an interface class, not {name_or_interface!r}")
        else:
            interface = name_or_interface
            declared = getattr(interface, "server_name", None)
            if not isinstance(declared, str):
                raise TypeError(
                    f"{interface.__name__} needs a `server_name` class attribute naming its server"
                )
            name = declared
        if self._closed:
            raise WorkerClosed(f"the pool is closed; cannot use server {name!r}", server=name)
        handle = self._handles.get(name)
        if handle is None:
            raise UnknownServer(
                f"no server named {name!r}; servers: {', '.join(self._handles) or '(none)'}"
            )
        return ServerProxy(
            handle,
            timeout=self._timeout,
            interface=interface,
            on_request=self.answer_client_request,
        )
