"""DNS-rebinding checks for the HTTP servers of the serve and console rooms.

A web page at ``attacker.example`` can make its name resolve to 127.0.0.1 and then
send requests to a local server from the browser, as a page of its own origin. The
request still says where it was meant to go: its ``Host`` is ``attacker.example:PORT``
and a script's ``Origin`` is ``http://attacker.example:PORT``. Local servers accept
their local names only (plus an allow-list): a wrong Host is answered 421, a wrong
Origin 403, as the official SDK's transport security does (its checks are used here).

Only the serve and console rooms import this module (it loads the SDK's server side).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOCAL_HOSTS", "RebindingGuard", "local_only"]

LOCAL_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")
"""Host names that reach this machine only: accepted with any port."""


def local_only(
    allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """The SDK's settings accepting the local names on any port, plus the allow-lists
    (each ``host:port``, or ``host:*`` for any port; origins as ``scheme://host:port``)."""
    hosts = [*LOCAL_HOSTS, *(f"{h}:*" for h in LOCAL_HOSTS), *allowed_hosts]
    origins = [
        *(f"{scheme}://{h}" for scheme in ("http", "https") for h in LOCAL_HOSTS),
        *(f"{scheme}://{h}:*" for scheme in ("http", "https") for h in LOCAL_HOSTS),
        *allowed_origins,
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class RebindingGuard:
    """ASGI middleware: every HTTP request with a foreign Host gets 421, with a foreign
    Origin 403, before it reaches the app (or its authentication)."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self._app = app
        self._checks = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._checks.validate_request(Request(scope), is_post=False)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)
