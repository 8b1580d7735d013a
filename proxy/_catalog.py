"""One catalog over every tool source: full names, routing, service tags, UI actions.

Every tool of every server is listed under its full name (``builtin_server__tool`` for
a built-in server, ``server__tool`` for an external or the user's own server), from
`protocol._naming`. A server's name may be anything a person wrote in a config file: the
full name holds `safe_server_name` of it, and the `ServiceInfo` the name as written. Two
sources with the same full name are an error naming both — never "first one wins". Every
result routed through the catalog has the producing service in each content block's
``_meta``, which is what lets a UI action that names a base tool (``download_file``)
find its full name.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from nativemcp.protocol import (
    BackendType,
    NativeMCPResponse,
    ServiceInfo,
    Tool,
    ToolNameError,
    UnknownTool,
    full_tool_name,
    is_valid_tool_name,
    portable_tool,
    quoted_name,
    safe_server_name,
    service_info,
    tag_service,
    tool_name_index,
)

from ._handle import ServerHandle
from ._pins import ToolPins

__all__ = ["HOST_ACTIONS", "Catalog", "CatalogEntry", "UIAction"]

_logger = logging.getLogger("nativemcp.catalog")

HOST_ACTIONS: Final = frozenset({"intent", "prompt", "notify", "link"})
"""UI action types the host handles itself (no tool is called)."""


class CatalogEntry(msgspec.Struct, frozen=True):
    """One tool under its full name: the service it belongs to and the handle to call."""

    full_name: str
    service: ServiceInfo
    handle: Any
    tool: Tool


class UIAction(msgspec.Struct, frozen=True, kw_only=True):
    """A UI action resolved against the catalog.

    ``tool_name`` is the full tool name to call, or None for a host action (``intent``,
    ``prompt``, ``notify``, ``link``), which is kept in ``action`` for the host.
    """

    type: str
    tool_name: str | None
    arguments: dict[str, Any]
    action: dict[str, Any]


class Catalog:
    """The full-name index over a pool's handles, rebuilt when a source's tools change."""

    def __init__(self, handles: Mapping[str, ServerHandle], pins: ToolPins | None = None) -> None:
        self._handles = handles
        self._pins = pins
        # What was withheld and said so: one warning per tool and definition, not per
        # rebuild.
        self._warned: set[str] = set()
        self._seen: list[Any] = []
        self._index: dict[str, CatalogEntry] = {}
        self._tools: list[Tool] = []
        self._version = 0

    def _current(self) -> dict[str, CatalogEntry]:
        # A source's tool list is replaced when its tools change (a restart, a new
        # listing); the lists seen last are held, so identity is a safe test.
        current = [handle.tools for handle in self._handles.values()]
        if len(current) != len(self._seen) or any(
            a is not b for a, b in zip(current, self._seen, strict=True)
        ):
            self._index, self._tools = self._build()
            self._seen = current
            self._version += 1
        return self._index

    def _build(self) -> tuple[dict[str, CatalogEntry], list[Tool]]:
        # The index is built over the names' safe forms; each entry keeps the name as
        # written (what a person reads in `ServiceInfo`).
        services: list[ServiceInfo] = []
        owners: dict[tuple[str, str, BackendType], tuple[Any, Tool]] = {}
        for handle in self._handles.values():
            backend = BackendType(handle.backend)
            # A config key is a name a person chose: any goes. The pool's own servers
            # are named in code, where a name that breaks the rules is a mistake to report.
            external = backend is BackendType.EXTERNAL_MCP
            safe = safe_server_name(handle.name) if external else handle.name
            for tool in handle.tools:
                if not is_valid_tool_name(tool.name):
                    # Only an external server can list such a name (ours are checked).
                    _logger.warning(
                        "tool %r of MCP server %r breaks the tool-name rule; it is left out "
                        "of the catalog (call it with pool.server(%r).call_tool)",
                        tool.name,
                        handle.name,
                        handle.name,
                    )
                    continue
                services.append(ServiceInfo(safe, tool.name, backend))
                owners[(safe, tool.name, backend)] = (handle, tool)
        index = tool_name_index(services)
        entries: dict[str, CatalogEntry] = {}
        tools: list[Tool] = []
        for name, safe_service in index.items():
            key = (safe_service.server_name, safe_service.tool_name, safe_service.backend_type)
            handle, listed = owners[key]
            # What is listed is what clients get: schemas every client accepts.
            tool = portable_tool(listed)
            if self._withheld(name, tool):
                continue
            service = ServiceInfo(handle.name, tool.name, safe_service.backend_type)
            entries[name] = CatalogEntry(name, service, handle, tool)
            tools.append(tag_service(tool, service, name=name))
        return entries, tools

    def _withheld(self, full_name: str, tool: Tool) -> bool:
        """Whether the pins withhold ``tool`` (warned of once per definition)."""
        problem = self._pins.problem(full_name, tool) if self._pins is not None else None
        if problem is None:
            return False
        if problem not in self._warned:
            self._warned.add(problem)
            _logger.warning(
                "%s: it is withheld until pinned again (nativemcp tools --pin FILE)", problem
            )
        return True

    @property
    def version(self) -> int:
        """A number that changes whenever the index is rebuilt (a source's tools changed):
        what is derived from the catalog (the tool search's index) is rebuilt with it."""
        self._current()
        return self._version

    def check(self) -> None:
        """Build the index now, so that bad names are reported at start.

        Raises:
            ToolNameError: a server name breaks the rules, or two sources give the same
                full name (all named).
        """
        self._current()

    def tools(self) -> list[Tool]:
        """Every tool under its full name, its `ServiceInfo` in ``_meta``."""
        self._current()
        return list(self._tools)

    def entry(self, full_name: str) -> CatalogEntry:
        """The entry for ``full_name``.

        Raises:
            UnknownTool: no such tool (the message suggests the nearest names).
        """
        index = self._current()
        entry = index.get(full_name)
        if entry is None:
            raise UnknownTool(_unknown(full_name, index))
        return entry

    def entries(self) -> list[CatalogEntry]:
        """Every entry, in listing order."""
        return list(self._current().values())

    def tag(self, response: NativeMCPResponse[Any], entry: CatalogEntry) -> NativeMCPResponse[Any]:
        """``response`` with the entry's service in every content block's ``_meta``."""
        tagged: NativeMCPResponse[Any] = tag_service(response, entry.service)
        return tagged

    def resolve_ui_action(self, action: Mapping[str, Any], content: Any) -> UIAction:
        """Resolve a UI action (an MCP-UI ``onUIAction`` message) to a full tool name and arguments.

        ``{"type": "tool", "payload": {"toolName", "params"}}``: a full name listed in
        the catalog passes unchanged; a base name takes its server from the `ServiceInfo`
        on ``content`` (the block, result, or response that showed the action). Host
        actions (``intent``, ``prompt``, ``notify``, ``link``) resolve to no tool.

        Raises:
            ValueError: the action is malformed, or a base name comes with content that
                carries no service (the message says what to pass).
            UnknownTool: the resolved name is not in the catalog.
        """
        if not isinstance(action, Mapping):
            raise ValueError(f"a UI action is an object, got {type(action).__name__}")
        kind = action.get("type")
        payload = action.get("payload") or {}
        if not isinstance(payload, Mapping):
            raise ValueError("a UI action's 'payload' must be an object")
        if kind in HOST_ACTIONS:
            return UIAction(type=str(kind), tool_name=None, arguments={}, action=dict(action))
        if kind != "tool":
            raise ValueError(
                f"unknown UI action type {kind!r}; expected 'tool' or one of "
                f"{', '.join(sorted(HOST_ACTIONS))}"
            )
        name = payload.get("toolName")
        params = payload.get("params") or {}
        if not isinstance(name, str) or not name:
            raise ValueError("a tool UI action needs payload.toolName")
        if not isinstance(params, Mapping):
            raise ValueError("a tool UI action's payload.params must be an object")
        index = self._current()
        if name not in index:
            service = _service_of(content)
            if service is None:
                raise ValueError(
                    f"UI action names the base tool {quoted_name(name)}, but the content "
                    "given carries no service _meta; pass the content block (or result) from "
                    "pool.call_tool"
                )
            try:
                server = safe_server_name(service.server_name, service.backend_type)
                name = full_tool_name(server, name, service.backend_type)
            except ToolNameError as exc:
                raise ValueError(f"UI action tool name {quoted_name(name)}: {exc}") from exc
            self.entry(name)  # raises UnknownTool with suggestions
        return UIAction(type="tool", tool_name=name, arguments=dict(params), action=dict(action))


def _service_of(content: Any) -> ServiceInfo | None:
    if isinstance(content, NativeMCPResponse):
        content = content.result.content if content.result is not None else []
    elif hasattr(content, "content") and isinstance(content.content, list):
        content = content.content
    if isinstance(content, list):
        for block in content:
            found = _service_of(block)
            if found is not None:
                return found
        return None
    return service_info(content)


def _unknown(name: str, index: Mapping[str, CatalogEntry]) -> str:
    near: list[str] = []
    if is_valid_tool_name(name):  # no name is near a megabyte of junk: skip the search
        near = difflib.get_close_matches(name, list(index), n=3, cutoff=0.5)
        if not near:
            base = name.rpartition("__")[2]
            near = [full for full in index if full.rpartition("__")[2] == base][:3]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    listing = "" if near else f"; tools: {', '.join(list(index)[:20]) or '(none)'}"
    return f"no tool named {quoted_name(name)} in the catalog{hint}{listing}"
