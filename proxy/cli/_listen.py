"""A listening socket bound before a verb says where it serves.

``serve --transport http`` and ``console`` bind first and announce after, so a port in
use is one line of error (exit status 2) and never a URL that answers nothing.
"""

from __future__ import annotations

import socket

__all__ = ["listen"]


def listen(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: any free port) and listening, with
    room for ``backlog`` connections not yet accepted.

    Raises:
        OSError: it cannot bind (the port is in use, the address is not this
            machine's...); the message names the address and the reason, in one line.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
