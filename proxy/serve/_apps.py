"""MCP Apps at the boundary: offered to the clients that declared them, kept apart per server.

``serve`` advertises the ``io.modelcontextprotocol/ui`` extension (the official SDK's
`mcp.server.apps` names). What a client sees depends on what it declared: in each
request's envelope on 2026-07-28 (the SDK's ``client_supports_apps`` reads it), or in
``capabilities.extensions`` of its ``initialize`` on 2025-11-25, as the hosts that render
apps send it. The SDK's 2025-11-25 wire types have no ``extensions`` field (they drop it
both ways), so a middleware reads the client's from the raw ``initialize`` and adds the
server's to the answer.

- A client that declared MCP Apps gets each tool's ``_meta.ui`` and, from a tool with a
  UI, a result without the embedded ``ui://`` cards (its host shows the app instead).
- Any other client gets the tools without ``_meta.ui``, none of the tools only an app may
  call (``visibility: ["app"]``: its model would be offered them), and the results as
  they are: text, structured content and the embedded card (the seeds' contract).

When several servers are served through one connection, their ``ui://`` URIs are
namespaced by server (``ui://app.html`` of ``alpha`` is ``ui://alpha/app.html``) in
tools' ``_meta.ui.resourceUri``, in ``resources/list`` and templates, and a
``resources/read`` of such a URI goes to that server alone, under its own URI; so does a
completion of such a template, and a subscription to such a URI hears that server's
updates of its own (`route`, `updated_by`).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, client_supports_apps
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from nativemcp.protocol import (
    INVALID_PARAMS,
    UI_SCHEME,
    BackendType,
    Tool,
    namespaced_ui_uri,
    safe_server_name,
    service_info,
    split_ui_uri,
    tool_ui,
    ui_visibility,
)

from .._sdk_seam import client_connection

if TYPE_CHECKING:
    from .._handle import ServerHandle

__all__ = ["APPS_SETTINGS", "LEGACY_UI_KEY", "ServedApps"]

LEGACY_UI_KEY: Final = "ui/resourceUri"
"""The MCP Apps extension's older flat ``_meta`` key for a tool's app (before
``_meta.ui.resourceUri``), which some servers still send."""
_UI_KEYS: Final = frozenset({"ui", LEGACY_UI_KEY})

APPS_SETTINGS: Final[dict[str, Any]] = {}
"""What ``serve`` advertises under ``capabilities.extensions["io.modelcontextprotocol/ui"]``
(the SDK's `Apps` extension advertises no settings either)."""


class ServedApps:
    """The MCP Apps rules of one bridge over ``handles`` (by server name).

    Args:
        handles: the served servers' handles, by the pool's server name.
        namespaced: give each server's ``ui://`` URIs its own prefix (several servers
            are served through one connection).
    """

    def __init__(self, handles: Mapping[str, ServerHandle], *, namespaced: bool) -> None:
        self.namespaced = namespaced
        # The prefix of a server is its safe name, as in its tools' full names.
        self._prefix = {
            name: safe_server_name(handle.name, BackendType(handle.backend))
            for name, handle in handles.items()
        }
        self._handles = dict(handles)
        # The 2025-11-25 connections whose initialize declared MCP Apps.
        self._declared: weakref.WeakSet[Any] = weakref.WeakSet()
        self._by_prefix = {prefix: name for name, prefix in self._prefix.items()}

    def install(self, server: Any) -> None:
        """Advertise the extension on the SDK's low-level ``server`` (both eras)."""
        server.extensions[EXTENSION_ID] = dict(APPS_SETTINGS)
        server.middleware.append(AppsHandshake(self))

    async def handshake(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """Answer ``initialize`` with the extension and note a client that declared it.

        On 2025-11-25 the SDK's wire types drop ``extensions`` from both sides'
        capabilities, so the raw request and answer are read and written here."""
        result = await call_next(ctx)
        if ctx.method != "initialize" or not isinstance(result, dict):
            return result
        capabilities = result.setdefault("capabilities", {})
        extensions = capabilities.setdefault("extensions", {})
        extensions.setdefault(EXTENSION_ID, dict(APPS_SETTINGS))
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        connection = client_connection(ctx.session)
        if connection is not None and _declares_apps(params.get("capabilities")):
            self._declared.add(connection)
        return result

    def offered(self, ctx: ServerRequestContext[Any]) -> bool:
        """Whether the client of ``ctx`` declared MCP Apps (with the app MIME type), in
        this request's envelope or at its 2025-11-25 handshake.

        A 2025-11-25 request may carry the envelope too (its ``_meta`` under
        ``io.modelcontextprotocol/clientCapabilities``, as 2026-07-28 requests do): the
        one way a client of a stateless server, which keeps nothing of a handshake, can
        say it shows apps."""
        if client_supports_apps(ctx):
            return True
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        meta = params.get("_meta")
        envelope = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
        if _declares_apps(envelope):
            return True
        connection = client_connection(ctx.session)
        return connection is not None and connection in self._declared

    def uri(self, server: str, uri: str) -> str:
        """``uri`` of pool server ``server`` as the client sees it."""
        return namespaced_ui_uri(self._prefix[server], uri) if self.namespaced else uri

    def tool(self, data: dict[str, Any], tool: Tool, offered: bool) -> dict[str, Any] | None:
        """A tool's ``tools/list`` entry (``data``, spec JSON) for this client, or None
        when the client must not be offered it.

        The extension's older flat key ``_meta["ui/resourceUri"]`` is treated as
        ``_meta.ui.resourceUri`` is: namespaced, or removed with it."""
        meta: dict[str, Any] = data.get("_meta") or {}
        if _app_uri(meta) is None:
            return data
        if not offered:
            if "model" not in ui_visibility(meta):
                return None
            stripped = {key: value for key, value in meta.items() if key not in _UI_KEYS}
            rest = {key: value for key, value in data.items() if key != "_meta"}
            return {**rest, "_meta": stripped} if stripped else rest
        service = service_info(tool)
        if not self.namespaced or service is None or service.server_name not in self._prefix:
            return data
        meta = dict(meta)
        if tool_ui(meta) is not None:
            ui = dict(meta["ui"])
            ui["resourceUri"] = self.uri(service.server_name, ui["resourceUri"])
            meta["ui"] = ui
        if _legacy_ui(meta) is not None:
            meta[LEGACY_UI_KEY] = self.uri(service.server_name, meta[LEGACY_UI_KEY])
        return {**data, "_meta": meta}

    def result(
        self, tool: Tool, result: types.CallToolResult, offered: bool
    ) -> types.CallToolResult:
        """A tool's result for this client: a host that shows the tool's app gets no
        embedded ``ui://`` card beside it."""
        if not offered or _app_uri(tool.meta) is None:
            return result
        kept = [
            block
            for block in result.content
            if not (
                isinstance(block, types.EmbeddedResource)
                and str(block.resource.uri).startswith(UI_SCHEME)
            )
        ]
        if len(kept) == len(result.content):
            return result
        return result.model_copy(update={"content": kept})

    def listed(self, server: str, items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        """``resources/list`` entries (``key="uri"``) or templates (``"uriTemplate"``) of
        pool server ``server``, their ``ui://`` URIs namespaced."""
        if not self.namespaced:
            return items
        return [
            {**item, key: self.uri(server, item[key])}
            if isinstance(item.get(key), str) and item[key].startswith(UI_SCHEME)
            else item
            for item in items
        ]

    def callable(self, tool: Tool, offered: bool) -> bool:
        """Whether this client may call ``tool``: one only its app may call
        (``visibility: ["app"]``) is not for a client that shows no apps."""
        return offered or "model" in ui_visibility(tool.meta)

    def route(self, uri: str) -> tuple[str, str] | None:
        """The served server a namespaced ``ui://`` URI (or template) names, and the URI
        as that server knows it; None for any other URI (not namespaced here).

        Raises:
            MCPError: INVALID_PARAMS for a ``ui://`` URI that names no served server
                (namespaced serving routes no ``ui://`` URI by guessing its server).
        """
        if not self.namespaced or not uri.startswith(UI_SCHEME):
            return None
        found = split_ui_uri(uri, self._by_prefix)
        if found is None:
            raise MCPError(
                INVALID_PARAMS,
                f"unknown resource {uri!r}: ui:// resources are named by server here "
                f"(ui://<server>/...; servers: {', '.join(sorted(self._by_prefix))})",
                {"uri": uri},
            )
        prefix, own = found
        return self._by_prefix[prefix], own

    def updated_by(self, subscribed: str, uri: str) -> bool:
        """Whether a subscription to ``subscribed`` (as the client named it) hears a
        server's update of ``uri`` (as the server names it). The pool's report does not
        say which server, so a namespaced ``ui://`` subscription hears every served
        server's update of its own URI: at worst a page read again."""
        if subscribed == uri:
            return True
        if not self.namespaced or not subscribed.startswith(UI_SCHEME):
            return False
        found = split_ui_uri(subscribed, self._by_prefix)
        return found is not None and found[1] == uri

    async def read(
        self,
        uri: str,
        feature: Callable[[ServerHandle, str, dict[str, Any]], Awaitable[Any]],
    ) -> dict[str, Any] | None:
        """The ``resources/read`` result of a namespaced ``ui://`` URI, read by
        ``feature`` from the one server it names, under its own URI there; None for any
        other URI (read from every server, as before).

        Raises:
            MCPError: INVALID_PARAMS for a ``ui://`` URI that names no served server
                (namespaced serving reads no ``ui://`` URI by guessing its server).
        """
        routed = self.route(uri)
        if routed is None:
            return None
        name, own = routed
        result = await feature(self._handles[name], "resources/read", {"uri": own})
        return {**result, "contents": self.listed(name, result["contents"], "uri")}


def _legacy_ui(meta: Mapping[str, Any] | None) -> str | None:
    """The ``ui://`` URI of the extension's older flat key, or None."""
    uri = (meta or {}).get(LEGACY_UI_KEY)
    return uri if isinstance(uri, str) and uri.startswith(UI_SCHEME) else None


def _app_uri(meta: Mapping[str, Any] | None) -> str | None:
    """The app a tool's ``_meta`` names, under either key (None: no app)."""
    return tool_ui(meta) or _legacy_ui(meta)


def _declares_apps(capabilities: Any) -> bool:
    """Whether raw client ``capabilities`` declare MCP Apps: the extension's settings with
    a ``mimeTypes`` list that holds the app type, as the SDK's check asks (never a
    substring of one)."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, Mapping) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, Mapping) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


class AppsHandshake:
    """The server middleware of `ServedApps`: it acts on ``initialize`` alone.

    A class of its own so that serve's fast path, which never answers ``initialize``,
    can tell it apart from middleware that changes other requests.
    """

    def __init__(self, apps: ServedApps) -> None:
        self.apps = apps

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        return await self.apps.handshake(ctx, call_next)
