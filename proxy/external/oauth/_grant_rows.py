"""OAuth grants as rows: one row per grant, each updated by compare-and-set.

A grant is what one authorization server gave one client for one MCP server (the
resource), on behalf of one user: its key is (user, issuer, client id, resource), the
user None for the pool's own grant (``nativemcp auth login``). Its row holds the
client's registration, the tokens, and ``extra`` (any other field a grant carries, such
as DPoP key material), as one JSON document, and a ``version`` that every write raises
by one. A write names the version it read (`GrantPlace.write`): when another replica
wrote since, the write changes nothing and raises `StaleGrant`, and the writer reads
again. Two replicas refreshing two servers touch two rows; two refreshing one server
meet at its version, and only one wins (see `GrantStore.refresh_once` for how the
loser takes the winner's tokens instead of spending the rotated refresh token).

`GrantDatabase` keeps the rows in SQLite: ``grants.db`` in the data folder's
`GRANTS_FOLDER` (mode 0600, in a folder of mode 0700), or in memory for a pool without
a data folder. `_token_table.GrantTable` keeps them in PostgreSQL, for replicas.
Every method here blocks: `GrantStore` calls them in a worker thread, never on the
event loop. Nothing here logs a token.

The grant files of earlier versions (one JSON file per issuer and client, every
server's tokens in it) are moved into rows the first time the folder is opened: each of
their servers' tokens becomes a row of its own (user None), and the file goes once its
rows are committed. A row that exists already is not overwritten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DPOP_KEY",
    "GRANTS_DB",
    "GRANTS_FOLDER",
    "Grant",
    "GrantDatabase",
    "GrantKey",
    "GrantPlace",
    "StaleGrant",
    "consent_table_sql",
    "old_grant_rows",
    "tool_list_table_sql",
]

GRANTS_FOLDER: Final = "oauth"
"""The grants' folder under the data folder."""
GRANTS_DB: Final = "grants.db"
"""The SQLite file of grants in `GRANTS_FOLDER`."""
FILE_MODE: Final = 0o600
"""The grants' file is readable by its owner only."""
FOLDER_MODE: Final = 0o700
BUSY_SECONDS: Final = 30.0
"""How long a write waits for another process's write to the same file."""
DPOP_KEY: Final = "dpop_key"
"""The field of a grant's ``extra`` that holds the private JWK its tokens are bound to
(DPoP, RFC 9449; `GrantStore.dpop_key`), dropped with them."""
NO_USER: Final = ""
"""How the pool's own grant (user None) is kept: a key column cannot be NULL."""


class StaleGrant(Exception):
    """A grant changed since it was read (another replica wrote it): read it again."""

    def __init__(self, key: GrantKey) -> None:
        super().__init__(f"the grant of {key.resource} at {key.issuer} changed since it was read")
        self.key = key


@dataclasses.dataclass(frozen=True)
class GrantKey:
    """What names a grant: whose it is, who issued it, to which client, for which server."""

    user: str | None
    """The user it acts for (an opaque string, e.g. a caller's issuer and subject), or
    None: the pool's own grant."""
    issuer: str
    """The authorization server's issuer identifier."""
    client_id: str
    """The client id the issuer knows this client by."""
    resource: str
    """The MCP server's URL."""


@dataclasses.dataclass
class Grant:
    """One grant's row. ``version`` 0: not kept yet (a write inserts it)."""

    key: GrantKey
    client: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The client's registration, as the SDK's ``OAuthClientInformationFull`` dumps it
    (a configured client's secret is never kept: it stays in the configuration)."""
    tokens: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The SDK's ``OAuthToken`` fields, with ``expires_at`` (a time) for ``expires_in``;
    empty: registered, not authorized."""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Any other field of the grant (JSON), kept as it is by every write of the store."""
    version: int = 0
    refreshing_by: str | None = None
    """Who is refreshing the grant's tokens now (a `GrantStore`'s id), or None."""
    refreshing_until: float = 0.0
    """Until when that refresh holds the grant (its claim lapses then)."""
    updated_at: float = 0.0

    def document(self) -> str:
        """The row's JSON document (everything but the key and the version)."""
        data: dict[str, Any] = {"client": self.client, "tokens": self.tokens, "extra": self.extra}
        if self.refreshing_by is not None:
            data["refreshing"] = {"by": self.refreshing_by, "until": self.refreshing_until}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Grant | None:
        """The grant of a row (user, issuer, client id, resource, version, document,
        updated at); None when its document is damaged (it is skipped, not fatal)."""
        user, issuer, client_id, resource, version, text, updated_at = row
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        refreshing = data.get("refreshing") or {}
        return cls(
            GrantKey(None if user == NO_USER else user, issuer, client_id, resource),
            client=dict(data.get("client") or {}),
            tokens=dict(data.get("tokens") or {}),
            extra=dict(data.get("extra") or {}),
            version=int(version),
            refreshing_by=refreshing.get("by"),
            refreshing_until=float(refreshing.get("until") or 0.0),
            updated_at=float(updated_at or 0.0),
        )


# The columns of a row, in `Grant.from_row`'s order.
COLUMNS: Final = "user_key, issuer, client_id, resource, version, grant_json, updated_at"


def table_sql(table: str) -> str:
    """The grant table (SQLite and PostgreSQL alike)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        " user_key TEXT NOT NULL, issuer TEXT NOT NULL, client_id TEXT NOT NULL,"
        " resource TEXT NOT NULL, version BIGINT NOT NULL, grant_json TEXT NOT NULL,"
        " updated_at DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (user_key, issuer, client_id, resource))"
    )


def consent_table_sql(table: str) -> str:
    """The table of pending consents beside the grants (`_consent.ConsentRows`): the
    hash of each sign-in's ``state``, its expiry, and what the browser brought back to
    serve's callback (NULL: not back yet)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        " state_hash TEXT PRIMARY KEY, expires_at DOUBLE PRECISION NOT NULL, returned TEXT)"
    )


def tool_list_table_sql(table: str) -> str:
    """The table of per-user servers' tools beside the grants (`_tool_rows.ToolRows`):
    what a connection to each (entry name, URL) listed, as JSON, and its instructions,
    so every process sharing the grants lists them before a user connects there."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        " server TEXT NOT NULL, resource TEXT NOT NULL, tools_json TEXT NOT NULL,"
        " instructions TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (server, resource))"
    )


def find_sql(
    table: str,
    user: str | None,
    resource: str | None,
    client_id: str | None,
    every_user: bool,
) -> tuple[str, list[Any]]:
    """`GrantPlace.find`'s query (``%s`` parameters) and its parameters."""
    where: list[str] = []
    params: list[Any] = []
    for column, value, used in (
        ("user_key", NO_USER if user is None else user, not every_user),
        ("resource", resource, resource is not None),
        ("client_id", client_id, client_id is not None),
    ):
        if used:
            where.append(f"{column} = %s")
            params.append(value)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return f"SELECT {COLUMNS} FROM {table}{clause} ORDER BY updated_at DESC", params


def key_params(key: GrantKey) -> list[Any]:
    """A key's values, in the key columns' order."""
    return [NO_USER if key.user is None else key.user, key.issuer, key.client_id, key.resource]


KEY_WHERE: Final = "user_key = %s AND issuer = %s AND client_id = %s AND resource = %s"


def write_sql(table: str, grant: Grant) -> tuple[str, list[Any]]:
    """The compare-and-set of `GrantPlace.write` (``%s`` parameters): an insert that
    does nothing if the row exists (version 0), else an update at the version read.
    Either changes one row, or none when the grant is stale."""
    now = time.time()
    if grant.version == 0:
        sql = (
            f"INSERT INTO {table} ({COLUMNS}) VALUES (%s, %s, %s, %s, 1, %s, %s)"
            " ON CONFLICT DO NOTHING"
        )
        return sql, [*key_params(grant.key), grant.document(), now]
    sql = (
        f"UPDATE {table} SET version = version + 1, grant_json = %s, updated_at = %s"
        f" WHERE {KEY_WHERE} AND version = %s"
    )
    return sql, [grant.document(), now, *key_params(grant.key), grant.version]


def written(grant: Grant, changed: int) -> Grant:
    """``grant`` at its new version, once its write changed ``changed`` rows."""
    if changed != 1:
        raise StaleGrant(grant.key)
    return dataclasses.replace(grant, version=grant.version + 1, updated_at=time.time())


def old_grant_rows(data: Any) -> Iterator[Grant]:
    """The rows of an earlier version's grant (one issuer and client, every server's
    tokens): one per server it holds, of the pool's own grant (user None)."""
    if not isinstance(data, dict):
        return
    found = data.get("client")
    client: dict[str, Any] = found if isinstance(found, dict) else {}
    issuer = str(data.get("issuer") or "")
    client_id = str(client.get("client_id") or "")
    resources = data.get("resources")
    for resource, tokens in resources.items() if isinstance(resources, dict) else ():
        if issuer and isinstance(tokens, dict):
            key = GrantKey(None, issuer, client_id, str(resource))
            # A DPoP key was kept among its tokens; a row keeps it in extra.
            kept = {k: v for k, v in tokens.items() if k != DPOP_KEY}
            extra = {DPOP_KEY: tokens[DPOP_KEY]} if DPOP_KEY in tokens else {}
            yield Grant(key, client=dict(client), tokens=kept, extra=extra)


class GrantPlace:
    """Where grant rows are kept: a SQL table `TABLE`, one statement per call (`run`,
    which a place implements). Every method blocks (call it in a thread)."""

    TABLE: str
    CONSENTS: str
    """The table of pending consents (`consent_table_sql`), made with `TABLE`."""
    TOOLS: str
    """The table of per-user servers' tools (`tool_list_table_sql`), made with `TABLE`."""

    def run(self, sql: str, params: list[Any]) -> tuple[list[tuple[Any, ...]], int]:
        """Run one ``%s``-parameter statement: its rows, and how many it changed."""
        raise NotImplementedError

    def find(
        self,
        user: str | None,
        resource: str | None = None,
        client_id: str | None = None,
        *,
        every_user: bool = False,
    ) -> list[Grant]:
        """The grants of ``user`` (every user's with ``every_user``), of ``resource``
        and ``client_id`` where given; the most recently written first."""
        rows, _ = self.run(*find_sql(self.TABLE, user, resource, client_id, every_user))
        return [grant for row in rows if (grant := Grant.from_row(row)) is not None]

    def read(self, key: GrantKey) -> Grant | None:
        """The grant of ``key`` now (None: none kept)."""
        sql = f"SELECT {COLUMNS} FROM {self.TABLE} WHERE {KEY_WHERE}"
        rows, _ = self.run(sql, key_params(key))
        return Grant.from_row(rows[0]) if rows else None

    def write(self, grant: Grant) -> Grant:
        """Keep ``grant`` if its row is still at ``grant.version`` (0: there is none);
        returns it at its new version.

        Raises:
            StaleGrant: the row was written (or made, or deleted) since.
        """
        _, changed = self.run(*write_sql(self.TABLE, grant))
        return written(grant, changed)

    def delete(self, key: GrantKey, version: int | None = None) -> bool:
        """Drop the row of ``key`` (only at ``version``, where given); whether it went."""
        sql = f"DELETE FROM {self.TABLE} WHERE {KEY_WHERE}"
        params = key_params(key)
        if version is not None:
            sql, params = f"{sql} AND version = %s", [*params, version]
        return bool(self.run(sql, params)[1])


class GrantDatabase(GrantPlace):
    """The `GrantPlace` in SQLite: ``folder``'s `GRANTS_DB` (None: in memory, for this
    process's life). A write is one statement, atomic; SQLite serializes writers of one
    file across processes (each waits up to `BUSY_SECONDS`)."""

    TABLE = "grants"
    CONSENTS = "consents"
    TOOLS = "tool_lists"

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # the in-memory connection is shared by threads
        self._ready = False

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self.folder is None:
            with self._lock:
                if self._memory is None:
                    self._memory = sqlite3.connect(
                        ":memory:", isolation_level=None, check_same_thread=False
                    )
                    self._memory.execute(table_sql(self.TABLE))
                    self._memory.execute(consent_table_sql(self.CONSENTS))
                    self._memory.execute(tool_list_table_sql(self.TOOLS))
                yield self._memory
            return
        path = self.folder / GRANTS_DB
        if not self._ready:
            self.folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE))
        conn = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            if not self._ready:
                conn.execute(table_sql(self.TABLE))
                conn.execute(consent_table_sql(self.CONSENTS))
                conn.execute(tool_list_table_sql(self.TOOLS))
                self._move_old_files(conn)
                self._ready = True
            yield conn
        finally:
            conn.close()

    def _move_old_files(self, conn: sqlite3.Connection) -> None:
        """Move the grant files of earlier versions into rows (see the module's text)."""
        assert self.folder is not None
        files = sorted(self.folder.glob("*.json"))
        if not files:
            return
        moved: list[Path] = []
        conn.execute("BEGIN IMMEDIATE")  # one mover at a time across processes
        try:
            for path in files:
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue  # damaged, or moved by another process meanwhile: left as is
                self._insert_new(conn, old_grant_rows(data))
                moved.append(path)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        for path in moved:  # only once their rows are committed
            path.unlink(missing_ok=True)

    def _insert_new(self, conn: sqlite3.Connection, grants: Iterable[Grant]) -> None:
        for grant in grants:
            sql, params = write_sql(self.TABLE, grant)
            conn.execute(sql.replace("%s", "?"), params)

    def run(self, sql: str, params: list[Any]) -> tuple[list[tuple[Any, ...]], int]:
        """Run one ``%s``-parameter statement: its rows, and how many it changed."""
        with self._connection() as conn:
            cursor = conn.execute(sql.replace("%s", "?"), params)
            return [tuple(row) for row in cursor.fetchall()], cursor.rowcount
