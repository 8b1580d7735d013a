"""The sandbox proxy: the second origin the console renders MCP Apps from.

The ext-apps specification asks a web host to wrap every view in an intermediate
*sandbox proxy* of another origin than the host's (`allow-scripts allow-same-origin`),
which says ``ui/notifications/sandbox-proxy-ready``, is sent the view's raw HTML in
``ui/notifications/sandbox-resource-ready``, loads it under the page's content security
policy and relays every other message both ways. The console listens on a second
loopback port for this and nothing else (`SandboxSite`):

- ``GET /sandbox/<capability>``  the proxy's page, once: a one-time name the console's
  page asked for under the token (the UI frames' `FrameCapabilities`), so the page's URL
  is worth nothing to what runs in it
- ``GET /sandbox.js``            the proxy's script (``sandbox.js`` in this folder)

Every other path there answers 404, the console's own paths (token or not) included, and
nothing of the console answers on that port. The proxy page's response carries the app's
content security policy (`app_csp`) and ``frame-ancestors`` naming the console page's
origin only; the proxy renders the view in an inner ``srcdoc`` frame, sandboxed
``allow-scripts`` (an opaque origin of its own: no view reaches another's frame or
storage, nor the proxy's), which inherits that policy. The proxy answers only messages
from the console's origin and relays the view's to it alone.
"""

from __future__ import annotations

import html
import importlib.resources
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..http_edge import PLAIN_HOST

__all__ = [
    "SANDBOX_ASSET",
    "ByListener",
    "SandboxGrant",
    "SandboxSite",
    "origins_of",
    "proxy_policy",
]

SANDBOX_ASSET: Final = "sandbox.js"
"""The proxy's script, beside the console's page in the package."""
_PRIVATE: Final = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
_PAGE: Final = (
    '<!DOCTYPE html><html><head><meta charset="utf-8">'
    '<meta name="referrer" content="no-referrer"><title>MCP App sandbox</title></head>'
    '<body><script src="/{asset}" data-host="{host}"></script></body></html>'
)


@dataclass(frozen=True)
class SandboxGrant:
    """What one proxy page is served with: its view's policy and its host's origin."""

    policy: str
    """The view's content security policy (`app_csp`)."""
    host_origin: str
    """The console page's origin (``http://127.0.0.1:8765``): the only one that may frame
    the proxy, and the only one it talks to."""


def origins_of(host: str, sandbox_port: int | None) -> tuple[str, str] | None:
    """The console page's origin and its sandbox's (the sandbox port under the name the
    page was reached by), from the page's ``Host``; None without a sandbox port, or for a
    Host that is no plain ``host[:port]`` (the rebinding guard's ``host:*`` lets any text
    follow the colon, and these origins go into policies and a page)."""
    match = PLAIN_HOST.fullmatch(host)
    if match is None or sandbox_port is None:
        return None
    return f"http://{host}", f"http://{match[1]}:{sandbox_port}"


def proxy_policy(grant: SandboxGrant) -> str:
    """The proxy page's content security policy: its view's, framed by the host only,
    and sandboxed as the specification asks (scripts, its own origin; no forms, popups or
    navigation of the host)."""
    return (
        f"{grant.policy}; frame-ancestors {grant.host_origin}; "
        "sandbox allow-scripts allow-same-origin"
    )


class SandboxSite:
    """ASGI app of the sandbox port: the proxy's pages and its script, nothing else."""

    def __init__(self, redeem: Callable[[str], SandboxGrant | None]) -> None:
        """``redeem`` spends a capability: the grant it named, or None if unknown,
        spent or expired."""
        self._redeem = redeem
        script = importlib.resources.files(__package__) / SANDBOX_ASSET
        self._script = script.read_bytes()
        self._app = Starlette(
            routes=[
                Route(f"/{SANDBOX_ASSET}", self._asset),
                Route("/sandbox/{capability}", self._page),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _asset(self, request: Request) -> Response:
        return Response(self._script, media_type="text/javascript; charset=utf-8", headers=_PRIVATE)

    async def _page(self, request: Request) -> Response:
        grant = self._redeem(request.path_params["capability"])
        if grant is None:
            return PlainTextResponse("404: this app frame's link was used or has expired", 404)
        page = _PAGE.format(asset=SANDBOX_ASSET, host=html.escape(grant.host_origin, quote=True))
        headers = {"Content-Security-Policy": proxy_policy(grant), **_PRIVATE}
        return HTMLResponse(page, headers=headers)


class ByListener:
    """ASGI middleware: requests that reached the sandbox port go to the sandbox site,
    all others to the console (the port is the listening socket's, not the Host's)."""

    def __init__(self, console: ASGIApp, sandbox: ASGIApp, sandbox_port: int | None) -> None:
        self._console = console
        self._sandbox = sandbox
        self._port = sandbox_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        on_sandbox = self._port is not None and server is not None and server[1] == self._port
        await (self._sandbox if on_sandbox else self._console)(scope, receive, send)
