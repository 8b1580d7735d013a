"""OAuth grants in PostgreSQL, for a pool with a ``database_url``: replicas share them.

One row per grant (`GRANTS_TABLE`: user, issuer, client id, resource, version, the
grant as JSON), as `_grant_rows` describes: a ``nativemcp auth login`` on one machine
serves every replica, a token one replica refreshes is the one the others read next,
and a write is a compare-and-set on the row's version, so two replicas never overwrite
each other's tokens.

A grant is read when a server connects, refreshes or is authorized, a few times an
hour: each read or write opens a connection of its own (no pool to keep open or close)
and runs in one statement. These are blocking calls, made in a worker thread by
`GrantStore`. The table is made once per process and URL, under an advisory lock, as
the built-in servers' schemas are; the same transaction moves the rows of the earlier
table (`OLD_GRANTS_TABLE`, one row per issuer and client holding every server's
tokens) into rows of their own, and drops it. psycopg loads only here, and only for a
pool with a ``database_url``. Beside it, `CONSENTS_TABLE` holds the pending
consents (`_consent.ConsentRows`) and `TOOL_LISTS_TABLE` the per-user servers' tools
(`_tool_rows.ToolRows`), made in the same transaction. A database that cannot be
reached is a `DatabaseUnavailable` naming it without its password.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from nativemcp.protocol import DatabaseUnavailable
from nativemcp.workers import redact_url

from ._grant_rows import (
    GRANTS_FOLDER,
    GrantDatabase,
    GrantPlace,
    consent_table_sql,
    old_grant_rows,
    table_sql,
    tool_list_table_sql,
    write_sql,
)

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CONSENTS_TABLE",
    "GRANTS_TABLE",
    "OLD_GRANTS_TABLE",
    "TOOL_LISTS_TABLE",
    "GrantTable",
    "grant_place",
]

GRANTS_TABLE: Final = "nativemcp_grants"
"""The table of OAuth grants, one row per grant."""
CONSENTS_TABLE: Final = "nativemcp_consents"
"""The table of pending consents (a user's sign-in not back yet), beside the grants."""
TOOL_LISTS_TABLE: Final = "nativemcp_tool_lists"
"""The table of per-user servers' tools (what a connection listed), beside the grants."""
OLD_GRANTS_TABLE: Final = "nativemcp_oauth_grants"
"""The earlier versions' table (one row per issuer and client), moved on first use."""
CONNECT_TIMEOUT: Final = 5
"""Seconds to wait for the database to accept a connection."""

_MADE: set[str] = set()
_MAKING: Final = threading.Lock()


class GrantTable(GrantPlace):
    """The `GrantPlace` of a pool with a ``database_url`` (each method raises
    `DatabaseUnavailable` when the database cannot be reached, or psycopg is missing)."""

    TABLE = GRANTS_TABLE
    CONSENTS = CONSENTS_TABLE
    TOOLS = TOOL_LISTS_TABLE

    def __init__(self, url: str) -> None:
        self.url = url
        self.name = redact_url(url)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if importlib.util.find_spec("psycopg") is None:
            raise DatabaseUnavailable(
                self.name, "no PostgreSQL driver here: pip install 'nativemcp[postgres]'"
            )
        import psycopg

        try:
            with psycopg.connect(
                self.url, connect_timeout=CONNECT_TIMEOUT, autocommit=True
            ) as conn:
                self._make_table(conn)
                yield conn
        except psycopg.OperationalError as exc:
            password = psycopg.conninfo.conninfo_to_dict(self.url).get("password")
            reason = " ".join(str(exc).split()) or type(exc).__name__
            if password:
                reason = reason.replace(str(password), "***")
            raise DatabaseUnavailable(self.name, reason.replace(self.url, self.name)) from None

    def _make_table(self, conn: psycopg.Connection[Any]) -> None:
        with _MAKING:
            if self.url in _MADE:
                return
            with conn.transaction():
                # One maker at a time across every process sharing the database.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (GRANTS_TABLE,))
                conn.execute(table_sql(GRANTS_TABLE))
                conn.execute(consent_table_sql(CONSENTS_TABLE))
                conn.execute(tool_list_table_sql(TOOL_LISTS_TABLE))
                self._move_old_table(conn)
            _MADE.add(self.url)

    def _move_old_table(self, conn: psycopg.Connection[Any]) -> None:
        """Move the earlier table's grants into rows of their own, and drop it."""
        (found,) = conn.execute("SELECT to_regclass(%s)", (OLD_GRANTS_TABLE,)).fetchone() or (None,)
        if found is None:
            return
        for (text,) in conn.execute(f"SELECT grant_json FROM {OLD_GRANTS_TABLE}").fetchall():
            try:
                data = json.loads(text)
            except ValueError:
                continue
            for grant in old_grant_rows(data):
                conn.execute(*write_sql(GRANTS_TABLE, grant))
        conn.execute(f"DROP TABLE {OLD_GRANTS_TABLE}")

    def run(self, sql: str, params: list[Any]) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement (its own transaction): its rows, and how many it changed."""
        with self._connection() as conn:
            cursor = conn.execute(sql, params)
            rows = cursor.fetchall() if cursor.description is not None else []
            return [tuple(row) for row in rows], cursor.rowcount


def grant_place(data_dir: Path | None, database_url: str | None) -> GrantPlace:
    """Where a pool keeps its grants: the ``database_url``'s table, else the data
    folder's `GRANTS_FOLDER`, else memory (for this process's life)."""
    if database_url:
        return GrantTable(database_url)
    return GrantDatabase(data_dir / GRANTS_FOLDER if data_dir is not None else None)
