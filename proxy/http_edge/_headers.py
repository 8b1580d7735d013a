"""One request header read from an ASGI scope, and header values as RFC 9110 reads them."""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["header_value", "trimmed_headers"]

_PADDING = (0x20, 0x09)
"""Space and horizontal tab: the whitespace a field value may have around it."""


def header_value(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes, as ASGI gives names) in
    ``scope``, decoded as latin-1 as HTTP/1.1 allows; None when the request has none."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def trimmed_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with the whitespace around each value dropped (RFC 9110 §5.5: it is
    not part of the value). h11 drops it as it parses; llhttp (uvicorn's httptools,
    which uvicorn picks wherever it is installed) keeps what follows a value, so an app
    would read ``Mcp-Name: tool `` as a name that does not match the body's. The list
    itself where no value has any (the common case: nothing is copied)."""
    for _, value in headers:
        if value and (value[0] in _PADDING or value[-1] in _PADDING):
            return [(key, value.strip(b" \t")) for key, value in headers]
    return headers
