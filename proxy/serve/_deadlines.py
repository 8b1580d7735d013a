"""Read deadlines for `nativemcp serve`'s HTTP connections: slow clients are let go.

Uvicorn closes a keep-alive connection that stays silent between requests
(``timeout_keep_alive``) but has no bound on how long a client may take to send one
request: a client that trickles its header lines, or its body, a byte at a time holds
its connection (and, for a body, a task of the app) for as long as it likes. Here:

- a request's headers must be complete within ``header_timeout`` seconds of the
  connection opening, or of the first byte of a later request on a kept-alive
  connection: if not, the client gets ``408 Request Timeout`` and the connection closes;
- its body must be complete within ``body_timeout`` seconds of the headers: if not,
  the connection closes (the app reading the body sees the client disconnect).

Responses are not bounded: a tool call's event stream may run as long as the call.

Two of uvicorn's HTTP/1.1 protocols carry them: httptools' (the default: the same
answers at about half the CPU per request, measured by bench.serve) and h11's
(``--http h11``, pure Python). Each subclasses uvicorn's protocol, which is not
uvicorn's public API: the h11 one relies on ``H11Protocol(config, server_state,
app_state, _loop)``, its ``conn`` (an ``h11.Connection``), ``loop`` and ``transport``,
and its ``connection_made``, ``connection_lost``, ``data_received`` and
``on_response_complete``; the httptools one on ``HttpToolsProtocol``'s same
constructor, ``loop`` and ``transport``, its ``connection_made``, ``connection_lost``,
``data_received`` and the parser's ``on_headers_complete`` and ``on_message_complete``
callbacks. pyproject.toml pins the uvicorn versions checked, and
tests/proxy/serve/test_serve_limits.py fails when one of these changes.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ._defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_HTTP,
    HTTP_PROTOCOLS,
    HttpProtocol,
)

__all__ = ["deadline_protocol"]

_TIMEOUT_BODY: Final = b"the request headers took too long to send\n"
_REQUEST_TIMEOUT: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)
"""Written as bytes: neither protocol answers before it has parsed a request."""


class _Deadlines:
    """The deadline timer both protocols share: armed, moved and fired the same way."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()

    def _body_too_slow(self) -> None:
        # The app may have begun its answer: a 408 cannot be written into it; closing
        # tells the app (http.disconnect) and the client alike.
        self._deadline = None
        self.transport.close()


class _H11Deadlines(_Deadlines, H11Protocol):
    """Uvicorn's h11 protocol with a deadline on reading each request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading_body = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, self._headers_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            # The first bytes of a later request on a kept-alive connection.
            self._arm(self.header_timeout, self._headers_too_slow)
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request may have been read meanwhile.
        self._follow_request()

    def _follow_request(self) -> None:
        """Move the deadline along with what h11 has read of the request."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if not self._reading_body:
                self._reading_body = True
                self._arm(self.body_timeout, self._body_too_slow)
        elif state is not h11.IDLE:
            # Read whole (DONE), or the connection is ending: nothing more to wait for.
            self._reading_body = False
            self._disarm()


class _HttpToolsDeadlines(_Deadlines, HttpToolsProtocol):
    """Uvicorn's httptools protocol with a deadline on reading each request.

    The parser calls back as it reads: the headers' deadline runs from the connection's
    opening (or a later request's first bytes) to ``on_headers_complete``, the body's
    from there to ``on_message_complete``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading = False  # between a request's first byte and its last

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._reading = True
        self._arm(self.header_timeout, self._headers_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._reading:
            # The first bytes of a later request on a kept-alive connection.
            self._reading = True
            self._arm(self.header_timeout, self._headers_too_slow)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if self._reading:  # not read whole yet (on_message_complete comes after)
            self._arm(self.body_timeout, self._body_too_slow)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = False
        self._disarm()


def deadline_protocol(
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    *,
    http: HttpProtocol = DEFAULT_HTTP,
) -> type[asyncio.Protocol]:
    """Uvicorn's ``http`` protocol (httptools' or h11's) with read deadlines, for
    ``uvicorn.Config(http=...)``.

    Raises:
        ValueError: a timeout is not a positive number of seconds, or ``http`` is
            neither protocol.
    """
    if http not in HTTP_PROTOCOLS:
        raise ValueError(f"http must be one of {', '.join(HTTP_PROTOCOLS)}, not {http!r}")
    if not (header_timeout > 0 and body_timeout > 0):
        raise ValueError(
            f"header and body timeouts must be positive seconds, not {header_timeout}, "
            f"{body_timeout}"
        )
    base = _HttpToolsDeadlines if http == "httptools" else _H11Deadlines
    return type(
        "DeadlineProtocol",
        (base,),
        {"header_timeout": header_timeout, "body_timeout": body_timeout},
    )
