"""The pool's side of remote servers that need authorization: which ones, authorizing
one from Python, and noticing a grant kept since (``nativemcp auth login`` in another
process) when the pool lists or calls tools, so no restart is needed. The same look
before a listing reads again a 2026-07-28 server's tool list past its ``ttlMs``.

`WorkerPool` takes these methods from `PoolAuthorization`; the waiting and the new
connection are the server's (``external/oauth/_authorization_wait``).
"""

from __future__ import annotations

import contextlib

from nativemcp.protocol import SEPARATOR, UnknownTool, safe_server_name

from ._catalog import Catalog, CatalogEntry
from ._handle import ServerHandle, find_server
from .external import ExternalServer, NeedsAuthorization, RedirectHook

__all__ = ["PoolAuthorization"]


class PoolAuthorization:
    """`WorkerPool`'s OAuth methods (a mixin: it reads the pool's handles)."""

    _handles: dict[str, ServerHandle]
    _catalog: Catalog
    _closed: bool
    _oauth_redirect: RedirectHook | None

    @property
    def needs_authorization(self) -> dict[str, str]:
        """The remote servers waiting for someone to authorize nativemcp, with the reason.

        ``nativemcp auth login SERVER`` (then the pool's next use of the server) or
        ``await pool.authorize(SERVER)`` authorizes one; until then its one listed tool
        says so."""
        return {
            name: handle.needs_authorization
            for name, handle in self._handles.items()
            if isinstance(handle, ExternalServer) and handle.needs_authorization is not None
        }

    async def authorize(self, name: str, /, redirect: RedirectHook | None = None) -> None:
        """Authorize remote server ``name`` now, while the pool runs.

        A grant kept since the server gave up (``nativemcp auth login`` in another
        process) is used; else ``redirect`` (default: the pool's ``oauth_redirect``) is
        given the authorization URL, as at start. Once authorized, the server's tools
        take the place of its ``needs_authorization`` tool in the catalog. A server that
        is authorized already is left as it is.

        Raises:
            UnknownServer: no server ``name``; ServerClosed: the pool is closed.
            ValueError: ``name`` is not a remote server with an ``"oauth"`` entry.
            NeedsAuthorization: still not authorized: no grant kept and no hook to ask
                a person, or the authorization server refused, or nobody came back.
        """
        handle = find_server(self._handles, name, closed=self._closed)
        if not isinstance(handle, ExternalServer) or handle.authorization is None:
            raise ValueError(
                f"server {name!r} does not sign in with OAuth (a remote server whose "
                'mcpServers entry has "oauth" does)'
            )
        if not await handle.reauthorize(redirect or self._oauth_redirect):
            reason = handle.needs_authorization or "not authorized"
            if redirect is None and self._oauth_redirect is None:
                reason += "; no grant is kept and the pool has no oauth_redirect to ask"
            raise NeedsAuthorization(name, reason)

    async def _reauthorized(self) -> bool:
        """Freshen each external server (`ExternalServer.freshen`: one that needs
        authorization tries a grant kept now; a tool list past its ``ttlMs`` is read
        again); whether the tools of one of them may have changed."""
        changed = False
        for handle in list(self._handles.values()):
            if isinstance(handle, ExternalServer):
                changed = await handle.freshen() or changed
        return changed

    async def _catalog_entry(self, full_name: str) -> CatalogEntry:
        """The catalog entry of ``full_name``, looked for again once a server that
        needed authorization is authorized (its tools were not listed before).

        Raises:
            UnknownTool: no such full name, even after that.
        """
        try:
            return self._catalog.entry(full_name)
        except UnknownTool as unknown:
            if await self._reauthorized():
                with contextlib.suppress(UnknownTool):
                    return self._catalog.entry(full_name)
            waiting = self._waiting_placeholder(full_name)
            if waiting is None:
                raise unknown from None
            return waiting

    def _waiting_placeholder(self, full_name: str) -> CatalogEntry | None:
        """The ``needs_authorization`` tool of the server ``full_name`` is of, when that
        server still waits for authorization: its tools are not listed, yet a call to
        one gets the needs-authorization text as a tool error, as every call to it does
        (None: ``full_name`` is of no such server)."""
        for name, handle in self._handles.items():
            if not isinstance(handle, ExternalServer) or handle.needs_authorization is None:
                continue
            prefix = f"{safe_server_name(name)}{SEPARATOR}"  # as the catalog names its tools
            if full_name.startswith(prefix):
                for placeholder in handle.tools:  # the one tool it lists while it waits
                    with contextlib.suppress(UnknownTool):
                        return self._catalog.entry(prefix + placeholder.name)
        return None
