"""A server run in this process (backend ``BuiltInNative``), behind the same handle."""

from __future__ import annotations

from typing import Any

import anyio

from nativemcp.protocol import BackendType, NativeMCPResponse, Tool
from nativemcp.workers import ClientRequestError, Notification, Server, answer_feature
from nativemcp.workers.telemetry import feature_target, mark_response

from ._handle import (
    CallOptions,
    ResourceListener,
    UnwrappingHandle,
    answer_client_request,
    call_deadline,
    deliver,
)
from .telemetry import TRACING, local_server_span

__all__ = ["LocalServer"]


class LocalServer(UnwrappingHandle):
    """Calls a `Server` directly: no process, no frames, same timeouts and callbacks."""

    trusts_type_refs = True
    default_timeout: float | None = None

    def __init__(self, server: Server, backend: BackendType = BackendType.BUILTIN_NATIVE) -> None:
        """Run ``server`` here; ``backend`` says whose it is (a built-in, by default, or
        `BackendType.USER_IN_PROCESS`)."""
        self.backend = backend
        self.server = server
        self.name = server.name
        self.description = server.description
        self._next_id = 0
        self._tools = server.list_tools()
        self.on_resource_updated: ResourceListener | None = None

    @property
    def tools(self) -> list[Tool]:
        """The server's tool definitions (as of start or the last `list_tools`)."""
        return self._tools

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Run the tool in this process; notifications reach the callbacks in order.

        Raises:
            CallTimeout: no answer within the options' time limit.
        """
        return await self._run(tool, arguments, options, value_only=False)

    async def _run(
        self, tool: str, arguments: dict[str, Any], options: CallOptions, *, value_only: bool
    ) -> NativeMCPResponse[Any]:
        self._next_id += 1

        async def notify(notification: Notification) -> None:
            await deliver(
                notification, options.on_progress, options.on_log, self.on_resource_updated
            )

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            value, error, code = await answer_client_request(options.on_request, method, params)
            if error is not None:
                raise ClientRequestError(error, code=code)
            return dict(value or {})

        context = self.server.make_context(
            tool,
            request_id=self._next_id,
            notify=notify,
            request=request,
            scope=options.scope,
            caller=options.caller,
        )
        with call_deadline(self.name, tool, options.limit):
            tracer = TRACING.tracer
            if tracer is None:
                return await self.server.call_tool(
                    tool, arguments, context=context, value_only=value_only
                )
            # Its server span, the client span's child: as a worker's would be.
            scope = options.scope
            with local_server_span(
                tracer,
                tool,
                self.name,
                request_id=self._next_id,
                session_id=scope[0] if scope is not None else None,
            ) as (span, outcome):
                response = await self.server.call_tool(
                    tool, arguments, context=context, value_only=value_only
                )
                outcome.error = mark_response(span, response)
                return response

    async def value_response(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """The response of a typed call: the server skips the model's text, which this
        caller never reads."""
        return await self._run(tool, arguments, options, value_only=True)

    async def list_tools(self, options: CallOptions) -> list[Tool]:
        """The server's tool definitions, read again."""
        tools = self.server.list_tools()
        if tools != self._tools:
            self._tools = tools
        return self._tools

    async def get_service_context(self, options: CallOptions) -> str:
        """The server's service-context text."""
        with call_deadline(self.name, "get service context", options.limit):
            return await self.server.get_service_context()

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, options: CallOptions
    ) -> None:
        """Scope later calls to ``(session_id, thread_id)``."""
        with call_deadline(self.name, "switch context", options.limit):
            await self.server.switch_context(session_id, thread_id)

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any:
        """Answer a resources/prompts/completion request (spec-shaped JSON result).

        Raises:
            FeatureError: unknown resource or prompt, or bad params.
        """
        with call_deadline(self.name, method, options.limit):
            tracer = TRACING.tracer
            if tracer is None:
                return await answer_feature(self.server, method, params)
            self._next_id += 1
            target, uri = feature_target(method, params)
            with local_server_span(
                tracer,
                target,
                self.name,
                request_id=self._next_id,
                session_id=None,
                method=method,
                uri=uri,
            ):
                return await answer_feature(self.server, method, params)

    async def ping(self, options: CallOptions) -> None:
        """Always answers: the server is this process."""

    async def aclose(self) -> None:
        """Run the server's shutdown hooks."""
        with anyio.CancelScope(shield=True):
            await self.server.aclose()
