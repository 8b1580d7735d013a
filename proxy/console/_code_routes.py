"""The console's Code tab: a program run over the catalog in code mode
(`WorkerPool.run_code`), and what the page shows of it.

``POST api/code`` ``{"code"}`` runs the program in the request (a run is bounded by
the pool's code limits) and answers ``{"status", "output", "value", "error", "calls",
"elapsedMs", "recording", "spans"}``: what it printed, its last value, the error that
stopped it (a syntax error with its line and column, a limit it passed), each inner
call (the identifier the program called, the full tool name, its time and its error),
and the run's trace (a root span of its own, the ``run_code`` span under it, each inner
call's spans under that), laid out as the call waterfall is (``waterfall.js``).
``GET api/code/stubs?names=a,b`` gives the Python stubs the program calls them by.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nativemcp.protocol import CodeError, UnknownTool

from ..codemode import CodeResult
from ._catalog import ConsoleCatalog
from ._requests import json_body
from ._spans import ConsoleSpans

__all__ = ["CodeRoutes", "code_view"]


def code_view(outcome: CodeResult | CodeError, elapsed_ms: float) -> dict[str, Any]:
    """A run as the Code tab shows it: ``status`` ``ok`` or ``error``, and each part."""
    result = outcome if isinstance(outcome, CodeResult) else outcome.result
    if not isinstance(result, CodeResult):  # stopped before anything ran
        result = CodeResult(output="")
    return {
        "status": "ok" if isinstance(outcome, CodeResult) else "error",
        "output": result.output,
        "value": result.value,
        "error": None
        if isinstance(outcome, CodeResult)
        else f"{type(outcome).__name__}: {outcome}",
        "calls": [
            {
                "name": call.name,
                "tool": call.tool,
                "durationMs": round(call.duration * 1e3, 3),
                "error": call.error,
            }
            for call in result.calls
        ],
        "elapsedMs": round(elapsed_ms, 2),
    }


class CodeRoutes:
    """The Code tab's endpoints (`create_console_app` routes them)."""

    def __init__(self, catalog: ConsoleCatalog, spans: ConsoleSpans | None) -> None:
        self.catalog = catalog
        self.spans = spans

    async def run(self, request: Request) -> Response:
        body = await json_body(request)
        if isinstance(body, Response):
            return body
        code = body.get("code")
        if not isinstance(code, str) or not code.strip():
            return JSONResponse({"error": "send {code: string}, the program to run"}, 400)
        spans = self.spans
        began = time.perf_counter()
        outcome: CodeResult | CodeError
        with spans.root("run_code") if spans else contextlib.nullcontext() as trace:
            try:
                outcome = await self.catalog.run_code(code)
            except CodeError as exc:  # the program's own failure: shown, not a 500
                outcome = exc
            except ImportError as exc:  # no pydantic-monty: say which extra
                return JSONResponse({"error": str(exc)}, 501)
        view = code_view(outcome, (time.perf_counter() - began) * 1e3)
        view["recording"] = spans is not None
        view["spans"] = spans.waterfall(trace) if spans is not None and trace else []
        return JSONResponse(view)

    async def stubs(self, request: Request) -> Response:
        names = [n for n in request.query_params.get("names", "").split(",") if n.strip()]
        if not names:
            return JSONResponse({"error": "name the tools: ?names=a,b"}, 400)
        try:
            return JSONResponse({"stubs": await self.catalog.describe_tools(names)})
        except UnknownTool as exc:
            return JSONResponse({"error": str(exc)}, 404)
