"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension): the names both ends use.

A tool names its UI in ``_meta.ui.resourceUri``; the ``ui://`` resource it names is an
HTML document served as ``text/html;profile=mcp-app`` with its sandbox wishes in the
contents' ``_meta.ui`` (``csp``, ``permissions``, ``domain``, ``prefersBorder``). The
constants are the official SDK's (``mcp.server.apps``), restated here because this
package imports no SDK (a test checks they stay equal).

A hub that serves several servers through one connection namespaces their ``ui://``
URIs (`namespaced_ui_uri`, `split_ui_uri`): two servers that both use
``ui://app.html`` reach the client as ``ui://alpha/app.html`` and ``ui://beta/app.html``,
and a read of either goes back to its own server under its own URI.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "UI_SCHEME",
    "AppCsp",
    "AppPermission",
    "AppVisibility",
    "app_resource_meta",
    "namespaced_ui_uri",
    "split_ui_uri",
    "tool_ui",
    "tool_ui_meta",
    "ui_visibility",
]

APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The MCP Apps extension's identifier, in ``capabilities.extensions`` of both sides."""
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of a ``ui://`` app resource (hosts render no other)."""
UI_SCHEME: Final = "ui://"
"""The scheme of every app resource's URI."""

AppVisibility = Literal["model", "app"]
"""Who may call a tool that has a UI: the model (the agent), the app (its own view)."""

AppPermission = Literal["camera", "microphone", "geolocation", "clipboardWrite"]
"""A browser permission an app's frame may ask the host for (``_meta.ui.permissions``)."""

_PERMISSIONS: Final = frozenset({"camera", "microphone", "geolocation", "clipboardWrite"})
_BOTH: Final[tuple[AppVisibility, ...]] = ("model", "app")


class AppCsp(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True, frozen=True):
    """The origins an app's page may reach (``_meta.ui.csp``).

    None by default, so a host's policy lets the page load only what it inlines."""

    connect_domains: tuple[str, ...] | None = None
    """Origins for fetch, XHR and WebSocket (``connect-src``)."""
    resource_domains: tuple[str, ...] | None = None
    """Origins for scripts, styles, images, fonts and media."""
    frame_domains: tuple[str, ...] | None = None
    """Origins the page may frame."""
    base_uri_domains: tuple[str, ...] | None = None
    """Origins allowed as the document's base URI."""


def tool_ui_meta(
    resource_uri: str, visibility: Sequence[AppVisibility] | None = None
) -> dict[str, Any]:
    """The ``ui`` entry of a tool's ``_meta`` naming its app.

    Raises:
        ValueError: ``resource_uri`` is not a ``ui://`` URI, or ``visibility`` is empty or
            names something other than ``"model"`` and ``"app"``.
    """
    if not resource_uri.startswith(UI_SCHEME) or len(resource_uri) == len(UI_SCHEME):
        raise ValueError(f"an app's resource URI must be a ui:// URI, got {resource_uri!r}")
    ui: dict[str, Any] = {"resourceUri": resource_uri}
    if visibility is not None:
        wrong = [item for item in visibility if item not in _BOTH]
        if wrong or not visibility:
            raise ValueError(
                f"visibility {list(visibility)!r}: give one or both of 'model' and 'app'"
            )
        ui["visibility"] = list(dict.fromkeys(visibility))
    return ui


def app_resource_meta(
    *,
    csp: AppCsp | None = None,
    permissions: Sequence[AppPermission] = (),
    domain: str | None = None,
    prefers_border: bool | None = None,
) -> dict[str, Any]:
    """The ``_meta`` of an app resource and of its contents.

    ``{"ui": {...}}`` with what the page asks of its host's sandbox (``{"ui": {}}`` when
    it asks nothing).

    Raises:
        ValueError: a permission the extension does not define.
    """
    unknown = [item for item in permissions if item not in _PERMISSIONS]
    if unknown:
        raise ValueError(
            f"unknown app permission(s) {unknown!r}; known: {', '.join(sorted(_PERMISSIONS))}"
        )
    ui: dict[str, Any] = {}
    if csp is not None:
        ui["csp"] = msgspec.json.decode(msgspec.json.encode(csp))  # lists, as JSON has
    if permissions:
        ui["permissions"] = {item: {} for item in permissions}
    if domain is not None:
        ui["domain"] = domain
    if prefers_border is not None:
        ui["prefersBorder"] = prefers_border
    return {"ui": ui}


def tool_ui(meta: Mapping[str, Any] | None) -> str | None:
    """The ``ui://`` URI a tool's ``_meta`` names as its app, or None."""
    ui = (meta or {}).get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    return uri if isinstance(uri, str) and uri.startswith(UI_SCHEME) else None


def ui_visibility(meta: Mapping[str, Any] | None) -> tuple[AppVisibility, ...]:
    """Who may call a tool, by its ``_meta.ui.visibility`` (both when it says nothing)."""
    ui = (meta or {}).get("ui")
    listed = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(listed, list):
        return _BOTH
    return tuple(item for item in _BOTH if item in listed)


def namespaced_ui_uri(server: str, uri: str) -> str:
    """``uri`` of ``server`` as a hub shows it.

    ``ui://app.html`` → ``ui://server/app.html``; any other scheme is left as it is."""
    if not uri.startswith(UI_SCHEME):
        return uri
    return f"{UI_SCHEME}{server}/{uri.removeprefix(UI_SCHEME)}"


def split_ui_uri(uri: str, servers: Collection[str]) -> tuple[str, str] | None:
    """The server and its own URI behind a `namespaced_ui_uri`, or None.

    None when ``uri`` is not a ``ui://`` URI of one of ``servers`` (matched exactly,
    never by prefix)."""
    if not uri.startswith(UI_SCHEME):
        return None
    server, slash, own = uri.removeprefix(UI_SCHEME).partition("/")
    if not slash or not own or server not in servers:
        return None
    return server, UI_SCHEME + own
