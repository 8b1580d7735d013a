"""What a proxy talks to: a server in a worker process or in this process."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from nativemcp.protocol import NativeMCPResponse, Tool
from nativemcp.workers import (
    ClientRequest,
    ClientRequestError,
    LogNotification,
    Notification,
    ProgressNotification,
    ResourceUpdatedNotification,
)

__all__ = [
    "CallScope",
    "LogHandler",
    "ProgressCallback",
    "ResourceListener",
    "ServerHandle",
    "answer_client_request",
    "deliver",
]

ResourceListener = Callable[[str], Awaitable[None]]
"""Called with the URI of a resource a tool reported changed."""

CallScope = tuple[str | None, str | None]
"""``(session_id, thread_id)`` of one call: the scope travels with the call."""

ProgressCallback = Callable[[float, float | None, str | None], Any]
"""Called with ``(progress, total, message)``; may be sync or async."""

LogHandler = Callable[[str, Any, str | None], Any]
"""Called with ``(level, data, logger)``; may be sync or async."""


class ServerHandle(Protocol):
    """The operations a proxy needs, whatever runs the server."""

    name: str
    description: str
    backend: str
    on_resource_updated: ResourceListener | None

    @property
    def tools(self) -> list[Tool]: ...

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float,
        on_progress: ProgressCallback | None,
        on_log: LogHandler | None,
        on_request: ClientRequest | None = None,
        scope: CallScope | None = None,
    ) -> NativeMCPResponse[Any]: ...

    async def call_value(
        self,
        tool: str,
        arguments: dict[str, Any],
        result_type: Any,
        output_schema: Mapping[str, Any] | None,
        *,
        timeout: float,
        on_progress: ProgressCallback | None,
        on_log: LogHandler | None,
        on_request: ClientRequest | None = None,
        scope: CallScope | None = None,
    ) -> Any: ...

    async def feature(self, method: str, params: dict[str, Any], *, timeout: float) -> Any: ...

    async def list_tools(self, *, timeout: float) -> list[Tool]: ...

    async def get_service_context(self, *, timeout: float) -> str: ...

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, *, timeout: float
    ) -> None: ...

    async def ping(self, *, timeout: float) -> None: ...

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
    if inspect.isawaitable(outcome):
        await outcome


async def answer_client_request(
    handler: ClientRequest | None, method: str, params: dict[str, Any]
) -> tuple[Any, str | None, int | None]:
    """``(result, error, code)`` of a tool's request to its client, never raising for a
    handler's failure (the tool gets it as a `ClientRequestError`)."""
    import anyio

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
