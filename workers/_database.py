"""PostgreSQL plumbing shared by the built-in servers that keep state in a database.

The content store and planning keep their state in SQLite files by default; given a
``postgresql://`` URL (`ServerConfig.database_url`) they keep it in that database
instead, so servers on several machines share it. This module holds what both need:

- `Database`: one connection pool per worker process, opened without waiting (a worker
  starts even while the database is down), each connection checked on checkout so a
  database that went away and came back is used again without a restart (a round trip
  only when the server has closed or written to the connection: `check_connection`),
  and the connection returned last lent first (its server process is the warm one);
- versioned schema migrations run once per process, under an advisory lock so two
  workers starting at once do not race on ``CREATE TABLE``;
- `DatabaseUnavailable`: every connection failure becomes one tool error that names
  the database (its URL with the password removed), never a driver traceback.

psycopg is imported only here and in the PostgreSQL backends, and only when a URL is
given: the SQLite default needs nothing installed.
"""

from __future__ import annotations

import re
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from nativemcp.protocol import DatabaseUnavailable

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = [
    "DATABASE_URL_ENV",
    "Database",
    "Migration",
    "check_connection",
    "is_postgres_url",
    "read_version",
    "redact_url",
    "write_version",
]

DATABASE_URL_ENV: Final = "NATIVEMCP_DATABASE_URL"
"""Environment variable naming the shared database (``postgresql://user:pw@host/db``)."""
POOL_MIN_SIZE: Final = 1
"""Connections a worker keeps open while idle."""
POOL_MAX_SIZE: Final = 4
"""Connections one worker process may hold at once: of its tool threads (up to
``TOOL_THREADS``), this many use the database at a time and the others wait for one
(at most `CHECKOUT_TIMEOUT`), which keeps a worker's share of the server's connections
small."""
CONNECT_TIMEOUT: Final = 5
"""Seconds to wait for the database to accept a connection."""
CHECKOUT_TIMEOUT: Final = 5.0
"""Seconds a call waits for a pooled connection before failing (database down)."""
KEEP_SECONDS: Final = 60.0
"""The longest a connection is lent again and again without going back to the pool
(see `_LastInFirstOut`)."""
SCHEMA_TABLE: Final = "nativemcp_schema"
"""The table recording each component's schema version."""

Migration = Sequence[str]
"""One schema version's SQL statements, run in one transaction."""

_SCHEMES: Final = ("postgresql", "postgres")


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return urlsplit(url).scheme.lower() in _SCHEMES


def redact_url(url: str) -> str:
    """``url`` without its password (and without query options), safe to print."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    # Built by hand: urlunsplit drops the // of an empty host (postgresql:///db).
    return f"{parts.scheme}://{user}{host}{parts.path}"


def _reason(exc: BaseException, url: str, password: str | None) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if password:
        text = text.replace(password, "***")
    return text.replace(url, redact_url(url))


class Database:
    """A connection pool to one PostgreSQL database, and the schema of one component.

    Args:
        url: the ``postgresql://`` URL (the password may be in it; it is never printed).
        component: the schema's name in `SCHEMA_TABLE` (``"content-store"``...).
        migrations: the SQL of each schema version, oldest first; version N is
            ``migrations[N - 1]``. Versions a database already has are skipped.
        after_migrate: called with the connection after the migrations, in their
            transaction and under their lock (data upgrades, such as a re-index).
        pool_size: the most connections this process holds at once (`POOL_MAX_SIZE`
            by default).
        settings: run-time parameters set on each connection (``set_config``), for
            example ``{"plan_cache_mode": "force_generic_plan"}``.

    Raises:
        ValueError: ``url`` is not a PostgreSQL URL, psycopg is not installed, or
            ``pool_size`` is below 1.
    """

    def __init__(
        self,
        url: str,
        component: str,
        migrations: Sequence[Migration],
        after_migrate: Callable[[psycopg.Connection[Any]], None] | None = None,
        pool_size: int = POOL_MAX_SIZE,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        if not is_postgres_url(url):
            raise ValueError(f"not a PostgreSQL URL: {redact_url(url)}")
        if pool_size < 1:
            raise ValueError(f"database pool size must be 1 or more, not {pool_size}")
        self.pool_size = pool_size
        try:
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ValueError(
                f"{redact_url(url)} needs the PostgreSQL driver: pip install 'nativemcp[postgres]'"
            ) from exc

        self.url = url
        self.name = redact_url(url)
        self._password = urlsplit(url).password
        self._component = component
        self._migrations = list(migrations)
        self._after_migrate = after_migrate
        self._settings = dict(settings or {})
        self._migrated = False
        self._lock = threading.Lock()
        self._down = False
        self._closed = False
        self._pool = self._new_pool()
        self._lending = _LastInFirstOut(self._pool)

    def _new_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        from psycopg_pool import ConnectionPool

        pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            self.url,
            min_size=min(POOL_MIN_SIZE, self.pool_size),
            max_size=self.pool_size,
            timeout=CHECKOUT_TIMEOUT,
            kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True},
            configure=self._configure,
            # A connection broken by a database restart is found and replaced here,
            # not handed to a call.
            check=check_connection,
            open=False,
            name=f"nativemcp-{self._component}",
        )
        # Do not wait for the database at start-up: calls report it if it is down.
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        """Close the pool (idempotent)."""
        with self._lock:
            self._closed = True
            self._lending.close()
            self._pool.close()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        _configure(conn)
        for name, value in self._settings.items():
            conn.execute("SELECT set_config(%s, %s, false)", (name, value))

    @property
    def schema_version(self) -> int:
        """The newest schema version this code knows."""
        return len(self._migrations)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit; use `transaction` for changes).

        Raises:
            DatabaseUnavailable: no connection could be made, or it broke mid-use.
        """
        import psycopg
        import psycopg_pool

        if self._down:
            self._recover()
        try:
            with self._lending.connection() as conn:
                if not self._migrated:
                    self._migrate(conn)
                yield conn
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled):
                raise
            if isinstance(exc, psycopg_pool.PoolTimeout):
                reason = self._probe()
                if reason is None:
                    # The database answers: every pooled connection was busy that long.
                    raise DatabaseUnavailable(
                        self.name,
                        f"all {self.pool_size} connections of this worker stayed busy for "
                        f"{CHECKOUT_TIMEOUT:g} s",
                    ) from None
            else:
                reason = _reason(exc, self.url, self._password)
            # Until a probe connects again, calls fail at once (see `_recover`).
            self._down = True
            raise DatabaseUnavailable(self.name, reason) from None

    def _probe(self) -> str | None:
        """Why a direct connection fails now (None: it works)."""
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT).close()
        except psycopg.Error as exc:
            return _reason(exc, self.url, self._password)
        return None

    def _recover(self) -> None:
        """After a failure: fail fast while the database is still away; once it answers,
        start a fresh pool (the old one may be backing off between reconnect attempts).

        Raises:
            DatabaseUnavailable: the database still refuses connections.
        """
        with self._lock:
            if not self._down or self._closed:
                return
            reason = self._probe()
            if reason is not None:
                raise DatabaseUnavailable(self.name, reason)
            old, self._pool = self._pool, self._new_pool()
            lending, self._lending = self._lending, _LastInFirstOut(self._pool)
            self._down = False
        # Connections still lent out are closed when they come back.
        lending.close()
        old.close(timeout=0)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside one transaction.

        It is committed when the block ends, rolled back if it raises (or if the process
        dies before the commit).

        Raises:
            DatabaseUnavailable: as `connection`.
        """
        with self.connection() as conn, conn.transaction():
            yield conn

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            if self._migrated:
                return
            with conn.transaction():
                # One migrator at a time across every process using this database.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (SCHEMA_TABLE,))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
                    " component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
                )
                current = read_version(conn, self._component) or 0
                if current > len(self._migrations):
                    raise RuntimeError(
                        f"{self._component} schema in {self.name} is version {current}; "
                        f"this nativemcp understands up to {len(self._migrations)}"
                    )
                for version in range(current + 1, len(self._migrations) + 1):
                    for statement in self._migrations[version - 1]:
                        conn.execute(statement)
                    write_version(conn, self._component, version)
                if self._after_migrate is not None:
                    self._after_migrate(conn)
            self._migrated = True


class _LastInFirstOut:
    """Lends ``pool``'s connections last in, first out.

    psycopg_pool lends its idle connections first in, first out: with two open, one
    search after another goes to two server processes in turn, each idle while the
    other works. On these VMs a statement to a server process idle for a millisecond
    took 0.25 ms, against 0.14 ms back to back (measured); anywhere, a process used a
    moment ago has its caches warm. So the connection returned last is kept out of the
    pool for the next checkout, as PgBouncer and SQLAlchemy's ``pool_use_lifo`` do. It
    goes to the pool instead while a checkout waits there (which then gets it), and
    after `KEEP_SECONDS` lent again and again, so that the pool's own rules (each
    connection's lifetime) still reach it.
    """

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]]) -> None:
        import psycopg
        from psycopg.pq import TransactionStatus

        # Looked up once here, not on every checkout and return.
        self._dead: type[Exception] = psycopg.Error
        self._idle = TransactionStatus.IDLE
        self._pool = pool
        self._lock = threading.Lock()
        self._kept: psycopg.Connection[Any] | None = None
        # The connection kept last, and since when it has been kept in a row.
        self._streak: tuple[psycopg.Connection[Any] | None, float] = (None, 0.0)
        self._waiting = 0  # checkouts waiting in the pool
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection, as psycopg_pool's ``connection()`` lends it (committed or
        rolled back at the end of the block, then returned)."""
        conn = self._get()
        try:
            with conn:
                yield conn
        finally:
            self._put(conn)

    def _get(self) -> psycopg.Connection[Any]:
        with self._lock:
            conn, self._kept = self._kept, None
            if conn is None:
                self._waiting += 1
        if conn is not None:
            try:
                check_connection(conn)
                return conn
            except self._dead:
                self._pool.putconn(conn)  # dead: the pool replaces it
            with self._lock:
                self._waiting += 1
        try:
            return self._pool.getconn()
        finally:
            with self._lock:
                self._waiting -= 1

    def _put(self, conn: psycopg.Connection[Any]) -> None:
        if conn.pgconn.transaction_status == self._idle:
            now = time.monotonic()
            with self._lock:
                last, since = self._streak
                if last is not conn:
                    since = now
                if (
                    self._kept is None
                    and not self._waiting
                    and not self._closed
                    and now - since < KEEP_SECONDS
                ):
                    self._kept, self._streak = conn, (conn, since)
                    return
                if last is conn:  # back to the pool: its streak ends
                    self._streak = (None, 0.0)
        self._pool.putconn(conn)

    def close(self) -> None:
        """Return the kept connection to the pool; lend none from now on."""
        with self._lock:
            self._closed = True
            conn, self._kept = self._kept, None
            self._streak = (None, 0.0)
        if conn is not None:
            self._pool.putconn(conn)


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """Check a pooled connection before lending it: raise if it is dead.

    An idle connection's socket is quiet unless the server closed it (a restart, a
    terminated backend: its last message and the end of the stream wait there) or
    sent a notice. Only then is psycopg_pool's check, a round trip, run: it fails on a
    dead connection and reads a notice away. A plain round trip on every checkout cost
    0.06-0.1 ms of a 1 ms search, measured.

    Raises:
        psycopg.Error: the connection is dead (the pool replaces it).
    """
    from psycopg_pool import ConnectionPool

    if _readable(conn.fileno()):
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    """Whether the socket ``fd`` has data or its end of stream waiting (no wait)."""
    if hasattr(select, "poll"):
        # poll, not select: select refuses descriptors past FD_SETSIZE (1024).
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def read_version(conn: psycopg.Connection[Any], component: str) -> int | None:
    """A component's version in `SCHEMA_TABLE` (None: not recorded)."""
    row = conn.execute(
        f"SELECT version FROM {SCHEMA_TABLE} WHERE component = %s", (component,)
    ).fetchone()
    return int(row[0]) if row else None


def write_version(conn: psycopg.Connection[Any], component: str, version: int) -> None:
    """Record a component's version in `SCHEMA_TABLE`."""
    conn.execute(
        f"INSERT INTO {SCHEMA_TABLE} (component, version) VALUES (%s, %s)"
        " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
        (component, version),
    )


_ESCAPE: Final = "\uffff"
"""Starts an escape in stored text: U+FFFF + ``0`` is NUL, U+FFFF twice is U+FFFF."""
_ESCAPED: Final = re.compile("\uffff(.)", re.DOTALL)


def escape_text(text: str) -> str:
    """``text`` without NUL characters, which PostgreSQL's text type cannot hold
    (reversible: see `unescape_text`; text without NUL or U+FFFF is unchanged)."""
    if "\x00" not in text and _ESCAPE not in text:
        return text
    return text.replace(_ESCAPE, _ESCAPE * 2).replace("\x00", _ESCAPE + "0")


def unescape_text(text: str) -> str:
    """The text `escape_text` was given."""
    if _ESCAPE not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else m.group(1), text)


def _configure(conn: psycopg.Connection[Any]) -> None:
    from psycopg.abc import Buffer
    from psycopg.types.string import StrDumper, TextLoader

    class NulSafeDumper(StrDumper):
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(escape_text(obj))

    class NulSafeLoader(TextLoader):
        def load(self, data: Buffer) -> bytes | str:
            value = super().load(data)
            # bytes only from a SQL_ASCII database, which cannot hold our text anyway.
            return unescape_text(value) if isinstance(value, str) else value

    # Text in and out of this connection (parameters, COPY rows, results, arrays of
    # text) goes through the escape, so a NUL in a tool's text round-trips.
    conn.adapters.register_dumper(str, NulSafeDumper)
    conn.adapters.register_loader("text", NulSafeLoader)
    # Timestamps come back in UTC whatever the server's or the role's time zone.
    conn.execute("SET TIME ZONE 'UTC'")
