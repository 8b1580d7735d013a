"""`ExternalHandle`: what the pool's handles of external MCP servers share, whether one
connection serves every caller (`ExternalServer`) or each user has their own
(`UserServers`)."""

from __future__ import annotations

from nativemcp.protocol import BackendType

from .._handle import CallOptions, UnwrappingHandle

__all__ = ["ExternalHandle"]


class ExternalHandle(UnwrappingHandle):
    """An external MCP server's handle: a typed call unwraps the response, the tools'
    type references are never imported, and there is no session scoping to switch (the
    server knows nothing of the pool's sessions)."""

    backend = BackendType.EXTERNAL_MCP
    trusts_type_refs = False
    description: str
    """The server's ``instructions`` ('' until a connection read them, or if it sent
    none)."""

    async def freshen(self) -> bool:
        """Before the pool reads the tools (`Authorizations.freshen`): catch up with
        what changed elsewhere; whether the tools may have changed."""
        raise NotImplementedError

    async def get_service_context(self, options: CallOptions) -> str:
        """The server's ``instructions``, as the (first) connection read them."""
        return self.description

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, options: CallOptions
    ) -> None:
        """External servers have no session scoping; nothing to do."""
