"""The console as an MCP Apps host: a tool's app page, its policy, and what it may ask.

A call of a tool that names an app (``_meta.ui.resourceUri``) shows the app beside the
result. The page reads the app's HTML from the tool's own server when it asks for the
frame (`AppPage`); the sandbox proxy (``_sandbox.py``, the console's second origin) runs
it under a content security policy made from the page's ``_meta.ui.csp`` (`app_csp`): no
origin beyond those the page declared (each checked to be a plain ``http(s)://host[:port]``
origin, so no value can add a directive), the specification's restrictive default
otherwise. The page's ``permissions`` become the frames' ``allow`` attribute
(`app_allow`); its ``domain`` is host-dependent by the specification, and the console
has one sandbox origin, so it is not used (every view is an opaque origin of its own).

The bridge (``postMessage`` JSON-RPC) runs in the console's page; what the app asks of
the server comes here (`AppRequests`): ``tools/call`` of its own server's tools whose
visibility includes ``app``, and ``resources/read`` of its own server's resources.
Anything else, another server's tool above all, is refused with a message the app gets.
What the app tells its host (``ui/message``, ``ui/update-model-context``) is checked here
(`app_note`) and kept with the call, so the console shows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
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

__all__ = [
    "APP_BLOCK",
    "AppPage",
    "AppRequestError",
    "AppRequests",
    "app_allow",
    "app_csp",
    "app_note",
    "app_view",
    "keep_note",
]

APP_BLOCK: Final = -1
"""The block number a call's app frame has among its frame capabilities."""

_ORIGIN: Final = re.compile(r"https?://(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?")
_BASE: Final = "default-src 'none'; form-action 'none'; object-src 'none'"
_FEATURES: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
"""``_meta.ui.permissions`` entries and the permission policy features they name."""
NOTE_METHODS: Final = ("ui/message", "ui/update-model-context")
"""What an app tells its host (answered by the console, kept with the call)."""


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


def _ui(meta: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    """``meta["ui"][key]`` when both are objects, else an empty mapping."""
    ui = (meta or {}).get("ui")
    found = ui.get(key) if isinstance(ui, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def app_csp(meta: Mapping[str, Any] | None) -> str:
    """The content security policy of an app page with ``_meta`` ``meta``: the
    specification's restrictive default (``'self'`` is the sandbox origin, which serves
    nothing but its proxy), widened by the plain origins the page declared only."""
    csp = _ui(meta, "csp")
    connect = _origins(csp.get("connectDomains")) or "'none'"
    loads = _origins(csp.get("resourceDomains"))
    frames = _origins(csp.get("frameDomains")) or "'none'"
    base = _origins(csp.get("baseUriDomains")) or "'none'"
    return (
        (
            f"{_BASE}; script-src 'self' 'unsafe-inline' {loads}; "
            f"style-src 'self' 'unsafe-inline' {loads}; img-src 'self' data: {loads}; "
            f"font-src data: {loads}; media-src 'self' data: {loads}; "
            f"connect-src {connect}; frame-src {frames}; base-uri {base}"
        )
        .replace("  ", " ")
        .replace(" ;", ";")
    )


def app_allow(meta: Mapping[str, Any] | None) -> list[str]:
    """The permission policy features an app page with ``_meta`` ``meta`` asked for
    (``camera``, ``clipboard-write``...), in the specification's order; others dropped."""
    asked = _ui(meta, "permissions")
    return [feature for key, feature in _FEATURES.items() if key in asked]


@dataclass(frozen=True)
class AppPage:
    """An app's page as its server serves it, and what the console makes of it."""

    html: str
    meta: Mapping[str, Any] | None
    policy: str
    """Its content security policy (`app_csp`)."""

    def frame(self) -> dict[str, Any]:
        """What the console's page sends the sandbox proxy (its
        ``sandbox-resource-ready`` parameters) and the frame's ``allow`` features."""
        return {
            "html": self.html,
            "csp": dict(_ui(self.meta, "csp")),
            "permissions": {key: {} for key in _ui(self.meta, "permissions") if key in _FEATURES},
            "allow": app_allow(self.meta),
        }


def _content_blocks(content: Any, method: str) -> list[dict[str, Any]]:
    """``content`` as a list of content blocks (each an object with a string ``type``).

    Raises:
        AppRequestError: it is not one.
    """
    blocks = content if isinstance(content, list) else [content]
    if not all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in blocks):
        raise AppRequestError(f"{method} takes content: a list of content blocks")
    return [dict(block) for block in blocks]


def app_note(method: str, params: Any) -> dict[str, Any]:
    """What the console keeps of an app's ``ui/message`` or ``ui/update-model-context``
    (a host action of type ``message`` or ``model-context``, shown with the call).

    Raises:
        AppRequestError: not one of those methods, a role other than ``user``, content
            that is not content blocks, structured content that is not an object.
    """
    params = params if isinstance(params, Mapping) else {}
    if method == "ui/message":
        if params.get("role") != "user":
            raise AppRequestError("ui/message takes role: 'user' (the only role apps send)")
        content = _content_blocks(params.get("content"), method)
        return {"type": "message", "payload": {"role": "user", "content": content}}
    if method == "ui/update-model-context":
        payload: dict[str, Any] = {}
        if params.get("content") is not None:
            payload["content"] = _content_blocks(params["content"], method)
        structured = params.get("structuredContent")
        if structured is not None:
            if not isinstance(structured, Mapping):
                raise AppRequestError(f"{method} takes structuredContent: an object")
            payload["structuredContent"] = dict(structured)
        return {"type": "model-context", "payload": payload}
    raise AppRequestError(f"the console keeps no note of {method!r}", -32601)


def keep_note(actions: list[dict[str, Any]], note: dict[str, Any]) -> None:
    """Add ``note`` to a call's host ``actions``; a model context replaces the one
    before it (each update overwrites the last, the specification says)."""
    if note["type"] == "model-context":
        actions[:] = [action for action in actions if action["type"] != "model-context"]
    actions.append(note)


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

    async def page(self, shown_by: str) -> AppPage:
        """The page of the app of tool ``shown_by`` (a full name), and its policy.

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
                return AppPage(item.text, item.meta, app_csp(item.meta))
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
