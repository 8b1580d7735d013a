"""Log messages to the client that made a call, at or above the level it asked for.

A 2025-11-25 client sets its level once per connection (``logging/setLevel``; none set:
every message); a 2026-07-28 request names its own in ``_meta`` (none named: no log
messages, as SEP-2575 says). A tool's messages, whether it was called directly or from a
program (`run_code`), go out on the request's own stream.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from nativemcp.protocol import LOG_LEVELS

from .._sdk_seam import client_connection

__all__ = ["ClientLogs", "logged", "request_log_floor"]


class ClientLogs:
    """Each connection's level (``logging/setLevel``) and the sending of log messages."""

    def __init__(self) -> None:
        # Per client connection; the connection object is the key.
        self._levels: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def set_level(self, ctx: ServerRequestContext[Any], level: str) -> None:
        """Send the connection of ``ctx`` only log messages at ``level`` or above."""
        connection = client_connection(ctx.session)
        if connection is not None:
            self._levels[connection] = LOG_LEVELS.index(level)

    def floor(self, ctx: ServerRequestContext[Any]) -> int | None:
        """The lowest level (its index in `LOG_LEVELS`) the request of ``ctx`` gets
        messages at; None: none."""
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return request_log_floor(dict(ctx.meta or {}))
        connection = client_connection(ctx.session)
        return self._levels.get(connection, 0) if connection is not None else 0

    async def send(
        self, ctx: ServerRequestContext[Any], level: str, data: Any, logger: str | None
    ) -> None:
        """Send a tool's log message on the stream of the request of ``ctx``, if its
        level is one the request gets."""
        if not logged(level, self.floor(ctx)):
            return
        await ctx.session.send_notification(
            types.LoggingMessageNotification(
                params=types.LoggingMessageNotificationParams(
                    level=level,  # type: ignore[arg-type]
                    data=data,
                    logger=logger,
                )
            ),
            related_request_id=ctx.request_id,
        )


def request_log_floor(meta: Mapping[str, Any] | None) -> int | None:
    """The lowest log level (its index in `LOG_LEVELS`) a 2026-07-28 request gets: the
    one its ``_meta`` names; None (no log messages) without one, as SEP-2575 says."""
    asked = (meta or {}).get(types.LOG_LEVEL_META_KEY)
    return LOG_LEVELS.index(asked) if asked in LOG_LEVELS else None


def logged(level: str, floor: int | None) -> bool:
    """Whether a log message at ``level`` goes to a client whose floor is ``floor``."""
    rank = LOG_LEVELS.index(level) if level in LOG_LEVELS else 1
    return floor is not None and rank >= floor
