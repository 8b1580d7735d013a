"""Which of the pool's tools a bridge serves, under which names, and how they are listed.

The served tools are the pool's catalog entries of the served servers that the tool
profile allows: under their full names when several servers are served, under the
tools' own names when one is (and not under search). A listing shows each as a spec
``Tool``, to a caller only what its scopes cover; a call finds its tool here first.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import INVALID_PARAMS, Tool, service_info
from nativemcp.protocol.wire import Caller

from .._handle import ServerHandle
from ..external import accepts_task
from ..tool_search import CALL_TOOL, META_TOOLS, SEARCH_TOOLS, ToolProfile
from ._apps import ServedApps
from ._code_mode import CODE_MODE_TOOLS, CodeMode
from ._search_mode import SearchMode
from .auth import ScopeMap

if TYPE_CHECKING:
    from .._pool import WorkerPool
    from ._served_results import ServedResults

__all__ = ["ServedTools"]


class ServedTools:
    """One bridge's served catalog: the tools of ``handles`` in ``pool``'s catalog that
    ``profile`` allows, as a caller sees, lists and calls them.

    Args:
        pool: the running pool (its catalog, in its order).
        handles: the served servers' handles, by server name.
        profile: which tools are offered, and whether through the meta-tools.
        scopes: the scope each tool needs (a caller sees only what its scopes cover).
        apps: the served MCP Apps (how a tool is shown, and who may call it).
        results: the kept results (``read_result`` is listed and found with a budget).
        own_names: serve the tools under their own names (one server, no meta-tools),
            else under their full catalog names.
    """

    def __init__(
        self,
        pool: WorkerPool,
        handles: Mapping[str, ServerHandle],
        profile: ToolProfile,
        scopes: ScopeMap,
        apps: ServedApps,
        results: ServedResults,
        *,
        own_names: bool,
    ) -> None:
        self._pool = pool
        self._handles = handles
        self._profile = profile
        self._scopes = scopes
        self._apps = apps
        self._results = results
        self._own_names = own_names
        self._served: tuple[list[Tool], dict[str, Tool]] = ([], {})
        # The served sources' tool lists when `_served` was last checked against them.
        self._sources: list[list[Tool]] = []
        # The last listing per (tasks, apps): of which served dict, with which reader.
        self._listings: dict[
            tuple[bool, bool], tuple[dict[str, Tool], list[types.Tool], types.ListToolsResult]
        ] = {}

    async def catalog(self) -> dict[str, Tool]:
        """The served tools by the name a client sees, each as the catalog lists it
        (read from the pool now)."""
        tools = await self._pool.list_tools()
        self._sources = self._source_lists()
        # The catalog hands out the same Tool objects until a source's tools change.
        seen, served = self._served
        if len(tools) == len(seen) and all(a is b for a, b in zip(tools, seen, strict=True)):
            return served
        served = {}
        for tool in tools:
            service = service_info(tool)
            if (
                service is not None
                and service.server_name in self._handles
                and self._profile.allows(tool.name)
            ):
                served[service.tool_name if self._own_names else tool.name] = tool
        self._served = (tools, served)
        return served

    def _source_lists(self) -> list[list[Tool]]:
        # A source replaces its list when its tools change: identity is the test.
        return [handle.tools for handle in self._handles.values()]

    def tool_input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of served tool ``name``, or None.

        The SDK checks a ``tools/call``'s ``Mcp-Param-*`` headers against it before the
        call runs.

        Without it the SDK lists every tool through `list_tools` for each call with
        arguments: a sixth of a small call's CPU in ``serve --transport http`` with one
        tool served (measured), and more the more tools are served. It comes from the
        catalog as every listing and call reads it; None for a name not served, or where
        a source's tools changed since the last read (the SDK then skips the check for
        that call, as it does when a listing fails; the call reads the catalog anew).
        """
        if (self._profile.search and name in (SEARCH_TOOLS, CALL_TOOL)) or (
            self._profile.code_mode and name in CODE_MODE_TOOLS
        ):
            return None  # the meta-tools' arguments name no routing header
        tool = self._held(name)
        return None if tool is None else tool.input_schema

    def _held(self, name: str) -> Tool | None:
        """Served tool ``name`` as last read from the catalog, while no served source's
        tools changed since (None: not served then, or a source changed)."""
        return self._served[1].get(name) if self._current() else None

    def _current(self) -> bool:
        """Whether no served source's tools changed since the catalog was last read."""
        current = self._source_lists()
        return len(current) == len(self._sources) and all(
            a is b for a, b in zip(current, self._sources, strict=True)
        )

    def _tool(self, public: str, tool: Tool, tasks: bool, apps: bool) -> types.Tool | None:
        data: dict[str, Any] = {
            "name": public,
            "inputSchema": tool.input_schema,
            "description": tool.description or tool.title or public,
        }
        if tool.title is not None:
            data["title"] = tool.title
        if tool.output_schema is not None:
            data["outputSchema"] = tool.output_schema
        if tool.annotations is not None:
            data["annotations"] = _builtins(tool.annotations)
        if tool.meta is not None:  # the catalog's service tag is in it
            data["_meta"] = dict(tool.meta)
        if tasks and accepts_task(tool.execution):
            # "optional" even where the source says "required": the bridge runs the
            # call as a task toward the source either way, so a plain call works too.
            data["execution"] = {"taskSupport": "optional"}
        shown = self._apps.tool(data, tool, apps)  # None: not for this client
        return None if shown is None else types.Tool.model_validate(shown)

    async def tool_listing(
        self, tasks: bool, apps: bool, caller: Caller | None = None
    ) -> types.ListToolsResult:
        """Every served tool of the catalog, in its order (under search, the meta-tools).

        ``tasks``: the client may run tool calls as tasks (offered where a tool supports
        it); ``apps``: the client shows MCP Apps (UI metadata, tools only an app calls);
        ``caller``: the authenticated caller under OAuth, shown only what its scopes
        cover.
        """
        # With a result budget, read_result reads what a cut result left out.
        reader = self._results.listed()
        if self._profile.search:
            return types.ListToolsResult(
                tools=[*(SearchMode.listed(tool, tasks) for tool in META_TOOLS), *reader]
            )
        if self._profile.code_mode:
            return types.ListToolsResult(tools=[*CodeMode.listing(), *reader])
        served = self.visible(caller, await self.catalog())
        # The catalog hands out the same dict until a source's tools change: its listing
        # for the same flags is the same too, so it is built once (not for a caller's
        # share under OAuth, a dict of its own).
        kept = self._listings.get((tasks, apps))
        if kept is not None and kept[0] is served and kept[1] == reader:
            return kept[2]
        listed = [self._tool(name, tool, tasks, apps) for name, tool in served.items()]
        result = types.ListToolsResult(tools=[tool for tool in listed if tool is not None] + reader)
        if served is self._served[1]:
            self._listings[tasks, apps] = (served, reader, result)
        return result

    async def catalog_name(self, name: str) -> str | None:
        """The full catalog name of served tool ``name`` (None: not served here).

        For checks made before a call reaches the SDK (the scope map's 403): the catalog
        as last read while it is current, as `served_tool` reads it, so a gated request
        does not cost a listing (the pool freshens every external server then).
        A name not served while the catalog is current (a meta-tool's, a typo) is not
        looked up again: the bridge checks what reaches it anyway."""
        tool = (await self.last_read()).get(name)
        return None if tool is None else tool.name

    async def last_read(self) -> dict[str, Tool]:
        """The served tools as last read, while no served source's tools changed since;
        else read anew (`catalog`), so a check or a meta-tool does not cost a listing
        (the pool freshens every external server then)."""
        return self._served[1] if self._current() else await self.catalog()

    def visible(self, caller: Caller | None, served: dict[str, Tool]) -> dict[str, Tool]:
        """What ``caller`` may see: listed, and found by ``search_tools``."""
        if caller is None or not self._scopes:
            return served
        return {n: t for n, t in served.items() if not self._scopes.missing(t.name, caller.scopes)}

    def callable_by(self, served: dict[str, Tool], apps: bool) -> dict[str, Tool]:
        """What a client may call, ``apps`` if it shows MCP Apps: without, a tool only an
        app may call (``visibility: ["app"]``) is not there (found, named, suggested).

        The one rule of every path: a direct call, ``call_tool``, ``search_tools``, tasks."""
        if apps:
            return served
        return {n: t for n, t in served.items() if self._apps.callable(t, apps)}

    async def served_tool(self, name: str, apps: bool) -> Tool:
        """The catalog entry of served tool ``name``.

        ``apps``: the client shows MCP Apps (else a tool only an app calls is unknown).

        Raises:
            MCPError: INVALID_PARAMS for a name not served (with the nearest names).
        """
        reader = self._results.tool(name)
        if reader is not None:  # every path that calls a served tool finds it here
            return reader
        # The catalog as last read while it is current: reading it again (the pool
        # freshens every external server then) is for a name not found, as the pool's
        # own `call_tool` does, so a call does not cost a listing.
        tool = self._held(name)
        served = self._served[1]
        if tool is None:
            served = await self.catalog()
            tool = served.get(name)
        if tool is not None and not self._apps.callable(tool, apps):
            tool = None  # only its app may call it, and this client shows no apps
        if tool is None:
            near = difflib.get_close_matches(name, list(self.callable_by(served, apps)), n=3)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}{hint}")
        return tool


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)
