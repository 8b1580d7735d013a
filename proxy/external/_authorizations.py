"""The pool's side of remote servers that need authorization: which ones, authorizing
one from Python, and noticing a grant kept since (``nativemcp auth login`` in another
process) when the pool lists or calls tools, so no restart is needed. The same look
before a listing reads again a 2026-07-28 server's tool list past its ``ttlMs``, and
learns a per-user server's tools that a connection at another serve process listed.

`Authorizations` is a part `WorkerPool` holds over its handles; the waiting and the new
connection are each server's (``external/oauth/_authorization_wait``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nativemcp.protocol import SEPARATOR, safe_server_name

from .._handle import ServerHandle, find_server
from ._external_handle import ExternalHandle
from ._server import ExternalServer
from .oauth import NeedsAuthorization, RedirectHook

__all__ = ["Authorizations"]


class Authorizations:
    """The OAuth side of a pool's servers: ``handles`` (the pool's, read as they are
    now), ``redirect`` (the pool's hook to ask a person) and ``closed`` (whether the
    pool is closed, for the errors of `authorize`)."""

    def __init__(
        self,
        handles: Mapping[str, ServerHandle],
        *,
        redirect: RedirectHook | None,
        closed: Callable[[], bool],
    ) -> None:
        self._handles = handles
        self._redirect = redirect
        self._closed = closed

    def _external(self) -> list[tuple[str, ExternalServer]]:
        return [(n, h) for n, h in self._handles.items() if isinstance(h, ExternalServer)]

    def waiting(self) -> dict[str, str]:
        """The remote servers waiting for someone to authorize nativemcp, with the reason."""
        return {
            name: handle.needs_authorization
            for name, handle in self._external()
            if handle.needs_authorization is not None
        }

    async def authorize(self, name: str, redirect: RedirectHook | None = None) -> None:
        """Authorize remote server ``name`` now (`WorkerPool.authorize`)."""
        handle = find_server(self._handles, name, closed=self._closed())
        if not isinstance(handle, ExternalServer) or handle.authorization is None:
            raise ValueError(
                f"server {name!r} does not sign in with OAuth (a remote server whose "
                'mcpServers entry has "oauth" does)'
            )
        if not await handle.reauthorize(redirect or self._redirect):
            reason = handle.needs_authorization or "not authorized"
            if redirect is None and self._redirect is None:
                reason += "; no grant is kept and the pool has no oauth_redirect to ask"
            raise NeedsAuthorization(name, reason)

    async def freshen(self) -> bool:
        """Freshen each external server (`ExternalServer.freshen`: one that needs
        authorization tries a grant kept now; a tool list past its ``ttlMs`` is read
        again; `UserServers.freshen`: a per-user server's tools that another process
        listed); whether the tools of one of them may have changed."""
        changed = False
        for handle in self._handles.values():  # on every listing: one pass
            if isinstance(handle, ExternalHandle):
                changed = await handle.freshen() or changed
        return changed

    def placeholders(self, full_name: str) -> list[str]:
        """The full name of the ``needs_authorization`` tool of the server ``full_name``
        is of, when that server still waits for authorization: its tools are not listed,
        yet a call to one gets the needs-authorization text as a tool error, as every
        call to it does (empty: ``full_name`` is of no such server)."""
        for name, handle in self._external():
            if handle.needs_authorization is None:
                continue
            prefix = f"{safe_server_name(name)}{SEPARATOR}"  # as the catalog names its tools
            if full_name.startswith(prefix):
                # The one tool it lists while it waits.
                return [prefix + placeholder.name for placeholder in handle.tools]
        return []
