"""One fast-path answer, written as the SDK writes it.

JSON, unless a notification (a tool's log message) comes first or the call outlasts the
SDK's window: then an event stream with the same events, pinged as the SDK pings. A
2025-11-25 answer is always an event stream, as the SDK's legacy transport sends it,
with that era's error mapping. What the SDK writes inline (headers, pings, frames, the
catch-all error) is read from `nativemcp.proxy._sdk_seam`, where each copy is checked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import anyio
import mcp_types as types
import msgspec
from mcp.server.runner import modern_error_data
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from starlette.types import Receive, Send

from ..._sdk_seam import (
    LEGACY_SSE_HEADERS,
    SSE_PING,
    legacy_catch_all,
    legacy_event,
    legacy_ping,
    modern_event,
    sse_headers,
    sse_window,
)
from ._window import Window

__all__ = ["Reply"]

_logger = logging.getLogger("nativemcp.serve")

_ENCODER: Final = msgspec.json.Encoder()

SSE_WINDOW: Final = sse_window()
"""Seconds a silent call answers in JSON before the answer becomes an event stream (the
SDK's window, and its ping interval after)."""
SSE_HEADERS: Final = sse_headers()
"""The SDK's event-stream headers for a 2026-07-28 answer."""


class Reply:
    """One answer: JSON, unless a notification comes first or the call outlasts the
    SDK's window; then an event stream, as the SDK sends it. A 2025-11-25 answer
    (``legacy``) is an event stream either way, with that era's error mapping."""

    def __init__(
        self, receive: Receive, send: Send, request_id: int | str, *, legacy: bool = False
    ) -> None:
        self._receive = receive
        self._send = send
        self._id = request_id
        self._legacy = legacy
        self._streaming = False
        # Made by the first writer besides the answer (a notification, the window's
        # ping), so the answer alone (nearly always) neither makes nor takes one.
        self._writers: anyio.Lock | None = None

    @property
    def _lock(self) -> anyio.Lock:
        if self._writers is None:
            # Taken without a checkpoint when free: a yield costs an event loop pass.
            self._writers = anyio.Lock(fast_acquire=True)
        return self._writers

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        """A tool's log message, sent on this answer as the bridge sends it on the SDK
        path (a stateless request's connection is its own: no level is set on it)."""
        params = types.LoggingMessageNotificationParams(
            level=level,  # type: ignore[arg-type]
            data=data,
            logger=logger,
        )
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self.notify("notifications/message", dumped)

    async def serve(self, answer: Callable[[], Any]) -> None:
        """Run ``answer`` and send what it gives, or the error it raises."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id}
        with anyio.CancelScope() as scope:
            window = Window(SSE_WINDOW, lambda: self._watch(scope))
            try:
                message["result"] = await answer()
            except Exception as exc:
                message["error"] = _legacy_error(exc) if self._legacy else _modern_error(exc)
            finally:
                await window.aclose()
        if len(message) > 2:  # not cancelled by the client's leaving
            if self._writers is None:  # nothing else wrote, nor is writing
                await self._finish(message)
                return
            async with self._writers:
                await self._finish(message)

    async def _finish(self, message: dict[str, Any]) -> None:
        if self._streaming:
            await self._send(
                {"type": "http.response.body", "body": self._event(message), "more_body": False}
            )
            return
        if self._legacy:  # the whole stream at once: its one event
            start = {"type": "http.response.start", "status": 200, "headers": LEGACY_SSE_HEADERS}
            await self._send(start)
            await self._send({"type": "http.response.body", "body": self._event(message)})
            return
        status = 200
        if "error" in message:
            status = ERROR_CODE_HTTP_STATUS.get(message["error"]["code"], 200)
        body = _ENCODER.encode(message)
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-length", str(len(body)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await self._send({"type": "http.response.body", "body": body})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification on this answer's stream (committing it to one)."""
        async with self._lock:
            await self._stream(self._event({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _stream(self, chunk: bytes) -> None:
        if not self._streaming:
            self._streaming = True
            headers = LEGACY_SSE_HEADERS if self._legacy else SSE_HEADERS
            await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    def _event(self, message: dict[str, Any]) -> bytes:
        return legacy_event(message) if self._legacy else modern_event(message)

    def _ping(self) -> bytes:
        return legacy_ping() if self._legacy else SSE_PING

    async def _watch(self, scope: anyio.CancelScope) -> None:
        """Once the answer has been silent for the window: commit it to a stream with a
        ping, and ping after each silent window, cancelling the answer when the client
        leaves (as the SDK does)."""
        while True:
            async with self._lock:
                await self._stream(self._ping())
            with anyio.move_on_after(SSE_WINDOW):
                while (await self._receive()).get("type") != "http.disconnect":
                    pass
                scope.cancel()
                return


def _modern_error(exc: Exception) -> dict[str, Any]:
    # The SDK's modern mapping: MCPError and ValidationError as they are, anything
    # else logged and answered as an internal error.
    error = modern_error_data(exc)
    return error.model_dump(by_alias=True, mode="json", exclude_none=True)


def _legacy_error(exc: Exception) -> dict[str, Any]:
    # The SDK's dispatcher's mapping: the same two, anything else logged and answered
    # with code 0 and its message; written with exclude_unset (an explicit null stays).
    error = handler_exception_to_error_data(exc)
    if error is None:
        _logger.exception("handler raised")
        error = legacy_catch_all(exc)
    return error.model_dump(by_alias=True, mode="json", exclude_unset=True)
