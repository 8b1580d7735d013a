"""The MCP session id a Streamable HTTP server issued to one connection.

The SDK's ``streamable_http_client`` keeps the ``Mcp-Session-Id`` it was given to
itself (no accessor in mcp 2.3), so `SessionId` reads it where it arrives: a response
hook on the HTTP client nativemcp builds for the connection. The call's client span
names it as ``mcp.session.id``, as the MCP semantic conventions ask "where there is
one" (a 2026-07-28 or stateless server issues none).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["SESSION_ID_HEADER", "SessionId"]

SESSION_ID_HEADER: Final = "mcp-session-id"
"""The Streamable HTTP response header that carries the session id (case-insensitive)."""


class SessionId:
    """The session id the server last issued on one HTTP client (None: none yet)."""

    def __init__(self) -> None:
        self.value: str | None = None

    @classmethod
    def of(cls, client: Any) -> SessionId:
        """A `SessionId` that follows the responses ``client`` (an ``httpx.AsyncClient``)
        receives from now on."""
        issued = cls()
        client.event_hooks["response"].append(issued._on_response)
        return issued

    async def _on_response(self, response: Any) -> None:
        # An error answer (a 404 for an expired session) carries none: keep the last
        # one, which the next successful answer replaces if the server issued another.
        value = response.headers.get(SESSION_ID_HEADER)
        if value:
            self.value = value
