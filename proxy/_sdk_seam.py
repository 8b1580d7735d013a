"""Every private part of the official `mcp` SDK that nativemcp touches, in one place.

The SDK's public API does not offer these; each is read through one function here, so
an SDK release that changes one breaks one module, and ``tests/project/test_sdk_seam.py``
checks each against the installed SDK (it fails on the release that changes it, before
a user meets the change). Anything new that reaches into the SDK goes here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["client_connection", "send_raw_request"]


def client_connection(session: object) -> Any | None:
    """The SDK's per-client `Connection` behind a server request context's session
    (``ctx.session``): one object per connected client, which carries its declared
    capabilities and session id, and which serve keys per-client state by (log level,
    subscriptions, MCP Apps declared at the handshake). None where there is none.

    The SDK keeps it as ``ServerSession._connection`` and names only the session in a
    request context."""
    return getattr(session, "_connection", None)


async def send_raw_request(
    client: Client, method: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """Send ``method`` through ``client``'s dispatcher and return the raw result.

    For the one answer the SDK's typed requests would refuse: a 2025-11-25
    task-augmented ``tools/call``, answered with a ``CreateTaskResult`` that its
    ``tools/call`` check rejects. ``client.session._dispatcher`` is private."""
    return await client.session._dispatcher.send_raw_request(method, params, {})
