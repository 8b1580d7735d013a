"""The loopback redirect URI of the authorization-code flow, and its listener (RFC 8252).

The URI is ``http://localhost:PORT/callback``: ``localhost`` because that is how
clients are registered (Claude Code's ``callbackPort`` too), and the listener binds
every address ``localhost`` names (127.0.0.1 and ::1 where it has both), so whichever
the browser picks reaches it. A port of 0 is bound as soon as the URI is made and the
port the system gave is read back: no pick-then-bind race, and nobody else can take it
before the browser comes back. A fixed port (configured, or the one a kept registration
names) is bound only when a person is asked, so a running pool never holds it against
an ``auth login`` in another terminal.

While a person signs in, each connection is served in a task of its own, its request
head bounded in size and time, so one slow local connection holds nothing up. Only a
``GET /callback`` whose ``state`` is the one of the authorization request ends the wait
(RFC 6749 §10.12): a forged or stale callback is answered with an error page and the
listener keeps waiting for the real one. Served with anyio streams rather than uvicorn
(the console's stack), because a pool runs on trio as well as asyncio.
"""

from __future__ import annotations

import contextlib
import errno
import html
import socket
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc

__all__ = ["CALLBACK_HOST", "CALLBACK_PATH", "CallbackPortBusy", "LoopbackCallback"]

CALLBACK_PATH: Final = "/callback"
"""The path of the loopback redirect URI."""
CALLBACK_HOST: Final = "localhost"
"""The host of the loopback redirect URI (bound on every address it names)."""
HEAD_TIMEOUT: Final = 10.0
"""Seconds one connection may take to send its request head."""
_HEAD_LIMIT: Final = 65536
_BIND_TRIES: Final = 5


class CallbackPortBusy(OSError):
    """The callback port is taken (another ``nativemcp auth login`` waiting on it?)."""


def _page(status: str, text: str) -> bytes:
    body = f"<!doctype html><title>nativemcp</title><p>{html.escape(text)}</p>".encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


AUTHORIZED_PAGE: Final = _page("200 OK", "Authorized. You can close this window.")
_NOT_FOUND: Final = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
_WRONG_STATE: Final = _page(
    "400 Bad Request",
    "This sign-in response is not the one nativemcp is waiting for (its state does not "
    "match); it was ignored. Finish the sign-in in the window nativemcp opened.",
)


def _addresses(port: int) -> list[tuple[int, str]]:
    """The (family, address) pairs ``localhost`` names, IPv4 first."""
    found = socket.getaddrinfo(CALLBACK_HOST, port, type=socket.SOCK_STREAM)
    pairs = sorted({(family, str(address[0])) for family, _, _, _, address in found})
    return sorted(pairs, key=lambda pair: pair[0] != socket.AF_INET)


def _bind(port: int) -> list[socket.socket]:
    """Sockets bound on every address of ``localhost`` at ``port`` (0: one the system
    gives, the same on each address). An address the machine lacks is left out.

    Raises:
        CallbackPortBusy: the port is taken on an address.
    """
    for _ in range(_BIND_TRIES):
        bound: list[socket.socket] = []
        chosen = port
        try:
            for family, address in _addresses(port):
                sock = socket.socket(family, socket.SOCK_STREAM)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                try:
                    sock.bind((address, chosen))
                except OSError as exc:
                    sock.close()
                    if exc.errno == errno.EADDRNOTAVAIL:
                        continue  # no such address here (no IPv6)
                    raise
                bound.append(sock)
                chosen = int(sock.getsockname()[1])
            if bound:
                return bound
        except OSError as exc:
            for sock in bound:
                sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            if port:
                raise CallbackPortBusy(
                    exc.errno,
                    f"port {port} on {CALLBACK_HOST} is taken (is another "
                    "'nativemcp auth login' waiting on it?)",
                ) from None
            # The port given on one address was taken on another: try a new one.
    raise CallbackPortBusy(errno.EADDRINUSE, f"no free port on {CALLBACK_HOST}")


class LoopbackCallback:
    """The redirect URI's port and, while a person signs in, its listener.

    Args:
        port: the fixed port (configured, or a kept registration's), bound when a person
            is asked; None: a port the system gives, bound now.
    """

    def __init__(self, port: int | None) -> None:
        self._sockets: list[socket.socket] = [] if port else _bind(0)
        self.port: int = port or int(self._sockets[0].getsockname()[1])

    @property
    def uri(self) -> str:
        """The redirect URI, ``http://localhost:PORT/callback``."""
        return f"http://{CALLBACK_HOST}:{self.port}{CALLBACK_PATH}"

    def listen(self) -> None:
        """Start listening (binding a fixed port now), before the person is sent off:
        a browser that comes back at once finds the listener.

        Raises:
            CallbackPortBusy: the port is taken.
        """
        if not self._sockets:
            self._sockets = _bind(self.port)
        for sock in self._sockets:
            sock.listen(16)

    async def wait(self, state: str | None) -> str:
        """The request target of the first ``GET /callback`` carrying ``state`` (None:
        any); other requests are answered and the wait goes on. Listening ends with it."""
        listeners = [await anyio.abc.SocketListener.from_socket(s) for s in self._sockets]
        self._sockets = []  # the listeners own them now
        found: list[str] = []
        try:
            async with anyio.create_task_group() as tg:

                async def serve(stream: anyio.abc.SocketStream) -> None:
                    async with stream:
                        target = await _answer(stream, state)
                    if target is not None and not found:
                        found.append(target)
                        tg.cancel_scope.cancel()

                async def accept(listener: anyio.abc.SocketListener) -> None:
                    while True:
                        stream = await listener.accept()
                        tg.start_soon(serve, stream)

                for listener in listeners:
                    tg.start_soon(accept, listener)
        finally:
            for listener in listeners:
                await listener.aclose()
        return found[0]

    def close(self) -> None:
        """Give the port back (idempotent)."""
        sockets, self._sockets = self._sockets, []
        for sock in sockets:
            sock.close()


def _callback_page(query: dict[str, list[str]]) -> bytes:
    """The page the browser shows once it came back with the awaited state."""
    if query.get("code"):
        return AUTHORIZED_PAGE
    error = (query.get("error") or ["no code in the redirect"])[0]
    return _page("400 Bad Request", f"Not authorized: the authorization server answered {error}.")


async def _answer(stream: anyio.abc.SocketStream, state: str | None) -> str | None:
    """Answer one connection; the callback's request target if it is the awaited one."""
    head = b""
    with anyio.move_on_after(HEAD_TIMEOUT):
        while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
            try:
                head += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    parts = head.split(b"\r\n", 1)[0].split(b" ")
    target = parts[1].decode("ascii", "replace") if len(parts) == 3 else ""
    if parts[0] != b"GET" or urlsplit(target).path != CALLBACK_PATH:
        answer, awaited = _NOT_FOUND, None
    else:
        query = parse_qs(urlsplit(target).query)
        if state is not None and query.get("state") != [state]:
            answer, awaited = _WRONG_STATE, None
        else:
            answer, awaited = _callback_page(query), target
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(answer)
    return awaited
