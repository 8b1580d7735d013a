"""The SDK's and httpx's own log lines, with the secrets of live entries written back.

The official client logs the endpoint it connects to (``mcp.client.streamable_http``
at debug), and httpx every request line with its URL (``httpx`` at info): with a
``${VAR}`` expanded into a URL's query, these would print the value. While an entry
with expanded variables is connected, a filter on those loggers writes each value back
as its ``${VAR}`` (`ExternalServerSpec.redact`). A logger's filter does not reach its
children, so each logger that may print a URL is named.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Final

from ._mcp_config import ExternalServerSpec

__all__ = ["secrets_kept_out_of_logs"]

LOGGERS: Final = (
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.auth.oauth2",
    "mcp.client.client",
    "mcp.client.session",
    "mcp.shared.jsonrpc_dispatcher",
    "client",
    "httpx",
    "httpx2",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore2.connection",
    "httpcore2.http11",
)
"""The loggers of the client stack that may print a URL or a request."""


class _Redacting(logging.Filter):
    """Writes back the values of every live entry (once per connection: an entry may
    run twice)."""

    def __init__(self) -> None:
        super().__init__()
        self.specs: list[ExternalServerSpec] = []

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = text
        for spec in self.specs:
            redacted = spec.redact(redacted)
        if redacted != text:
            record.msg, record.args = redacted, None
        return True


_FILTER: Final = _Redacting()


@contextlib.contextmanager
def secrets_kept_out_of_logs(spec: ExternalServerSpec) -> Iterator[None]:
    """While inside, the client stack's log lines never show ``spec``'s secrets."""
    if not spec.expanded:
        yield
        return
    if not _FILTER.specs:
        for name in LOGGERS:
            logging.getLogger(name).addFilter(_FILTER)
    _FILTER.specs.append(spec)
    try:
        yield
    finally:
        _FILTER.specs.remove(spec)
        if not _FILTER.specs:
            for name in LOGGERS:
                logging.getLogger(name).removeFilter(_FILTER)
