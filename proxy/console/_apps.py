"""The console as an MCP Apps host: a tool's app page, its sandbox, and what it may ask.

A call of a tool that names an app (``_meta.ui.resourceUri``) shows the app beside the
result. The page reads the app's HTML from the tool's own server when it asks for the
frame, and serves it as every UI document is served (`FrameCapabilities`: a one-time URL
outside the token) under a content security policy made from the page's ``_meta.ui.csp``:
``sandbox allow-scripts`` (an opaque origin: a second origin, never the console's), no
origin beyond those the page declared (each checked to be a plain ``http(s)://host[:port]``
origin, so no value can add a directive), nothing at all by default.

The bridge (``postMessage`` JSON-RPC) runs in the console's page; what the app asks of
the server comes here (`AppRequests`): ``tools/call`` of its own server's tools whose
visibility includes ``app``, and ``resources/read`` of its own server's resources.
Anything else, another server's tool above all, is refused with a message the app gets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from nativemcp.protocol import (
    APP_MIME_TYPE,
    FeatureError,
    ServerError,
    Tool,
    tool_ui,
    ui_visibility,
)

if TYPE_CHECKING:
    from ._catalog import ConsoleCatalog

__all__ = ["APP_BLOCK", "AppRequestError", "AppRequests", "app_csp", "app_view"]

APP_BLOCK: Final = -1
"""The block number a call's app frame has among its frame capabilities."""

_ORIGIN: Final = re.compile(r"https?://(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?")
_BASE: Final = (
    "sandbox allow-scripts; default-src 'none'; form-action 'none'; "
    "base-uri 'none'; object-src 'none'"
)


class AppRequestError(Exception):
    """An app asked for something it may not have; the message says what and why."""

    def __init__(self, message: str, code: int = -32602) -> None:
        super().__init__(message)
        self.code = code


def _origins(value: Any) -> str:
    """The declared origins that are plain origins, space-separated (others dropped)."""
    if not isinstance(value, list):
        return ""
    return " ".join(item for item in value if isinstance(item, str) and _ORIGIN.fullmatch(item))


def app_csp(meta: Mapping[str, Any] | None) -> str:
    """The content security policy of an app page with ``_meta`` ``meta``."""
    ui = (meta or {}).get("ui")
    csp = ui.get("csp") if isinstance(ui, Mapping) else None
    csp = csp if isinstance(csp, Mapping) else {}
    connect = _origins(csp.get("connectDomains")) or "'none'"
    loads = _origins(csp.get("resourceDomains"))
    frames = _origins(csp.get("frameDomains")) or "'none'"
    return (
        f"{_BASE}; script-src 'unsafe-inline' {loads}; style-src 'unsafe-inline' {loads}; "
        f"img-src data: {loads}; font-src data: {loads}; media-src data: {loads}; "
        f"connect-src {connect}; frame-src {frames}"
    ).replace("  ", " ")


def app_view(
    call_id: int, tool: Tool, own_name: str, arguments: Any, result: Any
) -> dict[str, Any] | None:
    """What the page needs to show a call's app (None: the tool has none): where to ask
    for the frame and send the app's requests, the tool as its server names it (the
    app's host context gives it), the call's arguments and its result as MCP JSON."""
    uri = tool_ui(tool.meta)
    if uri is None:
        return None
    return {
        "uri": uri,
        "frame": f"api/calls/{call_id}/app-frame",
        "requests": f"api/calls/{call_id}/app-requests",
        "tool": {**msgspec.to_builtins(tool), "name": own_name},
        "arguments": arguments,
        "result": msgspec.to_builtins(result),
    }


class AppRequests:
    """What the apps shown in the console may ask of their servers."""

    def __init__(self, catalog: ConsoleCatalog) -> None:
        self._catalog = catalog

    def _full_of(self, server: str, name: str) -> str | None:
        """``name`` itself when it is the full name of a tool of ``server``."""
        try:
            return name if self._catalog.service(name).server_name == server else None
        except KeyError:
            return None

    async def page(self, shown_by: str) -> tuple[str, str]:
        """The HTML of the app of tool ``shown_by`` (a full name), and its policy.

        Raises:
            AppRequestError: the tool names no app, or its server has no such page as
                an MCP App.
        """
        tool = self._catalog.tool(shown_by)
        uri = tool_ui(tool.meta)
        if uri is None:
            raise AppRequestError(f"tool {shown_by!r} names no app")
        server = self._catalog.service(shown_by).server_name
        try:
            contents = await self._catalog.read_resource(server, uri)
        except (FeatureError, ServerError) as exc:
            raise AppRequestError(f"could not read {uri} from {server!r}: {exc}") from exc
        for item in contents:
            if item.text is not None and (item.mime_type or "").startswith(APP_MIME_TYPE):
                return item.text, app_csp(item.meta)
        raise AppRequestError(f"{uri} of {server!r} is not an MCP App page ({APP_MIME_TYPE})")

    async def request(self, shown_by: str, method: str, params: Any) -> Any:
        """The answer to ``method`` from the app of tool ``shown_by``, as MCP JSON.

        Raises:
            AppRequestError: not a method apps may use here, another server's tool or
                one only the model may call, a resource the server lacks.
        """
        server = self._catalog.service(shown_by).server_name
        params = params if isinstance(params, Mapping) else {}
        if method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, Mapping):
                raise AppRequestError("tools/call takes {name: string, arguments?: object}")
            full = self._catalog.full_name(server, name) or self._full_of(server, name)
            if full is None:
                raise AppRequestError(
                    f"the app of server {server!r} may call its own server's tools only: "
                    f"{server!r} has no tool {name!r}"
                )
            if "app" not in ui_visibility(self._catalog.tool(full).meta):
                raise AppRequestError(f"tool {name!r} of {server!r} is for the model only")
            response = await self._catalog.call_tool(full, dict(arguments))
            if response.error is not None:
                raise AppRequestError(response.error.message, response.error.code)
            return msgspec.to_builtins(response.result)
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise AppRequestError("resources/read takes {uri: string}")
            try:
                contents = await self._catalog.read_resource(server, uri)
            except (FeatureError, ServerError) as exc:
                raise AppRequestError(str(exc)) from exc
            return {"contents": msgspec.to_builtins(contents)}
        raise AppRequestError(f"the console does not answer {method!r} for apps", -32601)
