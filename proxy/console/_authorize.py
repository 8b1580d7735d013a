"""The console's "Authorize" button: a remote server that needs authorization, signed
in to from the page, its tools listed again without restarting anything.

- ``POST api/servers/<name>/authorize``  ``{}`` → ``{"url"}`` once the pool has the
  authorization address (the page opens it in a new tab), or the outcome at once when
  no person was needed (a grant was kept meanwhile);
- ``GET  api/servers/<name>/authorization`` → the outcome, once the flow is over:
  ``{"authorized": true}``, or ``{"authorized": false, "error"}``.

The flow is the pool's (`WorkerPool.authorize`) with a redirect hook that hands the
address to the page and returns None: the browser tab comes back to the pool's loopback
callback port (``http://localhost:PORT/callback``), as for ``nativemcp auth login``.
A flow runs in the console's task group, so a page that reloads meanwhile finds it
still running; one flow per server at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nativemcp.protocol import ServerError

from ..external import NeedsAuthorization
from ._catalog import ConsoleCatalog

__all__ = ["authorization_routes"]

JsonBody = Callable[[Request], Awaitable["dict[str, Any] | Response"]]
"""The console's reader of a state-changing request's JSON body (or its refusal)."""
_PRIVATE = {"Cache-Control": "no-store"}


@dataclass
class _Flow:
    """One sign-in of one server, as the page follows it."""

    url: str | None = None
    error: str | None = None
    asked: anyio.Event = field(default_factory=anyio.Event)
    """Set once the address is known, or the flow ended without one."""
    done: anyio.Event = field(default_factory=anyio.Event)

    def view(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"url": self.url, "done": self.done.is_set()}
        if self.done.is_set():
            shown["authorized"] = self.error is None
            if self.error is not None:
                shown["error"] = self.error
        return shown


class _Flows:
    def __init__(self, catalog: ConsoleCatalog, task_group: anyio.abc.TaskGroup) -> None:
        self._catalog = catalog
        self._task_group = task_group
        self.running: dict[str, _Flow] = {}

    def start(self, server: str) -> _Flow:
        flow = self.running.get(server)
        if flow is None or flow.done.is_set():
            flow = self.running[server] = _Flow()
            self._task_group.start_soon(self._run, server, flow)
        return flow

    async def _run(self, server: str, flow: _Flow) -> None:
        def show(url: str) -> None:
            flow.url = url
            flow.asked.set()

        try:
            await self._catalog.authorize(server, show)
        except (NeedsAuthorization, ValueError, ServerError) as exc:
            flow.error = str(exc)
        finally:
            flow.done.set()
            flow.asked.set()


def authorization_routes(
    catalog: ConsoleCatalog, task_group: anyio.abc.TaskGroup, json_body: JsonBody
) -> list[Route]:
    """The two routes of the button, for the console's app (under its token)."""
    flows = _Flows(catalog, task_group)

    async def authorize(request: Request) -> Response:
        body = await json_body(request)  # the page's own origin only: never a frame's
        if isinstance(body, Response):
            return body
        server = request.path_params["server"]
        running = flows.running.get(server)
        if server not in catalog.needs_authorization and (running is None or running.done.is_set()):
            return JSONResponse({"error": f"server {server!r} needs no authorization"}, 404)
        flow = flows.start(server)
        await flow.asked.wait()
        return JSONResponse({"server": server, **flow.view()}, headers=_PRIVATE)

    async def outcome(request: Request) -> Response:
        server = request.path_params["server"]
        flow = flows.running.get(server)
        if flow is None:
            return JSONResponse({"error": f"no authorization of {server!r} was started"}, 404)
        await flow.done.wait()
        return JSONResponse({"server": server, **flow.view()}, headers=_PRIVATE)

    return [
        Route("/api/servers/{server}/authorize", authorize, methods=["POST"]),
        Route("/api/servers/{server}/authorization", outcome),
    ]
