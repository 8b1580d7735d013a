"""The scope map's check at the HTTP layer: a ``tools/call`` the caller's token does not
cover answers ``403`` with ``WWW-Authenticate: Bearer error="insufficient_scope",
scope="…"`` before anything runs, so an OAuth client can step up (ask its issuer for the
scope) and retry. The bridge checks again for what reaches it another way (a task).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from .._request_ids import read_body, replayed
from ._resource_server import (
    Authorization,
    caller_from_scope,
    challenge,
    metadata_url,
    resource_url,
    send_json,
)

__all__ = ["ScopeGate"]


class Catalog(Protocol):
    """What the gate needs of the bridge's served tools: a called name's full catalog
    name."""

    async def catalog_name(self, name: str) -> str | None:
        """The full catalog name of served tool ``name`` (None: not served here)."""
        ...


class _Params(msgspec.Struct):
    name: Any = None


class _Call(msgspec.Struct):
    """What is read of a message here: its method and, for a call, the tool's name."""

    method: Any = None
    params: _Params | None = None


def called_tool(body: bytes) -> str | None:
    """The tool a ``tools/call`` body names; None for anything else (the SDK judges it)."""
    try:
        message = msgspec.json.decode(body, type=_Call)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if message.method != "tools/call" or message.params is None:
        return None
    name = message.params.name
    return name if isinstance(name, str) else None


class ScopeGate:
    """Answers 403 to a ``tools/call`` whose tool needs scopes the caller's token lacks.

    Args:
        authorization: the OAuth settings (their scope map; where the metadata is).
        max_body_size: bodies larger than this are not read here (the endpoint
            answers them 413).
    """

    def __init__(self, authorization: Authorization, max_body_size: int) -> None:
        self.authorization = authorization
        self._max = max_body_size
        # Any caller lacking one of these may be refused some tool: only its POSTs are read.
        self._all = frozenset(authorization.scope_map.scopes_supported)

    async def __call__(
        self, app: ASGIApp, catalog: Catalog, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Serve one request through ``app``, unless it calls a tool it may not."""
        caller = caller_from_scope(scope)
        if caller is None or scope["method"] != "POST" or self._all <= caller.scopes:
            await app(scope, receive, send)
            return
        read, body = await read_body(receive, self._max)
        name = called_tool(body) if body is not None else None
        full = await catalog.catalog_name(name) if name is not None else None
        scopes = self.authorization.scope_map
        refused = scopes.refusal(full, caller.scopes) if full is not None else None
        if full is not None and refused is not None:
            where = metadata_url(resource_url(self.authorization, scope))
            # The tool's whole requirement: a client asks for it (with what it holds).
            needed = sorted(scopes.required(full))
            header = challenge(
                where, error="insufficient_scope", description=refused, scopes=needed
            )
            error = {
                "error": "insufficient_scope",
                "error_description": refused,
                "scope": " ".join(needed),
            }
            await send_json(send, 403, error, [(b"www-authenticate", header)])
            return
        await app(scope, replayed(read, receive), send)
