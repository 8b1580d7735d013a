"""A whole HTTP response written to an ASGI ``send`` at once."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import Send

__all__ = ["respond"]


async def respond(
    send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``status`` with ``headers`` (as given, in order), then ``body``, in one
    body message: the short answers middleware gives itself (an auth error, a page, a
    refusal)."""
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})
