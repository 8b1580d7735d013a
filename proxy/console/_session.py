"""The console session's state: its calls, where they run, and the one event feed the
page streams (`started`, `progress` and `result` of every call).

A call runs in the console's task group, not in the request that started it, so it
keeps running, and is remembered, when the page reloads.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import anyio.abc

from nativemcp.protocol import service_meta

from ._call_views import _Call, _result_view
from ._catalog import ConsoleCatalog
from ._spans import ConsoleSpans

__all__ = ["FEED_LIMIT", "HISTORY_LIMIT", "ConsoleSession", "Feed"]

FEED_LIMIT: Final = 20_000
"""Events the session stream keeps for late or reconnecting pages."""
HISTORY_LIMIT: Final = 500
"""Calls the console remembers; older ones are forgotten (their blobs with them)."""


class Feed:
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


class ConsoleSession:
    """The app's state: the catalog, the calls of this session, and where calls run."""

    def __init__(
        self, catalog: ConsoleCatalog, task_group: anyio.abc.TaskGroup, spans: ConsoleSpans | None
    ) -> None:
        self.catalog = catalog
        self.task_group = task_group
        self.spans = spans
        self.calls: dict[int, _Call] = {}
        self.feed = Feed()
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
