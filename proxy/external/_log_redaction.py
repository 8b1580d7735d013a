"""The SDK's and httpx's own log lines, with the secrets of live entries written back.

The official client logs the endpoint it connects to (``mcp.client.streamable_http``
at debug), and httpx every request line with its URL (``httpx`` at info): with a
``${VAR}`` expanded into a URL's query, these would print the value. While an entry
with expanded variables is connected, a filter on those loggers writes each value back
as its ``${VAR}`` (`ExternalServerSpec.redact`), in the message and in the text of an
exception logged with it (``GET stream error`` at debug, with an httpx error naming the
URL). A logger's filter does not reach its children, so each logger that may print a
URL is named.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterator
from typing import Final

from ._mcp_config import ExternalServerSpec

__all__ = ["secrets_kept_out_of_logs", "shown_cause"]

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
        redacted = self._redact(text)
        if redacted != text:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None:
            # The exception's text (an httpx error names the URL) is formatted by the
            # handler, past this filter: format it here, and hand on only the scrubbed
            # text (`Formatter.format` prints ``exc_text``; the exception itself, which
            # a handler could read, no longer travels with the record).
            shown = record.exc_text or _FORMATTER.formatException(record.exc_info)
            scrubbed = self._redact(shown)
            if scrubbed != shown:
                record.exc_info, record.exc_text = None, scrubbed
        elif record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True

    def _redact(self, text: str) -> str:
        for spec in self.specs:
            text = spec.redact(text)
        return text


_FILTER: Final = _Redacting()
_FORMATTER: Final = logging.Formatter()


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


def shown_cause(spec: ExternalServerSpec, exc: BaseException) -> BaseException | None:
    """``exc`` as the cause of an error we raise, unless its traceback (causes and
    groups included) shows a value of ``spec``'s variables: the SDK's and httpx's
    messages may echo the expanded URL or command."""
    if not spec.expanded:
        return exc
    text = "".join(traceback.format_exception(exc))
    return exc if spec.redact(text) == text else None
