"""The console's endpoints for what a call rendered: its blobs, the one-time frames of
its UIResources and of its MCP App, what the app asks its host, and the actions a UI
posts (the routes are listed in `_app`'s docstring, and why frames are served from a
capability URL, outside the token).
"""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from nativemcp.protocol import UnknownTool

from ._apps import APP_BLOCK, NOTE_METHODS, AppRequestError, AppRequests, app_note, keep_note
from ._call_routes import requested_call
from ._catalog import ConsoleCatalog, UIActionTarget
from ._frames import FrameCapabilities
from ._requests import PRIVATE, json_body
from ._sandbox import SandboxGrant, origins_of
from ._session import ConsoleSession

__all__ = ["UIRoutes"]

_UI_CSP: Final = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; "
    "base-uri 'none'"
)
"""A UIResource runs its inline script in an opaque origin, and may fetch nothing."""


class UIRoutes:
    """What the session's calls rendered, one endpoint a method (`create_console_app`
    routes them; `ui_document` and `redeem_app_frame` serve the frames)."""

    def __init__(
        self,
        console: ConsoleSession,
        capabilities: FrameCapabilities,
        sandbox_port: int | None,
    ) -> None:
        self.console = console
        self.catalog: ConsoleCatalog = console.catalog
        self.capabilities = capabilities
        self.apps = AppRequests(console.catalog)
        self.sandbox_port = sandbox_port

    def origins(self, request: Request) -> tuple[str, str] | None:
        """The page's origin and its sandbox's (``_sandbox.py``), or None."""
        return origins_of(request.headers.get("host", ""), self.sandbox_port)

    def _stored(self, request: Request, kind: str) -> Any:
        """A call's stored blob or UI document by block index, or a 404 response."""
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        found = (call.blobs if kind == "blob" else call.documents).get(request.path_params["block"])
        if found is None:
            return JSONResponse({"error": f"no such {kind} in this call"}, 404)
        return found

    async def blob(self, request: Request) -> Response:
        found = self._stored(request, "blob")
        if isinstance(found, Response):
            return found
        data, filename = found
        # Always an attachment, never rendered: a blob's type comes from the tool.
        disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
        return Response(
            data, media_type="application/octet-stream", headers={**disposition, **PRIVATE}
        )

    async def grant_frame(self, request: Request) -> Response:
        body = await json_body(request)  # the page's own origin only: never a frame's
        if isinstance(body, Response):
            return body
        document = self._stored(request, "UI resource")
        if isinstance(document, Response):
            return document
        capability = self.capabilities.grant(
            request.path_params["call"], request.path_params["block"]
        )
        return JSONResponse({"src": f"/ui/{capability}"}, headers=PRIVATE)

    async def grant_app_frame(self, request: Request) -> Response:
        body = await json_body(request)  # the page's own origin only: never a frame's
        if isinstance(body, Response):
            return body
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        found = self.origins(request)
        if found is None:
            return JSONResponse({"error": "no sandbox origin for apps on this Host"}, 404)
        try:
            page = await self.apps.page(call.tool)
        except AppRequestError as exc:
            return JSONResponse({"error": str(exc)}, 404, headers=PRIVATE)
        # The page's own origin, as its Host says (checked local or allowed, and plain).
        call.app_grant = SandboxGrant(page.policy, found[0])
        capability = self.capabilities.grant(call.id, APP_BLOCK)
        src = f"{found[1]}/sandbox/{capability}"
        return JSONResponse({"src": src, **page.frame()}, headers=PRIVATE)

    async def app_request(self, request: Request) -> Response:
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        body = await json_body(request)  # the page relays its app frame's requests
        if isinstance(body, Response):
            return body
        method = body.get("method")
        if not isinstance(method, str):
            return JSONResponse({"error": "send {method: string, params?: object}"}, 400)
        try:
            if method in NOTE_METHODS:  # told, not asked: kept with the call, shown
                keep_note(call.host_actions, app_note(method, body.get("params")))
                return JSONResponse({"result": {}}, headers=PRIVATE)
            result = await self.apps.request(call.tool, method, body.get("params"))
        except AppRequestError as exc:
            return JSONResponse({"error": {"code": exc.code, "message": str(exc)}})
        return JSONResponse({"result": result}, headers=PRIVATE)

    def redeem_app_frame(self, capability: str) -> SandboxGrant | None:
        """The grant of the app frame ``capability`` names, once (then it is spent)."""
        named = self.capabilities.redeem(capability)
        call = self.console.calls.get(named[0]) if named and named[1] == APP_BLOCK else None
        return call.app_grant if call else None

    async def ui_document(self, request: Request) -> Response:
        """A UIResource's HTML, once, at the capability URL its frame was granted."""
        named = self.capabilities.redeem(request.path_params["capability"])
        call = self.console.calls.get(named[0]) if named else None
        document = call.documents.get(named[1]) if call and named else None
        if document is None:
            return PlainTextResponse("404: this frame's link was used or has expired", 404)
        return HTMLResponse(document, headers={"Content-Security-Policy": _UI_CSP, **PRIVATE})

    async def ui_action(self, request: Request) -> Response:
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        body = await json_body(request)
        if isinstance(body, Response):
            return body
        action = body.get("action")
        if not isinstance(action, dict):
            return JSONResponse({"error": "send {block: number, action: object}"}, 400)
        try:
            target: UIActionTarget = self.catalog.resolve_ui_action(action, call.content)
            if target.tool_name is not None:
                _same_server(self.catalog, call.tool, target.tool_name)
        except (ValueError, UnknownTool) as exc:
            call.host_actions.append({"type": "error", "payload": {"message": str(exc)}})
            return JSONResponse({"error": str(exc)}, 400)
        if target.tool_name is None:
            shown = {"type": target.type, "payload": target.arguments}
            call.host_actions.append(shown)
            return JSONResponse({"kind": "host", **shown})
        started = self.console.start(target.tool_name, target.arguments, f"ui:{call.id}")
        return JSONResponse({"kind": "tool", "call": started.summary()}, 202)


def _same_server(catalog: ConsoleCatalog, shown_by: str, wanted: str) -> None:
    """Refuse a UI's call to another server's tool.

    A UIResource is the rendering server's code: it may ask for that server's tools
    (as the user could by clicking), not reach across the catalog to, say, a shell.

    Raises:
        ValueError: ``wanted`` belongs to another server than ``shown_by``.
    """
    own = catalog.service(shown_by).server_name
    other = catalog.service(wanted).server_name
    if own != other:
        raise ValueError(
            f"the UI of server {own!r} asked for {wanted!r}, a tool of server {other!r}: "
            "a UI may call its own server's tools only"
        )
