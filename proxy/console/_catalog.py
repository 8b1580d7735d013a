"""The console's view of the pool: its one catalog of full tool names, grouped by server.

The pool lists every tool under its full name with its `ServiceInfo`
(`WorkerPool.list_tools`), calls by full name (`WorkerPool.call_tool`) and resolves UI
actions (`WorkerPool.resolve_ui_action`); `ConsoleCatalog` groups the listing by server
for the page and turns a refused UI action into one error the page can show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nativemcp.protocol import SERVICE_META_KEY as SERVICE_META_KEY
from nativemcp.protocol import (
    ContentBlock,
    NativeMCPResponse,
    ResourceContents,
    ServiceInfo,
    Tool,
    service_info,
)

from .._catalog import HOST_ACTIONS as HOST_ACTIONS
from .._catalog import UIAction
from .._handle import ProgressCallback
from .._pool import WorkerPool
from ..codemode import CodeResult
from ..external import ExternalServer, RedirectHook, UserServers

__all__ = [
    "HOST_ACTIONS",
    "SERVICE_META_KEY",
    "ConsoleCatalog",
    "ServerEntry",
    "UIActionTarget",
]


@dataclass(frozen=True)
class UIActionTarget:
    """What a UI action asks for: a tool call (``tool_name`` set) or a host action."""

    type: str
    """The action's ``type`` (``tool``, ``notify``, ``link``, ``prompt``, ``intent``)."""
    tool_name: str | None
    """The full tool name to call, or None for a host action."""
    arguments: dict[str, Any]
    """The tool's arguments, or the host action's payload."""


@dataclass(frozen=True)
class ServerEntry:
    """One server of the catalog, as the console lists it."""

    name: str
    backend: str
    description: str
    tools: list[Tool]


class ConsoleCatalog:
    """Every server and tool of a started pool, under full names.

    Build it with ``await ConsoleCatalog.load(pool)``.
    """

    def __init__(self, pool: WorkerPool, tools: Sequence[Tool]) -> None:
        self._pool = pool
        self._index(tools)

    def _index(self, tools: Sequence[Tool]) -> None:
        self._services: dict[str, ServiceInfo] = {}
        self._tools: dict[str, Tool] = {}
        self._own: dict[tuple[str, str], str] = {}  # (server, its own tool name) -> full
        grouped: dict[str, list[Tool]] = {}
        for tool in tools:
            info = service_info(tool)
            if info is None:  # pragma: no cover - the pool tags every tool it lists
                continue
            self._services[tool.name] = info
            self._tools[tool.name] = tool
            self._own[(info.server_name, info.tool_name)] = tool.name
            grouped.setdefault(info.server_name, []).append(tool)
        self._servers = []
        for name, listed in grouped.items():
            proxy = self._pool.server(name)
            self._servers.append(ServerEntry(name, proxy.backend, proxy.description, listed))

    @classmethod
    async def load(cls, pool: WorkerPool) -> ConsoleCatalog:
        """The catalog of ``pool`` as it is now.

        Raises:
            ToolNameError: two sources give the same full name.
            WorkerClosed: the pool is closed.
        """
        return cls(pool, await pool.list_tools())

    async def reload(self) -> None:
        """List the pool's tools again (a server authorized since lists its own).

        Raises:
            ToolNameError: two sources give the same full name.
            WorkerClosed: the pool is closed.
        """
        self._index(await self._pool.list_tools())

    @property
    def needs_authorization(self) -> dict[str, str]:
        """The servers waiting for someone to authorize nativemcp, with the reason."""
        return self._pool.needs_authorization

    async def grants(self) -> dict[str, dict[str, Any]]:
        """Each OAuth server's grants as the console shows them, never a token: the
        pool's own (``grantScope`` ``pool``), or each user's, for a server that acts
        for each user (``grantScope`` ``user``); read off the event loop."""
        shown: dict[str, dict[str, Any]] = {}
        for name, handle in self._pool.handles.items():
            if isinstance(handle, UserServers):
                shown[name] = {"grantScope": "user", "users": await handle.granted()}
            elif isinstance(handle, ExternalServer) and handle.authorization is not None:
                pool = await handle.authorization.store.status()
                shown[name] = {"grantScope": "pool", "pool": pool}
        return shown

    async def authorize(self, server: str, redirect: RedirectHook) -> None:
        """Authorize ``server`` through ``redirect`` (`WorkerPool.authorize`), then list
        the tools again.

        Raises:
            NeedsAuthorization: it is still not authorized (refused, nobody came back).
            ValueError: not a server that signs in with OAuth; UnknownServer.
        """
        try:
            await self._pool.authorize(server, redirect)
        finally:
            await self.reload()

    @property
    def servers(self) -> list[ServerEntry]:
        """The servers, each with its tools under full names."""
        return list(self._servers)

    def service(self, full_name: str) -> ServiceInfo:
        """The service behind a full tool name.

        Raises:
            KeyError: no tool by that name.
        """
        try:
            return self._services[full_name]
        except KeyError:
            raise KeyError(f"no tool named {full_name!r} in the catalog") from None

    def tool(self, full_name: str) -> Tool:
        """The tool by its full name, as the catalog lists it.

        Raises:
            KeyError: no tool by that name.
        """
        self.service(full_name)  # the same error for an unknown name
        return self._tools[full_name]

    def full_name(self, server: str, own: str) -> str | None:
        """The full name of tool ``own`` of ``server`` (exactly), or None."""
        return self._own.get((server, own))

    async def read_resource(self, server: str, uri: str) -> list[ResourceContents]:
        """Resource ``uri`` of ``server``.

        Raises:
            FeatureError: the server has no such resource.
            ServerError: the server failed.
        """
        return await self._pool.server(server).read_resource(uri)

    async def call_tool(
        self,
        full_name: str,
        arguments: Mapping[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
    ) -> NativeMCPResponse[Any]:
        """Call a tool by its full name; tool errors come back as responses.

        Raises:
            UnknownTool: no tool by that name.
            WorkerError: the source timed out, crashed or is closed.
            ArgumentsError: the arguments are not an object.
        """
        return await self._pool.call_tool(full_name, arguments, on_progress=on_progress)

    async def run_code(self, code: str) -> CodeResult:
        """Run a program over the catalog in code mode (`WorkerPool.run_code`).

        Raises:
            CodeError: the program raised, does not parse, passed a limit, or its
                sandbox died (``error.result`` holds what ran).
            ImportError: the ``code`` extra (pydantic-monty) is not installed.
        """
        return await self._pool.run_code(code)

    async def describe_tools(self, names: Sequence[str]) -> str:
        """The named tools (full names or identifiers) as the Python stubs a program
        calls them by (`WorkerPool.describe_tools`).

        Raises:
            UnknownTool: a name not in the catalog.
        """
        return await self._pool.describe_tools(names)

    def resolve_ui_action(
        self, action: Mapping[str, Any], content: Sequence[ContentBlock]
    ) -> UIActionTarget:
        """The call (or host action, with its payload) an mcp-ui action asks for.

        Raises:
            ValueError: the action is malformed, or names a tool by its own name with no
                service on the content to say whose.
            UnknownTool: the action names a tool the catalog lacks.
        """
        resolved: UIAction = self._pool.resolve_ui_action(action, list(content))
        if resolved.tool_name is None:
            payload = resolved.action.get("payload") or {}
            return UIActionTarget(resolved.type, None, dict(payload))
        return UIActionTarget(resolved.type, resolved.tool_name, dict(resolved.arguments))
