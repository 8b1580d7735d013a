"""The one way out of a session's browser context: a checking HTTP proxy on loopback.

Playwright's request routing never sees a redirect's next hop, and Chromium resolves a
host name itself, after any check made beforehand. So each session's context is given
this proxy (Playwright also sends loopback through it), and the proxy is where the
`UrlPolicy` holds: every request, every redirect hop, every WebSocket and every HTTPS
tunnel arrives here as ``GET http://host/...`` or ``CONNECT host:port``; the proxy
resolves the host once, checks those addresses, and connects to a checked address
itself, so a name that resolves elsewhere a moment later (DNS rebinding) changes
nothing. A refusal answers ``403`` (a tunnel: the connection fails) and is reported to
the session.

Plain HTTP goes upstream with ``Connection: close``: one request per connection, so a
kept-alive connection can never carry a second request to another host unchecked.

Everything the proxy opens it closes and waits for: each connection's writers
(``wait_closed``, bounded by `_CLOSE_GRACE`, then aborted), the tasks it cancels, and
the listening server in `EgressProxy.aclose`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from ._guard import Refused, UrlPolicy

__all__ = ["EgressProxy"]

_MAX_HEAD: Final = 64 * 1024
"""The largest request head (request line and headers) the proxy reads."""
_CONNECT_TIMEOUT: Final = 15.0
"""Seconds to reach an upstream server."""
_CLOSE_GRACE: Final = 5.0
"""Seconds a closing connection may take to flush before it is aborted."""
_CHUNK: Final = 64 * 1024
_HOP_HEADERS: Final = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization"}
)


def _refusal(reason: str) -> bytes:
    body = f"Refused by the browser server's URL policy: {reason}\n".encode()
    return (
        b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close ``writer`` and wait until it is closed; a peer that does not read what is
    left within `_CLOSE_GRACE` gets the connection aborted."""
    writer.close()
    try:
        async with asyncio.timeout(_CLOSE_GRACE):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError, OSError):
        writer.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


class EgressProxy:
    """A per-session HTTP proxy applying ``policy``; ``on_refused`` hears ``URL: why``.

    ``async with EgressProxy(...) as proxy`` listens at ``proxy.url`` until the block
    ends (or call `start` and `aclose`).
    """

    def __init__(self, policy: UrlPolicy, on_refused: Callable[[str], None]) -> None:
        self._policy = policy
        self._on_refused = on_refused
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.url = ""
        """``http://127.0.0.1:PORT`` once started."""

    async def __aenter__(self) -> EgressProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> str:
        """Listen on a free loopback port; the proxy's URL (also `url`)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_MAX_HEAD)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def aclose(self) -> None:
        """Stop listening, cut every open connection and wait until all are closed
        (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        if connections:
            # Each connection's task ends by closing its writers (see _serve).
            await asyncio.wait(connections)
        if server is not None:
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self._handle(reader, writer)
        except ValueError:  # not a request line an HTTP proxy understands
            writer.write(
                b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
        except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            try:
                await _close(writer)
            finally:
                if task is not None:
                    self._connections.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, _, headers = head.partition(b"\r\n")
        method, target, version = request_line.decode("latin-1").split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        if tunnel:
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]")
            port = int(port_text)
            url = f"https://{target}/"
            # A tunnel serves https, and WebSockets of either scheme.
            origins = [f"https://{target}", f"http://{target}"]
        else:
            parts = urlsplit(target)
            host, port, url = parts.hostname or "", parts.port or 80, target
            origins = [target]
        try:
            refusals = [self._policy.scheme_refusal(origin) for origin in origins]
            if all(refusals):
                raise Refused(str(refusals[0]))
            addresses = await self._policy.addresses(host, port)
        except Refused as exc:
            self._on_refused(f"{url}: {exc}")
            writer.write(_refusal(str(exc)))
            await writer.drain()
            return
        try:
            upstream_reader, upstream_writer = await self._connect(addresses, port)
        except OSError:  # Chromium shows its own "cannot connect" page for a 502
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
            await writer.drain()
            return
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                parts = urlsplit(target)
                path = parts.path or "/"
                if parts.query:
                    path += "?" + parts.query
                kept = [
                    line
                    for line in headers.split(b"\r\n")
                    if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
                ]
                upstream_writer.write(
                    f"{method} {path} {version}\r\n".encode("latin-1")
                    + b"\r\n".join([*kept, b"Connection: close"])
                    + b"\r\n\r\n"
                )
            async with asyncio.TaskGroup() as pipes:  # awaits both pipes, cancelled or not
                sending = pipes.create_task(_pipe(reader, upstream_writer))
                await _pipe(upstream_reader, writer)
                if not tunnel:
                    # One request: when its response ends, so does the connection, so
                    # the browser cannot send a next request (for any host) down this one.
                    sending.cancel()
        finally:
            await _close(upstream_writer)

    async def _connect(
        self, addresses: list[str], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the first checked address that answers."""
        failure: OSError | None = None
        for address in addresses:
            try:
                async with asyncio.timeout(_CONNECT_TIMEOUT):
                    return await asyncio.open_connection(address, port)
            except (OSError, TimeoutError) as exc:
                failure = exc if isinstance(exc, OSError) else OSError(str(exc))
        raise failure or OSError("no address to connect to")
