"""What a proxy talks to: a server in a worker process or in this process."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from nativemcp.protocol import NativeMCPResponse, Tool
from nativemcp.workers import LogNotification, Notification, ProgressNotification

__all__ = ["LogHandler", "ProgressCallback", "ServerHandle", "deliver"]

ProgressCallback = Callable[[float, float | None, str | None], Any]
"""Called with ``(progress, total, message)``; may be sync or async."""

LogHandler = Callable[[str, Any, str | None], Any]
"""Called with ``(level, data, logger)``; may be sync or async."""


class ServerHandle(Protocol):
    """The operations a proxy needs, whatever runs the server."""

    name: str
    description: str
    backend: str

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
    ) -> Any: ...

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
) -> None:
    """Hand a notification to the caller's callback (sync or async)."""
    outcome: Any = None
    if isinstance(notification, ProgressNotification):
        if on_progress is not None:
            outcome = on_progress(notification.progress, notification.total, notification.message)
    elif isinstance(notification, LogNotification) and on_log is not None:
        outcome = on_log(notification.level, notification.data, notification.logger)
    if inspect.isawaitable(outcome):
        await outcome
