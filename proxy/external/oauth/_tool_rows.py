"""The tools of a per-user server, kept beside the grants, so every serve process lists
them.

A server that serve calls as each of its users (``"grantScope": "user"``) lists its
tools only on a user's connection. Serve's processes (``--workers N``, replicas behind a
load balancer) share the grants, so a user who consented through one process is called
through another unasked; that other process must know the server's tools too, or it
lists only ``needs_authorization`` and calls to the real tools are unknown there. So a
connection's tool list is a row beside the grants (`ToolRows`, in the `GrantPlace`'s
`GrantPlace.TOOLS` table: the data folder's SQLite file, or ``--database-url``'s
PostgreSQL), one per entry name and URL, with the server's instructions and when it was
written. The row holds no user's data: the tools are the server's, as its entry's
filters allowed them.

A row is read as untrusted input: one that is not a JSON list of tools (a damaged
file, another version's writer, a hostile hand) is logged and ignored, never raised.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

import msgspec

from nativemcp.protocol import Tool

from ._grant_rows import GrantPlace

__all__ = ["KnownTools", "ToolRows"]

_logger = logging.getLogger("nativemcp.external")

_DECODER: Final = msgspec.json.Decoder(list[Tool])


@dataclass(frozen=True)
class KnownTools:
    """A server's tools as a connection listed them, and its instructions."""

    tools: list[Tool]
    instructions: str
    updated_at: float


class ToolRows:
    """The per-user servers' tool lists in ``place`` (its `GrantPlace.TOOLS` table).
    Every method blocks (call it in a thread)."""

    def __init__(self, place: GrantPlace) -> None:
        self.place = place
        self.table = place.TOOLS

    def write(self, server: str, resource: str, tools: list[Tool], instructions: str) -> None:
        """Keep ``tools`` (and ``instructions``) as what ``server`` at ``resource``
        lists, replacing what was kept."""
        sql = (
            f"INSERT INTO {self.table} (server, resource, tools_json, instructions, updated_at)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (server, resource) DO UPDATE SET"
            " tools_json = excluded.tools_json, instructions = excluded.instructions,"
            " updated_at = excluded.updated_at"
        )
        document = msgspec.json.encode(tools).decode()
        self.place.run(sql, [server, resource, document, instructions, time.time()])

    def read(self, server: str, resource: str) -> KnownTools | None:
        """What ``server`` at ``resource`` lists, as kept (None: nothing kept, or a row
        that is not a list of tools: logged)."""
        sql = (
            f"SELECT tools_json, instructions, updated_at FROM {self.table}"
            " WHERE server = %s AND resource = %s"
        )
        rows, _ = self.place.run(sql, [server, resource])
        if not rows:
            return None
        document, instructions, updated_at = rows[0]
        try:
            # SQLite keeps any type in any column: a hostile row may hold anything.
            known = KnownTools(_DECODER.decode(document), str(instructions), float(updated_at))
        except (msgspec.DecodeError, TypeError, ValueError) as exc:
            _logger.warning(
                "MCP server %r: the tool list kept for it is not a list of tools (%s); "
                "it lists its sign-in tool until a user connects",
                server,
                exc,
            )
            return None
        return known
