"""The served app, with the MCP endpoint's POSTs taken before Starlette's routing.

Every tool call is a POST to ``/mcp`` or ``/mcp/<name>``. Starlette would pass each one
through its error and exception middleware and match it against its routes before the
endpoint runs, which costs a fast call about a tenth of its CPU (bench.serve). Here such
a request goes to the endpoint through the app's own middleware (the token, OAuth, the
canonical Host: the very classes and arguments Starlette stacks, in its order, so no
check has a second implementation), with the path parameter Starlette's route would
give it. Everything else (GET streams, DELETE, other paths, the lifespan, an app
mounted under a prefix) is Starlette's, as before. Every request's header values reach
both without the whitespace around them, whichever HTTP server parsed them
(`trimmed_headers`).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from ..http_edge import trimmed_headers

__all__ = ["McpApp"]

_ENDPOINT = "/mcp"
_NAMED = "/mcp/"


class McpApp(Starlette):
    """A Starlette app whose POSTs to ``endpoint`` (`_ENDPOINT`, `_NAMED` + a name) go
    straight to it through the user middleware; see the module's docstring.

    Args:
        endpoint: the ASGI endpoint both routes name (reads ``path_params["name"]``).
        **options: `Starlette`'s.
    """

    def __init__(self, endpoint: ASGIApp, **options: Any) -> None:
        super().__init__(**options)
        self._endpoint = endpoint
        self._edge: ASGIApp | None = None

    def _built_edge(self) -> ASGIApp:
        # As `Starlette.build_middleware_stack` wraps the router in the user middleware
        # (the first added outermost), less its error and exception handling.
        app = self._endpoint
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope["headers"] = trimmed_headers(scope["headers"])
            path = scope["path"]
            if (
                scope["method"] == "POST"
                and not scope.get("root_path")
                and (path == _ENDPOINT or path.startswith(_NAMED))
            ):
                edge = self._edge
                if edge is None:  # built at the first request, as Starlette's stack is
                    edge = self._edge = self._built_edge()
                scope["app"] = self
                scope["path_params"] = {"name": path[len(_NAMED) :]} if path != _ENDPOINT else {}
                await edge(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
