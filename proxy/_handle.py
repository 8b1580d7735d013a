"""The one seam between the pool and a tool source: `ServerHandle` and `CallOptions`.

Every source — a server in a worker process, a server in this process, an external MCP
server — is a `ServerHandle`: its tools, ``call(tool, arguments, options)`` and
``aclose()``. The pool and the proxies never ask which kind they hold.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar

import anyio
import msgspec

from nativemcp.protocol import (
    BackendType,
    CallTimeout,
    NativeMCPResponse,
    ServerClosed,
    Tool,
    UnknownServer,
    quoted_name,
    resolved,
    unwrap,
)
from nativemcp.protocol.wire import Caller, Reply, ValueReader
from nativemcp.workers import (
    ClientRequest,
    ClientRequestError,
    LogNotification,
    Notification,
    ProgressNotification,
    ResourceUpdatedNotification,
)

__all__ = [
    "DEFAULT",
    "CallOptions",
    "CallScope",
    "CallerToken",
    "Expected",
    "LogHandler",
    "ProgressCallback",
    "ResourceListener",
    "ServerHandle",
    "UnwrappingHandle",
    "answer_client_request",
    "call_deadline",
    "deliver",
    "deliver_log",
    "find_server",
    "merge_options",
    "time_limit",
]

ResourceListener = Callable[[str], Awaitable[None]]
"""Called with the URI of a resource a tool reported changed."""

CallScope = tuple[str | None, str | None]
"""``(session_id, thread_id)`` of one call: the scope travels with the call."""

ProgressCallback = Callable[[float, float | None, str | None], Any]
"""Called with ``(progress, total, message)``; may be sync or async."""

LogHandler = Callable[[str, Any, str | None], Any]
"""Called with ``(level, data, logger)``; may be sync or async."""


class _Default(enum.Enum):
    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default.DEFAULT
"""``CallOptions(timeout=DEFAULT)``: use the pool's (or the server's) default time limit."""


def time_limit(timeout: float | _Default | None, default: float | None) -> float | None:
    """Seconds a call may take: ``DEFAULT`` gives ``default``, ``None`` no limit.

    A number of 0 or less also means no limit (kept from earlier releases).

    Raises:
        TypeError: ``timeout`` is neither a number, None nor ``DEFAULT``.
    """
    if timeout is DEFAULT:
        timeout = default
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"a time limit is seconds, None or DEFAULT, not {timeout!r}")
    return float(timeout) if timeout > 0 else None


class CallerToken:
    """The access token a caller presented to serve, held for one use only.

    That use is serve's RFC 8693 exchange for an upstream that trusts serve's issuer.
    It is never sent to an upstream as it is, never printed (its repr hides it), and
    never leaves the process (a worker's `Call` frame carries the `Caller`, not this)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The token itself (for the exchange's ``subject_token``)."""
        return self._value

    def __repr__(self) -> str:
        return "CallerToken(<hidden>)"


class CallOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options of one call, in one object rather than repeated keyword lists.

    ``timeout``: seconds the call may take; ``None`` for no limit; ``DEFAULT`` (the
    default) for the pool's limit. ``on_progress`` / ``on_log`` receive the tool's
    progress and log notifications while the call runs; ``on_request`` answers the
    tool's requests to its client (sampling, elicitation); ``scope`` is the
    ``(session_id, thread_id)`` of this one call (None: the server's); ``caller`` the
    authenticated principal making it (`Caller`; a tool reads it as ``ctx.caller``);
    ``caller_token`` the token it presented to serve (for a token exchange only).
    """

    timeout: float | _Default | None = DEFAULT
    on_progress: ProgressCallback | None = None
    on_log: LogHandler | None = None
    on_request: ClientRequest | None = None
    scope: CallScope | None = None
    caller: Caller | None = None
    caller_token: CallerToken | None = None

    def with_default(self, default: float | None) -> CallOptions:
        """These options with ``timeout`` resolved against ``default`` (see `time_limit`)."""
        limit = time_limit(self.timeout, default)
        if limit == self.timeout:
            return self
        return msgspec.structs.replace(self, timeout=limit)

    def resolve(self, default: float | None, on_request: ClientRequest | None) -> CallOptions:
        """These options ready for a handle.

        The time limit is resolved against ``default`` and, unless the caller gave its
        own, ``on_request`` answers the tool's requests."""
        options = self
        if options.on_request is None and on_request is not None:
            options = msgspec.structs.replace(options, on_request=on_request)
        return options.with_default(default)

    @property
    def limit(self) -> float | None:
        """The resolved time limit (``DEFAULT`` reads as no limit: resolve first)."""
        timeout = self.timeout
        return None if isinstance(timeout, _Default) else timeout


def merge_options(
    options: CallOptions | None,
    timeout: float | _Default | None,
    on_progress: ProgressCallback | None,
    on_log: LogHandler | None,
    scope: CallScope | None = None,
) -> CallOptions:
    """One call's options: ``options`` (or the defaults) with the keyword arguments given
    beside it taking precedence (``timeout=DEFAULT`` and ``None`` callbacks give none)."""
    base = options or CallOptions()
    if timeout is not DEFAULT or on_progress is not None or on_log is not None or scope is not None:
        base = msgspec.structs.replace(
            base,
            timeout=base.timeout if timeout is DEFAULT else timeout,
            on_progress=on_progress or base.on_progress,
            on_log=on_log or base.on_log,
            scope=scope or base.scope,
        )
    return base


class call_deadline:
    """The time limit of one request to ``server`` (``None``: none): what runs inside
    raises `CallTimeout` naming the server and ``what`` (a tool or a request) once the
    limit passes, as does a `TimeoutError` raised inside. The one timeout mapping of
    every handle.

    It is ``anyio.fail_after`` with one cancel scope and no generators (three nested
    context managers there), on every call of every handle."""

    __slots__ = ("_scope", "_server", "_timeout", "_what")

    def __init__(self, server: str, what: str, timeout: float | None) -> None:
        self._server = server
        self._what = what
        self._timeout = timeout
        self._scope: anyio.CancelScope | None = None

    def __enter__(self) -> None:
        if self._timeout is not None:
            self._scope = anyio.CancelScope(deadline=anyio.current_time() + self._timeout)
            self._scope.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        scope = self._scope
        if scope is not None:
            # It catches only its own cancellation, and nothing but its deadline cancels
            # it (no one else holds it): caught, the time is up. (Its return value is
            # not read: trio's says True with nothing to swallow.)
            scope.__exit__(exc_type, exc, traceback)
            if scope.cancelled_caught:
                exc = TimeoutError()  # as fail_after raises it
        if isinstance(exc, TimeoutError):
            raise CallTimeout(
                server=self._server, tool=self._what, timeout=self._timeout or 0.0
            ) from exc


NO_OPTIONS: Final = CallOptions(timeout=None)
"""No time limit, no callbacks."""


@dataclasses.dataclass(frozen=True, slots=True)
class Expected:
    """What a typed call turns its result into: the tool's value type, and its output
    schema (which tells a FastMCP-wrapped result apart). One per typed tool method."""

    type: Any
    output_schema: Mapping[str, Any] | None = None
    _reader: ValueReader = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The reply's decoder is made here, once per method, not on every call.
        object.__setattr__(self, "_reader", ValueReader(self.type, self.output_schema))

    def unwrap(self, response: NativeMCPResponse[Any], tool: str) -> Any:
        """The value of a whole response (see `nativemcp.protocol.unwrap`)."""
        return unwrap(response, self.type, tool=tool, output_schema=self.output_schema)

    def from_reply(self, reply: Reply, tool: str) -> Any:
        """The value of a worker's reply, decoded in one pass (see `ValueReader`)."""
        return self._reader.read(reply, tool)


class UnwrappingHandle(abc.ABC):
    """A handle whose typed call is its response unwrapped (in-process and external
    servers; a worker decodes the value in one pass instead). A handle that can leave
    the model's text out of a typed call says how in `value_response`."""

    name: str

    @abc.abstractmethod
    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Run ``tool`` and return the whole response."""

    async def value_response(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """The response a typed call unwraps (the whole `call` unless overridden)."""
        return await self.call(tool, arguments, options)

    async def call_value(
        self, tool: str, arguments: dict[str, Any], expected: Expected, options: CallOptions
    ) -> Any:
        """Run ``tool`` and return its value as ``expected.type``.

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the value does not convert to ``expected.type``.
            ServerError: the server timed out, crashed or is closed.
        """
        return expected.unwrap(await self.value_response(tool, arguments, options), tool)


class ServerHandle(Protocol):
    """The operations a proxy and the catalog need, whatever runs the server.

    ``call`` and ``call_value`` get options whose ``timeout`` is already resolved (a
    number or None). ``trusts_type_refs`` says whether the tools' ``_meta`` type
    references may be imported: only the pool's own worker and in-process servers.
    ``default_timeout`` is the source's own per-call limit, if it has one (an external
    server's ``timeout`` entry); None defers to the pool's.
    """

    name: str
    description: str
    backend: BackendType
    trusts_type_refs: bool
    default_timeout: float | None
    on_resource_updated: ResourceListener | None

    @property
    def tools(self) -> list[Tool]: ...

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]: ...

    async def call_value(
        self, tool: str, arguments: dict[str, Any], expected: Expected, options: CallOptions
    ) -> Any: ...

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any: ...

    async def list_tools(self, options: CallOptions) -> list[Tool]: ...

    async def get_service_context(self, options: CallOptions) -> str: ...

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, options: CallOptions
    ) -> None: ...

    async def ping(self, options: CallOptions) -> None: ...

    async def aclose(self) -> None: ...


async def deliver(
    notification: Notification,
    on_progress: ProgressCallback | None,
    on_log: LogHandler | None,
    on_resource_updated: ResourceListener | None = None,
) -> None:
    """Hand a notification to the caller's callback (sync or async); a resource update
    goes to ``on_resource_updated`` (the pool's subscribers), whoever the caller is."""
    outcome: Any = None
    if isinstance(notification, ResourceUpdatedNotification):
        if on_resource_updated is not None:
            await on_resource_updated(notification.uri)
        return
    if isinstance(notification, ProgressNotification):
        if on_progress is not None:
            outcome = on_progress(notification.progress, notification.total, notification.message)
    elif isinstance(notification, LogNotification) and on_log is not None:
        outcome = on_log(notification.level, notification.data, notification.logger)
    await resolved(outcome)


async def deliver_log(handler: LogHandler, level: str, data: Any, logger: str | None) -> None:
    """Hand one log message to a caller's handler (sync or async)."""
    await resolved(handler(level, data, logger))


async def answer_client_request(
    handler: ClientRequest | None, method: str, params: dict[str, Any]
) -> tuple[Any, str | None, int | None]:
    """``(result, error, code)`` of a tool's request to its client, never raising for a
    handler's failure (the tool gets it as a `ClientRequestError`)."""
    if handler is None:
        return (
            None,
            f"nobody can answer {method!r} here: serve the server over MCP to a client "
            "that supports it, or give the pool a handler "
            "(WorkerPool(sampling_handler=..., elicitation_handler=...))",
            None,
        )
    try:
        return await handler(method, params), None, None
    except anyio.get_cancelled_exc_class():
        raise
    except ClientRequestError as exc:
        return None, exc.message, exc.code
    except Exception as exc:
        code = getattr(getattr(exc, "error", None), "code", None)
        return None, f"{type(exc).__name__}: {exc}", code if isinstance(code, int) else None


_S = TypeVar("_S")


def find_server(servers: Mapping[str, _S], name: str, *, closed: bool) -> _S:
    """The server ``name`` of a pool holding ``servers`` (both pools look them up so).

    Raises:
        ServerClosed: the pool is closed.
        UnknownServer: no server by that name (the message lists the servers).
    """
    if closed:
        raise ServerClosed(f"the pool is closed; cannot use server {name!r}", server=name)
    server = servers.get(name)
    if server is None:
        listing = ", ".join(servers) or "(none)"
        raise UnknownServer(f"no server named {quoted_name(name)}; servers: {listing}")
    return server
