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

import contextlib
import hmac
import importlib.resources
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Final

import anyio
import anyio.abc
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from nativemcp.protocol import UnknownTool, service_meta

from ..http_edge import RebindingGuard, local_only
from ..llm._tokens import token_note
from ._apps import (
    APP_BLOCK,
    NOTE_METHODS,
    AppRequestError,
    AppRequests,
    app_note,
    keep_note,
)
from ._authorize import authorization_routes
from ._call_views import _Call, _result_view
from ._catalog import ConsoleCatalog, UIActionTarget
from ._frames import FrameCapabilities
from ._sandbox import ByListener, SandboxGrant, SandboxSite, origins_of
from ._spans import ConsoleSpans

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
}
_PAGE_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; media-src 'self' data:; frame-src 'self'; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
"""The page runs only its own script: a string a tool returns can never become code."""
_UI_CSP: Final = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; "
    "base-uri 'none'"
)
"""A UIResource runs its inline script in an opaque origin, and may fetch nothing."""
_PRIVATE: Final = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
"""Headers of every stored answer: taken as the type it is said to be, never cached."""
FRAME_TTL: Final = 30.0
"""Seconds a UI frame's capability URL stays valid (it is spent by its first load)."""
FEED_LIMIT: Final = 20_000
"""Events the session stream keeps for late or reconnecting pages."""
HISTORY_LIMIT: Final = 500
"""Calls the console remembers; older ones are forgotten (their blobs with them)."""


class _Feed:
    """The session's events in order, as server-sent event frames, for the page's one
    stream (a browser opens at most six connections to a host: one stream per call
    would stall the page at six running calls)."""

    def __init__(self) -> None:
        self._frames: list[str] = []
        self._base = 0
        self._changed = anyio.Event()

    @property
    def cursor(self) -> int:
        """The number of the next event."""
        return self._base + len(self._frames)

    def publish(self, event: str, data: dict[str, Any]) -> None:
        number = self.cursor
        self._frames.append(f"id: {number}\nevent: {event}\ndata: {json.dumps(data)}\n\n")
        if len(self._frames) > FEED_LIMIT:
            # Forget the older half: a page that far behind reloads the history instead.
            dropped = len(self._frames) // 2
            del self._frames[:dropped]
            self._base += dropped
        self._changed.set()
        self._changed = anyio.Event()

    async def stream(self, since: int) -> AsyncIterator[str]:
        """Every event from number ``since`` on, then each new one as it comes."""
        position = since
        while True:
            changed = self._changed
            position = max(position, self._base)
            while position < self.cursor:
                yield self._frames[position - self._base]
                position += 1
            await changed.wait()


class _Console:
    """The app's state: the catalog, the calls of this session, and where calls run."""

    def __init__(
        self, catalog: ConsoleCatalog, task_group: anyio.abc.TaskGroup, spans: ConsoleSpans | None
    ) -> None:
        self.catalog = catalog
        self.task_group = task_group
        self.spans = spans
        self.calls: dict[int, _Call] = {}
        self.feed = _Feed()
        self._next_id = 1

    def start(self, tool: str, arguments: dict[str, Any], origin: str) -> _Call:
        """Register a call and run it in the background; its events stream meanwhile."""
        call = _Call(self._next_id, tool, arguments, origin)
        self._next_id += 1
        self.calls[call.id] = call
        while len(self.calls) > HISTORY_LIMIT:
            del self.calls[next(iter(self.calls))]
        self.feed.publish("started", call.summary())
        self.task_group.start_soon(self._run, call)
        return call

    async def _run(self, call: _Call) -> None:
        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            update = {"progress": progress, "total": total, "message": message}
            call.progress.append(update)
            call.touch()
            self.feed.publish("progress", {"call": call.id, **update})

        began = time.perf_counter()
        try:
            with self.spans.root(call.tool) if self.spans else contextlib.nullcontext() as trace:
                call.trace_id = trace
                response = await self.catalog.call_tool(
                    call.tool, call.arguments, on_progress=on_progress
                )
            call.view = _result_view(call, self.catalog, response, _ms_since(began))
        except Exception as exc:  # the top of a background call: report it on the page
            call.view = {
                **call.summary(),
                "status": "failed",
                "elapsedMs": round(_ms_since(began), 2),
                "arguments": call.arguments,
                "service": service_meta(self.catalog.service(call.tool)),
                "failure": f"{type(exc).__name__}: {exc}",
                "hostActions": call.host_actions,
            }
        call.touch()
        self.feed.publish("result", call.view)


def _ms_since(began: float) -> float:
    return (time.perf_counter() - began) * 1e3


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


def _refuse_cross_origin(request: Request) -> Response | None:
    """Why a state-changing request is refused, or None: JSON from the page's own origin."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is not None and origin != f"http://{host}":
        return PlainTextResponse(f"403 Forbidden: origin {origin} is not the console", 403)
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return PlainTextResponse("415: send application/json", 415)
    return None


async def _json_body(request: Request) -> dict[str, Any] | Response:
    refused = _refuse_cross_origin(request)
    if refused is not None:
        return refused
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        return JSONResponse({"error": f"the body is not JSON: {exc}"}, 400)
    if not isinstance(body, dict):
        return JSONResponse({"error": "the body must be a JSON object"}, 400)
    return body


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
    console = _Console(catalog, task_group, spans)
    capabilities = FrameCapabilities(FRAME_TTL)
    apps = AppRequests(catalog)

    def origins(request: Request) -> tuple[str, str] | None:
        """The page's origin and its sandbox's (``_sandbox.py``), or None."""
        return origins_of(request.headers.get("host", ""), sandbox_port)

    def page_asset(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            found = origins(request)
            frames = "frame-src 'self'" + (f" {found[1]}" if found else "")
            policy = _PAGE_CSP.replace("frame-src 'self'", frames)
            headers = {"Content-Security-Policy": policy, "Cache-Control": "no-store"}
            return Response(_asset(name), media_type=_ASSET_TYPES[name], headers=headers)

        return endpoint

    async def tools(request: Request) -> Response:
        await catalog.reload()  # a server authorized since (auth login) lists its tools
        needs = catalog.needs_authorization
        servers = [
            {
                "name": server.name,
                "backend": server.backend,
                "description": server.description,
                "tools": [msgspec.to_builtins(tool) for tool in server.tools],
                "needsAuthorization": needs.get(server.name),
            }
            for server in catalog.servers
        ]
        return JSONResponse({"servers": servers, "tokenNote": token_note()})

    async def start_call(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        tool, arguments = body.get("tool"), body.get("arguments", {})
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return JSONResponse({"error": "send {tool: string, arguments: object}"}, 400)
        try:
            catalog.service(tool)
        except KeyError as exc:
            return JSONResponse({"error": str(exc.args[0])}, 404)
        return JSONResponse(console.start(tool, arguments, "form").summary(), 202)

    async def history(request: Request) -> Response:
        calls = [call.summary() for call in console.calls.values()]
        return JSONResponse({"calls": calls, "cursor": console.feed.cursor})

    async def session_events(request: Request) -> Response:
        # A reconnecting EventSource says where it was; a fresh page says where its
        # history ends.
        last = request.headers.get("last-event-id", "")
        since = request.query_params.get("since", "0")
        try:
            start = int(last) + 1 if last.isdigit() else max(0, int(since))
        except ValueError:
            return JSONResponse({"error": "since must be a whole number"}, 400)
        return _sse(console.feed.stream(start))

    def find(request: Request) -> _Call | Response:
        call = console.calls.get(request.path_params["call"])
        if call is None:
            return JSONResponse({"error": "no such call in this session"}, 404)
        return call

    async def events(request: Request) -> Response:
        call = find(request)
        if isinstance(call, Response):
            return call
        return _sse(_event_stream(call))

    async def one_call(request: Request) -> Response:
        call = find(request)
        if isinstance(call, Response):
            return call
        return JSONResponse(call.view or call.summary())

    async def call_spans(request: Request) -> Response:
        call = find(request)
        if isinstance(call, Response):
            return call
        if spans is None or call.trace_id is None:
            return JSONResponse({"recording": spans is not None, "spans": []})
        return JSONResponse({"recording": True, "spans": spans.waterfall(call.trace_id)})

    def stored(request: Request, kind: str) -> Any:
        """A call's stored blob or UI document by block index, or a 404 response."""
        call = find(request)
        if isinstance(call, Response):
            return call
        found = (call.blobs if kind == "blob" else call.documents).get(request.path_params["block"])
        if found is None:
            return JSONResponse({"error": f"no such {kind} in this call"}, 404)
        return found

    async def blob(request: Request) -> Response:
        found = stored(request, "blob")
        if isinstance(found, Response):
            return found
        data, filename = found
        # Always an attachment, never rendered: a blob's type comes from the tool.
        disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
        return Response(
            data, media_type="application/octet-stream", headers={**disposition, **_PRIVATE}
        )

    async def grant_frame(request: Request) -> Response:
        body = await _json_body(request)  # the page's own origin only: never a frame's
        if isinstance(body, Response):
            return body
        document = stored(request, "UI resource")
        if isinstance(document, Response):
            return document
        capability = capabilities.grant(request.path_params["call"], request.path_params["block"])
        return JSONResponse({"src": f"/ui/{capability}"}, headers=_PRIVATE)

    async def grant_app_frame(request: Request) -> Response:
        body = await _json_body(request)  # the page's own origin only: never a frame's
        if isinstance(body, Response):
            return body
        call = find(request)
        if isinstance(call, Response):
            return call
        found = origins(request)
        if found is None:
            return JSONResponse({"error": "no sandbox origin for apps on this Host"}, 404)
        try:
            page = await apps.page(call.tool)
        except AppRequestError as exc:
            return JSONResponse({"error": str(exc)}, 404, headers=_PRIVATE)
        # The page's own origin, as its Host says (checked local or allowed, and plain).
        call.app_grant = SandboxGrant(page.policy, found[0])
        capability = capabilities.grant(call.id, APP_BLOCK)
        src = f"{found[1]}/sandbox/{capability}"
        return JSONResponse({"src": src, **page.frame()}, headers=_PRIVATE)

    async def app_request(request: Request) -> Response:
        call = find(request)
        if isinstance(call, Response):
            return call
        body = await _json_body(request)  # the page relays its app frame's requests
        if isinstance(body, Response):
            return body
        method = body.get("method")
        if not isinstance(method, str):
            return JSONResponse({"error": "send {method: string, params?: object}"}, 400)
        try:
            if method in NOTE_METHODS:  # told, not asked: kept with the call, shown
                keep_note(call.host_actions, app_note(method, body.get("params")))
                return JSONResponse({"result": {}}, headers=_PRIVATE)
            result = await apps.request(call.tool, method, body.get("params"))
        except AppRequestError as exc:
            return JSONResponse({"error": {"code": exc.code, "message": str(exc)}})
        return JSONResponse({"result": result}, headers=_PRIVATE)

    def redeem_app_frame(capability: str) -> SandboxGrant | None:
        named = capabilities.redeem(capability)
        call = console.calls.get(named[0]) if named and named[1] == APP_BLOCK else None
        return call.app_grant if call else None

    async def ui_document(request: Request) -> Response:
        named = capabilities.redeem(request.path_params["capability"])
        call = console.calls.get(named[0]) if named else None
        document = call.documents.get(named[1]) if call and named else None
        if document is None:
            return PlainTextResponse("404: this frame's link was used or has expired", 404)
        return HTMLResponse(document, headers={"Content-Security-Policy": _UI_CSP, **_PRIVATE})

    async def ui_action(request: Request) -> Response:
        call = find(request)
        if isinstance(call, Response):
            return call
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        action = body.get("action")
        if not isinstance(action, dict):
            return JSONResponse({"error": "send {block: number, action: object}"}, 400)
        try:
            target: UIActionTarget = catalog.resolve_ui_action(action, call.content)
            if target.tool_name is not None:
                _same_server(catalog, call.tool, target.tool_name)
        except (ValueError, UnknownTool) as exc:
            call.host_actions.append({"type": "error", "payload": {"message": str(exc)}})
            return JSONResponse({"error": str(exc)}, 400)
        if target.tool_name is None:
            shown = {"type": target.type, "payload": target.arguments}
            call.host_actions.append(shown)
            return JSONResponse({"kind": "host", **shown})
        started = console.start(target.tool_name, target.arguments, f"ui:{call.id}")
        return JSONResponse({"kind": "tool", "call": started.summary()}, 202)

    routes = [
        Route("/", page_asset("index.html")),
        Route("/console.js", page_asset("console.js")),
        Route("/console.css", page_asset("console.css")),
        Route("/apps.js", page_asset("apps.js")),
        Route("/waterfall.js", page_asset("waterfall.js")),
        Route("/waterfall.css", page_asset("waterfall.css")),
        Route("/authorize.js", page_asset("authorize.js")),
        *authorization_routes(catalog, task_group, _json_body),
        Route("/api/tools", tools),
        Route("/api/calls", start_call, methods=["POST"]),
        Route("/api/calls", history, methods=["GET"]),
        Route("/api/events", session_events),
        Route("/api/calls/{call:int}", one_call),
        Route("/api/calls/{call:int}/events", events),
        Route("/api/calls/{call:int}/spans", call_spans),
        Route("/api/calls/{call:int}/blobs/{block:int}", blob),
        Route("/api/calls/{call:int}/ui-actions", ui_action, methods=["POST"]),
        Route("/api/calls/{call:int}/frames/{block:int}", grant_frame, methods=["POST"]),
        Route("/api/calls/{call:int}/app-frame", grant_app_frame, methods=["POST"]),
        Route("/api/calls/{call:int}/app-requests", app_request, methods=["POST"]),
    ]
    frames = Starlette(routes=[Route("/{capability}", ui_document)])
    gate = _TokenGate(Starlette(routes=routes), token, frames)
    sites = ByListener(gate, SandboxSite(redeem_app_frame), sandbox_port)
    return RebindingGuard(sites, local_only(allowed_hosts, allowed_origins))


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


def _sse(frames: AsyncIterator[str]) -> Response:
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames, media_type="text/event-stream", headers=headers)


async def _event_stream(call: _Call) -> AsyncIterator[str]:
    """Server-sent events: every ``progress`` so far and to come, then the ``result``."""
    sent = 0
    while True:
        changed = call.changed
        while sent < len(call.progress):
            yield f"event: progress\ndata: {json.dumps(call.progress[sent])}\n\n"
            sent += 1
        if call.view is not None:
            yield f"event: result\ndata: {json.dumps(call.view)}\n\n"
            return
        await changed.wait()
