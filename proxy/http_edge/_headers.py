"""One request header read from an ASGI scope."""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["header_value"]


def header_value(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes, as ASGI gives names) in
    ``scope``, decoded as latin-1 as HTTP/1.1 allows; None when the request has none."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None
