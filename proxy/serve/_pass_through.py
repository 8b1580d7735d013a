"""The features an MCP client reaches besides tools: resources, prompts, completions.

They are passed through as JSON to the server that owns them (a typed proxy would drop
the fields of an external server's listings that nativemcp does not model), under the
pool's client span; prompts are named as the bridge names tools. A connection's resource
subscriptions are kept here, and notified when a tool reports a resource changed.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    SEPARATOR,
    BackendType,
    FeatureError,
    ServerError,
    full_tool_name,
    safe_server_name,
)
from nativemcp.workers.telemetry import feature_target

from .._handle import CallOptions, ServerHandle
from .._sdk_seam import client_connection
from ..telemetry import traced
from ._apps import ServedApps
from ._served_results import ServedResults

__all__ = ["PassThroughFeatures"]

_logger = logging.getLogger("nativemcp.serve")


@dataclass(frozen=True, slots=True)
class _Route:
    handle: ServerHandle
    name: str  # the tool's or prompt's own name on its server


class PassThroughFeatures:
    """One bridge's resources, prompts and completions, and its clients' resource
    subscriptions.

    Args:
        handles: the served servers' handles, by server name, in listing order.
        apps: the served MCP Apps (their namespaced ``ui://`` resources).
        results: the kept results (their ``nativemcp://results/<id>`` resources).
        limit: seconds per request to a server (None: no limit).
        single: one server is served, so prompts keep their own names.
    """

    def __init__(
        self,
        handles: Mapping[str, ServerHandle],
        apps: ServedApps,
        results: ServedResults,
        limit: float | None,
        *,
        single: bool,
    ) -> None:
        self._handles = handles
        self._apps = apps
        self._results = results
        self._limit = limit
        self._single = single
        # Subscriptions are per client connection; the connection object is the key.
        self._subscriptions: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def _public(self, handle: ServerHandle, name: str) -> str:
        if self._single:
            return name
        backend = BackendType(handle.backend)
        return full_tool_name(safe_server_name(handle.name, backend), name, backend)

    def _route(self, public: str, what: str) -> _Route:
        """The server and own name of a prompt (tools go through the catalog)."""
        if self._single:
            (handle,) = self._handles.values()
            return _Route(handle, public)
        body = public.removeprefix("builtin_")
        server, sep, own = body.partition(SEPARATOR)
        found = next(
            (
                handle
                for handle in self._handles.values()
                if safe_server_name(handle.name, BackendType(handle.backend)) == server
            ),
            None,
        )
        if not sep or found is None:
            raise MCPError(INVALID_PARAMS, f"unknown {what} {public!r}")
        return _Route(found, own)

    def _forward(self, handle: ServerHandle, method: str, params: dict[str, Any]) -> Any:
        """The awaitable of ``handle``'s answer, under the pool's client span."""
        target, uri = feature_target(method, params)
        options = CallOptions(timeout=self._limit)
        return traced(
            handle.name, method, target, lambda: handle.feature(method, params, options), uri=uri
        )

    async def _feature(self, handle: ServerHandle, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self._forward(handle, method, params)
        except FeatureError as exc:
            raise MCPError(exc.code, exc.message) from exc
        except ServerError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc)) from exc

    async def list_resources(
        self, ctx: ServerRequestContext[Any] | None, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """Every served server's resources."""
        resources: list[Any] = []
        for server, handle in self._handles.items():
            found = (await self._feature(handle, "resources/list", {}))["resources"]
            resources += self._apps.listed(server, found, "uri")
        return types.ListResourcesResult.model_validate({"resources": resources})

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any] | None, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """Every served server's resource templates."""
        templates: list[Any] = []
        for server, handle in self._handles.items():
            found = await self._feature(handle, "resources/templates/list", {})
            templates += self._apps.listed(server, found["resourceTemplates"], "uriTemplate")
        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": templates})

    async def read_resource(
        self, ctx: ServerRequestContext[Any] | None, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """The resource's contents, from the first server that has it, or a kept
        result (``nativemcp://results/<id>``, read only by the caller it was kept for)."""
        uri = str(params.uri)
        kept = await self._results.read_resource(uri, ctx)
        if kept is not None:
            return kept
        routed = await self._apps.read(uri, self._feature)  # a namespaced ui:// URI
        if routed is not None:
            return types.ReadResourceResult.model_validate(routed)
        problems: list[str] = []
        for handle in self._handles.values():
            try:
                result = await self._forward(handle, "resources/read", {"uri": uri})
            except FeatureError as exc:
                problems.append(exc.message)
                continue
            except ServerError as exc:
                raise MCPError(INTERNAL_ERROR, str(exc)) from exc
            return types.ReadResourceResult.model_validate(result)
        raise MCPError(
            INVALID_PARAMS,
            "; ".join(problems) or f"unknown resource {uri!r}",
            {"uri": uri},
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any] | None, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """Every served server's prompts (full names when several servers are served)."""
        prompts: list[Any] = []
        for handle in self._handles.values():
            for prompt in (await self._feature(handle, "prompts/list", {}))["prompts"]:
                prompts.append({**prompt, "name": self._public(handle, prompt["name"])})
        return types.ListPromptsResult.model_validate({"prompts": prompts})

    async def get_prompt(
        self, ctx: ServerRequestContext[Any] | None, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """The prompt, filled in by its server."""
        route = self._route(params.name, "prompt")
        result = await self._feature(
            route.handle,
            "prompts/get",
            {"name": route.name, "arguments": dict(params.arguments or {})},
        )
        return types.GetPromptResult.model_validate(result)

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Suggestions from the server that owns the prompt or resource template."""
        ref = params.ref
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = {"arguments": dict(params.context.arguments or {})} if params.context else {}
        if isinstance(ref, types.PromptReference):
            route = self._route(ref.name, "prompt")
            handles = [route.handle]
            wire_ref = {"type": "ref/prompt", "name": route.name}
        else:
            routed = self._apps.route(ref.uri)  # a namespaced ui:// template: its server's
            handles = [self._handles[routed[0]]] if routed else list(self._handles.values())
            wire_ref = {"type": "ref/resource", "uri": routed[1] if routed else ref.uri}
        values: list[str] = []
        for handle in handles:
            result = await self._feature(
                handle,
                "completion/complete",
                {"ref": wire_ref, "argument": argument, "context": context},
            )
            values += result["completion"]["values"]
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=False)
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Note the connection's interest in a resource.

        A namespaced ``ui://`` URI must name a served server, as for a read."""
        self._apps.route(str(params.uri))
        connection = client_connection(ctx.session)
        if connection is not None:
            self._subscriptions.setdefault(connection, set()).add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """Forget the connection's interest in a resource."""
        connection = client_connection(ctx.session)
        if connection is not None:
            self._subscriptions.get(connection, set()).discard(str(params.uri))
        return types.EmptyResult()

    async def resource_updated(self, uri: str) -> None:
        """Notify the connections subscribed to ``uri`` (a tool reported it changed)."""
        for connection, uris in list(self._subscriptions.items()):
            # Under the name the client subscribed by (a namespaced ui:// URI is its own).
            for subscribed in [name for name in uris if self._apps.updated_by(name, uri)]:
                try:
                    await connection.send_resource_updated(subscribed)
                except Exception:  # a client gone mid-send must not fail the tool's call
                    _logger.debug("could not notify a subscriber of %s", uri, exc_info=True)
