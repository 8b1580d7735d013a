"""The console's view of the pool: one catalog of full tool names, and UI actions resolved.

The console needs three things from a pool: every tool under its full name with its
`ServiceInfo`, a call by full name, and a UI action (an mcp-ui ``postMessage`` from a
rendered UIResource) turned into the tool call it asks for. `ConsoleCatalog` builds them
from the pool's per-server proxies and `nativemcp.protocol`'s naming rules, so that the
console itself only ever sees full names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from nativemcp.protocol import (
    BackendType,
    ContentBlock,
    NativeMCPResponse,
    ServiceInfo,
    Tool,
    full_tool_name,
)

from ._handle import ProgressCallback
from ._pool import WorkerPool

__all__ = [
    "HOST_ACTIONS",
    "SERVICE_META_KEY",
    "ConsoleCatalog",
    "ServerEntry",
    "UIActionError",
    "UIActionTarget",
    "service_meta",
]

SERVICE_META_KEY: Final = "io.github.nativemcp/service"
"""The ``_meta`` key of a tool or content block naming the service it belongs to."""

HOST_ACTIONS: Final = frozenset({"notify", "link", "prompt", "intent"})
"""mcp-ui action types meant for the host itself: shown to the user, never run as tools."""


class UIActionError(ValueError):
    """A UI action that is malformed or names no known tool."""


@dataclass(frozen=True)
class UIActionTarget:
    """What a UI action asks for: a tool call (``tool_name`` set) or a host action."""

    type: str
    """The action's ``type`` (``tool``, ``notify``, ``link``, ``prompt``, ``intent``)."""
    tool_name: str | None
    """The full tool name to call, or None for a host action."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The tool's arguments, or the host action's payload."""


@dataclass(frozen=True)
class ServerEntry:
    """One server of the catalog, as the console lists it."""

    name: str
    backend: str
    description: str
    tools: list[Tool]


def service_meta(info: ServiceInfo) -> dict[str, str]:
    """``info`` as the ``_meta`` value listed tools and content blocks carry."""
    return {
        "serverName": info.server_name,
        "toolName": info.tool_name,
        "backendType": str(info.backend_type),
    }


def _service_from_meta(meta: Mapping[str, Any] | None) -> ServiceInfo | None:
    value = (meta or {}).get(SERVICE_META_KEY)
    if not isinstance(value, Mapping):
        return None
    try:
        return ServiceInfo(
            server_name=str(value["serverName"]),
            tool_name=str(value["toolName"]),
            backend_type=BackendType(value["backendType"]),
        )
    except (KeyError, ValueError):
        return None


class ConsoleCatalog:
    """Every server and tool of a started pool, under full names.

    Args:
        pool: an entered `WorkerPool`.
    """

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool
        self._services: dict[str, ServiceInfo] = {}
        self._servers: list[ServerEntry] = []
        for name in pool.names:
            proxy = pool.server(name)
            backend = BackendType(proxy.backend)
            tools: list[Tool] = []
            for tool in proxy.tools:
                info = ServiceInfo(server_name=name, tool_name=tool.name, backend_type=backend)
                full = full_tool_name(name, tool.name, backend)
                self._services[full] = info
                meta = {**(tool.meta or {}), SERVICE_META_KEY: service_meta(info)}
                tools.append(msgspec.structs.replace(tool, name=full, meta=meta))
            self._servers.append(ServerEntry(name, proxy.backend, proxy.description, tools))

    @property
    def servers(self) -> list[ServerEntry]:
        """The servers, each with its tools under full names."""
        return list(self._servers)

    def service(self, full_name: str) -> ServiceInfo:
        """The service behind a full tool name.

        Raises:
            KeyError: no tool by that name (the message lists how to find them).
        """
        try:
            return self._services[full_name]
        except KeyError:
            raise KeyError(f"no tool named {full_name!r} in the catalog") from None

    def tool(self, full_name: str) -> Tool:
        """The listed tool of a full name.

        Raises:
            KeyError: no tool by that name.
        """
        self.service(full_name)
        for server in self._servers:
            for tool in server.tools:
                if tool.name == full_name:
                    return tool
        raise KeyError(full_name)  # pragma: no cover - _services and _servers agree

    async def call_tool(
        self,
        full_name: str,
        arguments: Mapping[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
    ) -> NativeMCPResponse[Any]:
        """Call a tool by its full name; tool errors come back as responses.

        Every content block of the result carries the service in its ``_meta``.

        Raises:
            KeyError: no tool by that name.
            WorkerError: the worker timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        info = self.service(full_name)
        proxy = self._pool.server(info.server_name)
        response = await proxy.call_tool(info.tool_name, arguments, on_progress=on_progress)
        if response.result is None:
            return response
        stamp = service_meta(info)
        blocks = [
            msgspec.structs.replace(block, meta={**(block.meta or {}), SERVICE_META_KEY: stamp})
            if hasattr(block, "meta")
            else block
            for block in response.result.content
        ]
        return msgspec.structs.replace(
            response, result=msgspec.structs.replace(response.result, content=blocks)
        )

    def resolve_ui_action(
        self, action: Mapping[str, Any], content: Sequence[ContentBlock]
    ) -> UIActionTarget:
        """The call (or host action) an mcp-ui ``postMessage`` action asks for.

        A ``tool`` action names its tool by full name, or (as mcp-ui resources do) by
        the tool's own name: that one is looked up on the server whose content rendered
        the UI, read from the content blocks' service ``_meta``.

        Raises:
            UIActionError: the action is not an object with a known ``type`` and a
                ``payload`` object, or names a tool the catalog does not have.
        """
        kind = action.get("type")
        payload = action.get("payload", {})
        if not isinstance(kind, str) or not isinstance(payload, Mapping):
            raise UIActionError(
                "a UI action is an object with a string `type` and a `payload` object"
            )
        if kind in HOST_ACTIONS:
            return UIActionTarget(kind, None, dict(payload))
        if kind != "tool":
            known = ", ".join(sorted({"tool", *HOST_ACTIONS}))
            raise UIActionError(f"unknown UI action type {kind!r}; types: {known}")
        name = payload.get("toolName")
        params = payload.get("params", {})
        if not isinstance(name, str) or not name:
            raise UIActionError("a `tool` UI action needs `payload.toolName` (a string)")
        if not isinstance(params, Mapping):
            raise UIActionError(f"`payload.params` of the {name!r} action must be an object")
        if name in self._services:
            return UIActionTarget(kind, name, dict(params))
        for block in content:
            info = _service_from_meta(getattr(block, "meta", None))
            if info is None:
                continue
            full = full_tool_name(info.server_name, name, info.backend_type)
            if full in self._services:
                return UIActionTarget(kind, full, dict(params))
        raise UIActionError(
            f"the UI asked for tool {name!r}, which neither is a full tool name nor belongs "
            "to the server that rendered it"
        )
