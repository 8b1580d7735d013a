"""What an MCP client said it can answer: a tool asks it only for that.

A client declares ``sampling``, ``elicitation`` (``form``, ``url``) and ``roots`` in its
capabilities (at the handshake, or in each request's envelope on 2026-07-28). A server
must not send a request the client did not declare: some clients answer it with an error
the tool cannot tell from a refusal, others with a silent ``cancel``. `require_capability`
turns an undeclared one into a `ClientRequestError` the tool (and its model) can read.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from nativemcp.protocol import ClientRequestError

from .._sdk_seam import client_connection

__all__ = ["client_capabilities", "missing_capability", "require_capability"]


def client_capabilities(ctx: ServerRequestContext[Any]) -> types.ClientCapabilities | None:
    """What the client of ``ctx`` declared (None: nothing, or not known)."""
    connection = client_connection(ctx.session)
    found = getattr(connection, "client_capabilities", None)
    return found if isinstance(found, types.ClientCapabilities) else None


def missing_capability(
    declared: types.ClientCapabilities | None, method: str, params: dict[str, Any]
) -> str | None:
    """What ``declared`` lacks for a ``method`` request with ``params`` (as the client's
    capability key, ``"sampling.tools"``), or None when the client can answer it."""
    have = declared or types.ClientCapabilities()
    if method == "sampling/createMessage":
        if have.sampling is None:
            return "sampling"
        if params.get("tools") and have.sampling.tools is None:
            return "sampling.tools"
        context = params.get("includeContext")
        if context not in (None, "none") and have.sampling.context is None:
            return "sampling.context"
        return None
    if method == "elicitation/create":
        if have.elicitation is None:
            return "elicitation"
        if params.get("mode") == "url":
            return "elicitation.url" if have.elicitation.url is None else None
        # `elicitation: {}` is form mode (2025-11-25); a client that lists only `url`
        # has left form mode out.
        only_url = have.elicitation.url is not None and have.elicitation.form is None
        return "elicitation.form" if only_url else None
    if method == "roots/list":
        return "roots" if have.roots is None else None
    return None


def require_capability(ctx: ServerRequestContext[Any], method: str, params: dict[str, Any]) -> None:
    """Refuse a tool's request the client of ``ctx`` did not declare it can answer.

    Raises:
        ClientRequestError: the client lacks the capability (named, with the method).
    """
    missing = missing_capability(client_capabilities(ctx), method, params)
    if missing is not None:
        raise ClientRequestError(
            f"the client does not support {method}: it did not declare the "
            f"{missing!r} capability, so the request was not sent"
        )
