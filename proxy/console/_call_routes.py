"""The console's endpoints for the catalog and the session's calls: the servers and
their tools, starting a call, the history, the session's event stream, one call, its
events and its spans (the routes are listed in `_app`'s docstring).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..llm._tokens import token_note
from ._call_views import _Call
from ._catalog import ConsoleCatalog
from ._requests import json_body, sse
from ._session import ConsoleSession
from ._spans import ConsoleSpans

__all__ = ["CallRoutes", "requested_call"]


def requested_call(console: ConsoleSession, request: Request) -> _Call | Response:
    """The call the request's path names (``{call}``), or a 404 response."""
    call = console.calls.get(request.path_params["call"])
    if call is None:
        return JSONResponse({"error": "no such call in this session"}, 404)
    return call


class CallRoutes:
    """The catalog and the session's calls, one endpoint a method (`create_console_app`
    routes them)."""

    def __init__(
        self, console: ConsoleSession, catalog: ConsoleCatalog, spans: ConsoleSpans | None
    ) -> None:
        self.console = console
        self.catalog = catalog
        self.spans = spans

    async def tools(self, request: Request) -> Response:
        catalog = self.catalog
        await catalog.reload()  # a server authorized since (auth login) lists its tools
        needs = catalog.needs_authorization
        grants = await catalog.grants()
        servers = [
            {
                "name": server.name,
                "backend": server.backend,
                "description": server.description,
                "tools": [msgspec.to_builtins(tool) for tool in server.tools],
                "needsAuthorization": needs.get(server.name),
                "grants": grants.get(server.name),
            }
            for server in catalog.servers
        ]
        return JSONResponse({"servers": servers, "tokenNote": token_note()})

    async def start_call(self, request: Request) -> Response:
        body = await json_body(request)
        if isinstance(body, Response):
            return body
        tool, arguments = body.get("tool"), body.get("arguments", {})
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return JSONResponse({"error": "send {tool: string, arguments: object}"}, 400)
        try:
            self.catalog.service(tool)
        except KeyError as exc:
            return JSONResponse({"error": str(exc.args[0])}, 404)
        return JSONResponse(self.console.start(tool, arguments, "form").summary(), 202)

    async def history(self, request: Request) -> Response:
        calls = [call.summary() for call in self.console.calls.values()]
        return JSONResponse({"calls": calls, "cursor": self.console.feed.cursor})

    async def session_events(self, request: Request) -> Response:
        # A reconnecting EventSource says where it was; a fresh page says where its
        # history ends.
        last = request.headers.get("last-event-id", "")
        since = request.query_params.get("since", "0")
        try:
            start = int(last) + 1 if last.isdigit() else max(0, int(since))
        except ValueError:
            return JSONResponse({"error": "since must be a whole number"}, 400)
        return sse(self.console.feed.stream(start))

    async def events(self, request: Request) -> Response:
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        return sse(_event_stream(call))

    async def one_call(self, request: Request) -> Response:
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        return JSONResponse(call.view or call.summary())

    async def call_spans(self, request: Request) -> Response:
        call = requested_call(self.console, request)
        if isinstance(call, Response):
            return call
        spans = self.spans
        if spans is None or call.trace_id is None:
            return JSONResponse({"recording": spans is not None, "spans": []})
        return JSONResponse({"recording": True, "spans": spans.waterfall(call.trace_id)})


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
