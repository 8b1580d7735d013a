"""How the console's endpoints read a request and answer it: a state-changing request's
JSON body, from the page's own origin only (`json_body`), server-sent events (`sse`),
and the headers of a stored answer (`PRIVATE`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

__all__ = ["PRIVATE", "json_body", "sse"]

PRIVATE: Final = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
"""Headers of every stored answer: taken as the type it is said to be, never cached."""


def _refuse_cross_origin(request: Request) -> Response | None:
    """Why a state-changing request is refused, or None: JSON from the page's own origin."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is not None and origin != f"http://{host}":
        return PlainTextResponse(f"403 Forbidden: origin {origin} is not the console", 403)
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return PlainTextResponse("415: send application/json", 415)
    return None


async def json_body(request: Request) -> dict[str, Any] | Response:
    """The JSON object a state-changing request sends, or the response refusing it
    (another origin, not ``application/json``, not a JSON object)."""
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


def sse(frames: AsyncIterator[str]) -> Response:
    """A stream of server-sent event ``frames``, never cached nor buffered by a proxy."""
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames, media_type="text/event-stream", headers=headers)
