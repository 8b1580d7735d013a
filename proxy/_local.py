"""A server run in this process (backend ``BuiltInNative``), behind the same handle."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import anyio

from nativemcp.protocol import NativeMCPResponse, Tool, unwrap
from nativemcp.workers import ClientRequest, ClientRequestError, Notification, Server, WorkerTimeout
from nativemcp.workers._feature_dispatch import answer_feature

from ._handle import (
    CallScope,
    LogHandler,
    ProgressCallback,
    ResourceListener,
    answer_client_request,
    deliver,
)

__all__ = ["LocalServer"]


class LocalServer:
    """Calls a `Server` directly: no process, no frames, same timeouts and callbacks."""

    backend = "BuiltInNative"

    def __init__(self, server: Server) -> None:
        self.server = server
        self.name = server.name
        self.description = server.description
        self._next_id = 0
        self.on_resource_updated: ResourceListener | None = None

    @property
    def tools(self) -> list[Tool]:
        """The server's tool definitions."""
        return self.server.list_tools()

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
    ) -> NativeMCPResponse[Any]:
        """Run the tool in this process; notifications reach the callbacks in order."""
        self._next_id += 1

        async def notify(notification: Notification) -> None:
            await deliver(notification, on_progress, on_log, self.on_resource_updated)

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            value, error, code = await answer_client_request(on_request, method, params)
            if error is not None:
                raise ClientRequestError(error, code=code)
            return dict(value or {})

        context = self.server.make_context(
            tool, request_id=self._next_id, notify=notify, request=request, scope=scope
        )
        try:
            with anyio.fail_after(timeout if timeout > 0 else math.inf):
                return await self.server.call_tool(tool, arguments, context=context)
        except TimeoutError as exc:
            raise WorkerTimeout(server=self.name, tool=tool, timeout=timeout) from exc

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
    ) -> Any:
        """Run the tool and return its value as ``result_type``.

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the value does not convert to ``result_type``.
            WorkerTimeout: no answer within ``timeout``.
        """
        response = await self.call(
            tool,
            arguments,
            timeout=timeout,
            on_progress=on_progress,
            on_log=on_log,
            on_request=on_request,
            scope=scope,
        )
        return unwrap(response, result_type, tool=tool, output_schema=output_schema)

    async def list_tools(self, *, timeout: float) -> list[Tool]:
        """The server's tool definitions."""
        return self.server.list_tools()

    async def get_service_context(self, *, timeout: float) -> str:
        """The server's service-context text."""
        with anyio.fail_after(timeout):
            return await self.server.get_service_context()

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, *, timeout: float
    ) -> None:
        """Scope later calls to ``(session_id, thread_id)``."""
        with anyio.fail_after(timeout):
            await self.server.switch_context(session_id, thread_id)

    async def feature(self, method: str, params: dict[str, Any], *, timeout: float) -> Any:
        """Answer a resources/prompts/completion request (spec-shaped JSON result).

        Raises:
            FeatureError: unknown resource or prompt, or bad params.
        """
        with anyio.fail_after(timeout if timeout > 0 else math.inf):
            return await answer_feature(self.server, method, params)

    async def ping(self, *, timeout: float) -> None:
        """Always answers: the server is this process."""

    async def aclose(self) -> None:
        """Run the server's shutdown hooks."""
        with anyio.CancelScope(shield=True):
            await self.server.aclose()
