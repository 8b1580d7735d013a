"""OAuth grants in PostgreSQL, for a pool with a ``database_url``: replicas share them.

One row per issuer and client (`GRANTS_TABLE`), the grant as JSON, as the grant files
hold it: a ``nativemcp auth login`` on one machine serves every replica, and a token
one replica refreshes is the one the others read next (the store drops only a token
this process used: see `GrantStore.forget_tokens`).

A grant is read when a server connects, refreshes or is authorized, a few times an
hour: each read or write opens a connection of its own (no pool to keep open or
close) and runs in one statement or transaction. These are short blocking calls, as
the grant files' reads and writes are. The table is made once per process and URL,
under an advisory lock, as the built-in servers' schemas are. psycopg loads only here,
and only for a pool with a ``database_url``. A database that cannot be reached is a
`DatabaseUnavailable` naming it without its password.
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

from ._token_store import GRANTS_FOLDER, GrantPlace, StoredGrant

if TYPE_CHECKING:
    import psycopg

__all__ = ["GRANTS_TABLE", "GrantTable", "grant_place"]

GRANTS_TABLE: Final = "nativemcp_oauth_grants"
"""The table of OAuth grants (issuer, client id, the grant as JSON)."""
CONNECT_TIMEOUT: Final = 5
"""Seconds to wait for the database to accept a connection."""

_MADE: set[str] = set()
_MAKING: Final = threading.Lock()


class GrantTable:
    """The `GrantPlace` of a pool with a ``database_url`` (each method raises
    `DatabaseUnavailable` when the database cannot be reached, or psycopg is missing)."""

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
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT) as conn:
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
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {GRANTS_TABLE} ("
                    " issuer TEXT NOT NULL, client_id TEXT NOT NULL, grant_json TEXT NOT NULL,"
                    " updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
                    " PRIMARY KEY (issuer, client_id))"
                )
            _MADE.add(self.url)

    def grants(self) -> list[StoredGrant]:
        """Every grant kept (a row that is not a JSON object is skipped)."""
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT grant_json FROM {GRANTS_TABLE} ORDER BY issuer, client_id"
            ).fetchall()
        found: list[StoredGrant] = []
        for (text,) in rows:
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict):
                found.append(StoredGrant(data))
        return found

    def put(self, grant: StoredGrant) -> None:
        """Keep ``grant`` in place of the row of its issuer and client."""
        issuer, client_id = grant.key
        with self._connection() as conn, conn.transaction():
            conn.execute(
                f"INSERT INTO {GRANTS_TABLE} (issuer, client_id, grant_json)"
                " VALUES (%s, %s, %s) ON CONFLICT (issuer, client_id) DO UPDATE"
                " SET grant_json = excluded.grant_json, updated_at = now()",
                (issuer, client_id, json.dumps(grant.data, sort_keys=True)),
            )

    def delete(self, key: tuple[str, str]) -> None:
        """Drop the row of ``key``."""
        with self._connection() as conn, conn.transaction():
            conn.execute(f"DELETE FROM {GRANTS_TABLE} WHERE issuer = %s AND client_id = %s", key)


def grant_place(data_dir: Path | None, database_url: str | None) -> Path | GrantPlace | None:
    """Where a pool keeps its grants: the ``database_url``'s table, else the data
    folder's `GRANTS_FOLDER`, else nowhere but memory (None)."""
    if database_url:
        return GrantTable(database_url)
    return data_dir / GRANTS_FOLDER if data_dir is not None else None
