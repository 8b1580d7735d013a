"""DNS-rebinding checks for the HTTP servers of the serve and console rooms.

A web page at ``attacker.example`` can make its name resolve to 127.0.0.1 and then
send requests to a local server from the browser, as a page of its own origin. The
request still says where it was meant to go: its ``Host`` is ``attacker.example:PORT``
and a script's ``Origin`` is ``http://attacker.example:PORT``. Local servers accept
their local names only (plus an allow-list): a wrong Host is answered 421, a wrong
Origin 403, as the official SDK's transport security does (its checks are used here).

Host names are compared as DNS compares them: without regard to case, and with a
trailing dot (the fully qualified spelling, ``localhost.``) the same name. Each request's
Host is made canonical (`canonical_host`) before the SDK's exact comparison, and so is
every allowed name; nothing else is loosened (``localhost.evil.test`` stays foreign).
A Host that is no plain ``host[:port]`` is refused before the SDK's check: that check
reads ``host:*`` as "the host, a colon, then anything", so ``127.0.0.1:1; x`` passed it,
and Host values go on into URLs, headers and policies.

Only the serve and console rooms import this module (it loads the SDK's server side).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "LOCAL_HOSTS",
    "PLAIN_HOST",
    "CanonicalHost",
    "RebindingGuard",
    "canonical_host",
    "local_only",
]

LOCAL_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")
"""Host names that reach this machine only: accepted with any port."""
PLAIN_HOST: Final = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")
"""A plain ``host[:port]`` (group 1 the host): a DNS name, an IPv4 address or a bracketed
IPv6 address, and digits for the port; nothing that could end a URL, a header or a
policy directive."""


def canonical_host(host: str) -> str:
    """``host`` (a Host header value or an allowed ``host[:port]``) as DNS compares it:
    the name in lower case, one trailing dot dropped; the port (or ``*``) as given.
    ``LOCALHOST.:8000`` is ``localhost:8000``; ``[::1]:80`` keeps its brackets."""
    if host.startswith("["):
        end = host.find("]") + 1 or len(host)
        name, rest = host[:end], host[end:]
    else:
        name, colon, port = host.partition(":")
        rest = colon + port
    name = name.lower()
    # One dot only: `localhost..` is no spelling of `localhost`, and stays refused.
    if name.endswith(".") and name != ".":
        name = name[:-1]
    return name + rest


def local_only(
    allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """The SDK's settings accepting the local names on any port, plus the allow-lists
    (each ``host:port``, or ``host:*`` for any port; origins as ``scheme://host:port``)."""
    hosts = [
        *LOCAL_HOSTS,
        *(f"{h}:*" for h in LOCAL_HOSTS),
        *(canonical_host(h) for h in allowed_hosts),
    ]
    origins = [
        *(f"{scheme}://{h}" for scheme in ("http", "https") for h in LOCAL_HOSTS),
        *(f"{scheme}://{h}:*" for scheme in ("http", "https") for h in LOCAL_HOSTS),
        *allowed_origins,
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


_MISDIRECTED: Final = Response("Invalid Host header", status_code=421)
"""The SDK's answer to a foreign Host, given to a malformed one too."""


class CanonicalHost:
    """ASGI middleware: the request's Host header made canonical (`canonical_host`), so
    that the SDK's exact Host check accepts every spelling of an allowed name; a Host
    that is no plain ``host[:port]`` (`PLAIN_HOST`) is answered 421 here."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            for index, (key, value) in enumerate(headers):
                if key == b"host":
                    host = value.decode("latin-1")
                    if PLAIN_HOST.fullmatch(host) is None:
                        await _MISDIRECTED(scope, receive, send)
                        return
                    canonical = canonical_host(host).encode("latin-1")
                    if canonical != value:
                        headers = [*headers]
                        headers[index] = (key, canonical)
                        scope = {**scope, "headers": headers}
                    break
        await self._app(scope, receive, send)


class RebindingGuard:
    """ASGI middleware: every HTTP request with a foreign Host (or one that is no plain
    ``host[:port]``, `CanonicalHost`) gets 421, with a foreign Origin 403, before it
    reaches the app (or its authentication)."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self._app = app
        self._checks = TransportSecurityMiddleware(settings)
        self._canonical = CanonicalHost(self._guarded)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._canonical(scope, receive, send)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._checks.validate_request(Request(scope), is_post=False)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)
