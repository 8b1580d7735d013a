"""Serve's callback for a user's consent to an upstream server (``"grantScope": "user"``).

The upstream's authorization server sends the user's browser back to
``<serve's origin>/oauth/callback?code=…&state=…``. That request carries no bearer
token (a browser follows a redirect), so `ConsentCallback` answers it before the
resource server's check: the ``state`` finds the pending consent it was made for (bound
to the user and the call that asked, used once, expiring), in this process or in
another sharing the grants (``--workers N``, replicas: `Consents` keeps it in rows
beside them), whose provider then trades the code, with its PKCE verifier, for the
user's tokens. The browser gets a short page;
nothing of the grant is in it.

Serve's origin, for the redirect URI, is ``--auth-resource``'s where it is given, else
learnt from the first request that carries a valid token (`ConsentOrigin`, inside the
resource server's check: an unauthenticated request cannot set it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ...external import CALLBACK_ROUTE, Consents
from ...http_edge import respond
from ._resource_server import Authorization, caller_from_scope, resource_url

__all__ = ["ConsentCallback", "ConsentOrigin", "callback_url"]

_DONE: Final = (
    "<!doctype html><title>Authorized</title><p>Authorized. You can close this page and "
    "go back: the call goes on (or call the tool again)."
)
_UNKNOWN: Final = (
    "<!doctype html><title>Not authorized</title><p>This sign-in link was used already, "
    "has expired or was not made by this server. Call the tool again for a new one."
)


def callback_url(authorization: Authorization, scope: Scope) -> str:
    """Serve's consent callback URL, at the origin of its resource URL."""
    parts = urlsplit(resource_url(authorization, scope))
    return f"{parts.scheme}://{parts.netloc}{CALLBACK_ROUTE}"


async def _page(send: Send, status: int, html: str) -> None:
    body = html.encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"referrer-policy", b"no-referrer"),
    ]
    await respond(send, status, body, headers)


class ConsentCallback:
    """ASGI middleware, outermost: ``GET /oauth/callback`` finishes a pending consent
    of ``consents()`` (the pool's per-user servers'); everything else passes on."""

    def __init__(self, app: ASGIApp, consents: Callable[[], Iterable[Consents]]) -> None:
        self.app = app
        self._consents = consents

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the callback, or pass the request on."""
        if scope["type"] != "http" or scope.get("path") != CALLBACK_ROUTE:
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "GET":
            await _page(send, 405, "<!doctype html><p>GET only.")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        returned_to = f"{CALLBACK_ROUTE}?{query}"
        for consents in self._consents():
            if await consents.finish(returned_to):
                await _page(send, 200, _DONE)
                return
        await _page(send, 400, _UNKNOWN)


class ConsentOrigin:
    """ASGI middleware inside the token check: tells ``consents()`` serve's callback
    URL from the first authenticated request, when ``--auth-resource`` did not."""

    def __init__(
        self,
        app: ASGIApp,
        consents: Callable[[], Iterable[Consents]],
        authorization: Authorization,
    ) -> None:
        self.app = app
        self._consents = consents
        self._authorization = authorization

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Note the callback URL (once), then pass the request on."""
        if scope["type"] == "http" and caller_from_scope(scope) is not None:
            for consents in self._consents():
                if consents.callback_url is None:
                    consents.callback_url = callback_url(self._authorization, scope)
        await self.app(scope, receive, send)
