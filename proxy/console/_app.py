"""The browser console's web app: the catalog, tool calls side by side, and live UIResources.

A Starlette app, served on 127.0.0.1 by ``nativemcp console``. Everything lives under
``/<token>/``; any other path answers 401 (but ``/ui/<capability>``, below), so only
whoever holds the printed URL can list or call tools. Every request must name a local
Host (else 421) and, when it has an Origin, a local one (else 403): a DNS-rebinding page
that learned the token still cannot use it. The page is static (``proxy/console/``,
shipped in the package; no CDN, no build step) and talks JSON:

- ``GET  api/tools``                      the servers and their tools (full names), and
  why a server needs authorization (its "Authorize" button: ``_authorize.py``)
- ``POST api/calls``                      ``{"tool", "arguments"}`` → the started call
- ``GET  api/calls``                      the session's history, and the event cursor
- ``GET  api/events?since=<n>``           the session's server-sent events: ``started``,
  ``progress`` and ``result`` of every call (the page's one stream)
- ``GET  api/calls/<id>``                 one call: its result, or its summary if running
- ``GET  api/calls/<id>/events``          one call's events: ``progress``, then ``result``
- ``GET  api/calls/<id>/blobs/<n>``       a blob resource's bytes, as a download
- ``POST api/calls/<id>/frames/<n>``      ``{}`` → ``{"src": "/ui/<capability>"}``: where a
  sandboxed iframe loads a UIResource's HTML from, once, within a few seconds
- ``POST api/calls/<id>/ui-actions``      ``{"block", "action"}`` → a started call (a tool
  of the server that rendered the UI), or a host action to show
- ``POST api/calls/<id>/app-frame``       ``{}`` → ``{"src", "html", "csp", "permissions",
  "allow"}``: the call's MCP App, its page for the sandbox proxy on the second origin
  (``_sandbox.py``) at ``src``, its content security policy and permissions (``_apps.py``)
- ``POST api/calls/<id>/app-requests``    ``{"method", "params"}`` → ``{"result"}`` or
  ``{"error"}``: what the app asked its host for (its own server's tools and resources),
  or told it (``ui/message``, ``ui/update-model-context``: kept with the call)
- ``GET  api/calls/<id>/spans``           ``{"recording", "spans"}``: the call's waterfall
  (``_spans.py``; ``waterfall.js`` draws it)
- ``POST api/code``                       ``{"code"}`` → the Code tab's run: its output,
  last value, error, inner calls and trace (``_code_routes.py``; ``code.js`` shows it)
- ``GET  api/code/stubs?names=a,b``       ``{"stubs"}``: the tools as a program calls them

UIResources are served outside the token, from a one-time capability URL: a UI's script
reads its own ``location``, and whatever a script can read it can send away (a WebRTC
TURN username reaches any UDP port; no content security policy covers it). So the token
is in nothing a frame can read: not its URL (a capability that grants that one document,
once, and is spent by the time the script runs), not its document (the tool's HTML as
the tool sent it), not its referrer (``no-referrer`` on the page and on the frame), not a
cookie (none is used). The capability, not a cookie scoped to the API path, because
cookies are not bound to a port: one set for 127.0.0.1 reaches every other local server
the browser visits. UIResources are served with a ``sandbox allow-scripts`` content
security policy (and the iframe has ``sandbox="allow-scripts"``): their origin is opaque,
never the console's, and they may not fetch anything. JSON endpoints that change state
refuse requests from another origin (a UI frame's origin is ``null``) and bodies that
are not ``application/json``, so a rendered UI cannot call tools behind the user's back:
it can only post a message, which the page sends here to be resolved.
"""

from __future__ import annotations

import hmac
import importlib.resources
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import anyio.abc
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..http_edge import RebindingGuard, local_only
from ._authorize import authorization_routes
from ._call_routes import CallRoutes
from ._catalog import ConsoleCatalog
from ._code_routes import CodeRoutes
from ._frames import FrameCapabilities
from ._requests import json_body
from ._sandbox import ByListener, SandboxSite
from ._session import ConsoleSession
from ._spans import ConsoleSpans
from ._ui_routes import UIRoutes

__all__ = ["ASSETS_PACKAGE", "FRAME_TTL", "create_console_app"]

ASSETS_PACKAGE: Final = "nativemcp.proxy.console"
"""The page's files: ``proxy/console/`` in the package."""
_ASSET_TYPES: Final = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "apps.js": "text/javascript; charset=utf-8",
    "waterfall.js": "text/javascript; charset=utf-8",
    "waterfall.css": "text/css; charset=utf-8",
    "authorize.js": "text/javascript; charset=utf-8",
    "code.js": "text/javascript; charset=utf-8",
}
_PAGE_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; media-src 'self' data:; frame-src 'self'; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
"""The page runs only its own script: a string a tool returns can never become code."""
FRAME_TTL: Final = 30.0
"""Seconds a UI frame's capability URL stays valid (it is spent by its first load)."""


def _asset(name: str) -> bytes:
    return (importlib.resources.files(ASSETS_PACKAGE) / name).read_bytes()


class _TokenGate:
    """ASGI middleware: paths under ``/<token>/`` reach the app, ``/ui/<capability>`` the
    UI frames (their capability is their credential); the rest get 401."""

    def __init__(self, app: ASGIApp, token: str, frames: ASGIApp) -> None:
        self._app = app
        self._token = token
        self._frames = frames

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        first, slash, rest = path.lstrip("/").partition("/")
        if first == "ui" and slash:
            await self._frames({**scope, "path": "/" + rest, "root_path": ""}, receive, send)
            return
        # Compared in constant time: the token is the only credential.
        if not hmac.compare_digest(first.encode(), self._token.encode()):
            response: Response = PlainTextResponse(
                "401 Unauthorized: open the URL `nativemcp console` printed (it has the token)",
                status_code=401,
            )
        elif not slash:
            response = RedirectResponse(f"/{self._token}/", status_code=307)
        else:
            await self._app({**scope, "path": "/" + rest, "root_path": ""}, receive, send)
            return
        await response(scope, receive, send)


def create_console_app(
    catalog: ConsoleCatalog,
    token: str,
    task_group: anyio.abc.TaskGroup,
    *,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    sandbox_port: int | None = None,
    spans: ConsoleSpans | None = None,
) -> ASGIApp:
    """The console as an ASGI app: everything under ``/<token>/``, the rest 401.

    Calls run in ``task_group`` (which must outlive the app's requests), so a call keeps
    running, and is remembered, when the page that started it reloads. Requests whose
    Host is not a local name or in ``allowed_hosts`` (``host:port``, ``host:*``) get 421;
    those with an Origin that is not local or in ``allowed_origins``, 403. Requests that
    reach ``sandbox_port`` (a second listening socket serving the same app) see the
    sandbox proxy of MCP Apps only (``_sandbox.py``); without one, no app is shown.
    ``spans`` (`ConsoleSpans.install`, before the pool starts): each call's spans, for
    its waterfall.

    Raises:
        ValueError: the token is empty or not URL-safe.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]{16,}", token):
        raise ValueError("the console token must be 16 or more URL-safe characters")
    console = ConsoleSession(catalog, task_group, spans)
    calls = CallRoutes(console, catalog, spans)
    ui = UIRoutes(console, FrameCapabilities(FRAME_TTL), sandbox_port)
    code = CodeRoutes(catalog, spans)

    def page_asset(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            found = ui.origins(request)
            frames = "frame-src 'self'" + (f" {found[1]}" if found else "")
            policy = _PAGE_CSP.replace("frame-src 'self'", frames)
            headers = {"Content-Security-Policy": policy, "Cache-Control": "no-store"}
            return Response(_asset(name), media_type=_ASSET_TYPES[name], headers=headers)

        return endpoint

    routes = [
        *(
            Route("/" if name == "index.html" else f"/{name}", page_asset(name))
            for name in _ASSET_TYPES
        ),
        *authorization_routes(catalog, task_group, json_body),
        Route("/api/tools", calls.tools),
        Route("/api/calls", calls.start_call, methods=["POST"]),
        Route("/api/calls", calls.history, methods=["GET"]),
        Route("/api/events", calls.session_events),
        Route("/api/calls/{call:int}", calls.one_call),
        Route("/api/calls/{call:int}/events", calls.events),
        Route("/api/calls/{call:int}/spans", calls.call_spans),
        Route("/api/calls/{call:int}/blobs/{block:int}", ui.blob),
        Route("/api/calls/{call:int}/ui-actions", ui.ui_action, methods=["POST"]),
        Route("/api/calls/{call:int}/frames/{block:int}", ui.grant_frame, methods=["POST"]),
        Route("/api/calls/{call:int}/app-frame", ui.grant_app_frame, methods=["POST"]),
        Route("/api/calls/{call:int}/app-requests", ui.app_request, methods=["POST"]),
        Route("/api/code", code.run, methods=["POST"]),
        Route("/api/code/stubs", code.stubs),
    ]
    frames = Starlette(routes=[Route("/{capability}", ui.ui_document)])
    gate = _TokenGate(Starlette(routes=routes), token, frames)
    sites = ByListener(gate, SandboxSite(ui.redeem_app_frame), sandbox_port)
    return RebindingGuard(sites, local_only(allowed_hosts, allowed_origins))
