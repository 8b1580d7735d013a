"""A catalog that learns its users' words: the queries that led to a tool's call.

When a ``search_tools`` is followed by a ``call_tool`` in the same session, the query
is kept as more text of the tool called (`ToolIndex`'s ``learned``), so the next user
who words a task that way finds that tool. The words come from users, so keeping them
is opt-in per catalog (``WorkerPool(search_learn=True)``, ``serve --search-learn``).

`QueryLearning` keeps them in the pool's data folder (a SQLite file) or, for a pool
with a ``database_url``, in PostgreSQL, where every replica reads what the others kept
(each process rereads them at most every `RELOAD_SECONDS`). Each tool keeps its
`KEPT_PER_TOOL` most recently used queries; a query over `MAX_QUERY_CHARS` is not kept
(a paragraph is not a user's words for a task). Every read and write runs in a worker
thread: the event loop never waits on the disk or the database.

and links a search to the call that follows it: per session, the last query searched,
for `PENDING_SECONDS`, among at most `MAX_SESSIONS` sessions.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Final

import anyio.to_thread

from nativemcp.protocol import DatabaseUnavailable
from nativemcp.workers import Database, redact_url

__all__ = [
    "KEPT_PER_TOOL",
    "LEARNED_FILE",
    "LEARNED_TABLE",
    "MAX_QUERY_CHARS",
    "QueryLearning",
    "kept_query",
    "query_learning",
]

LEARNED_FILE: Final = "tool-search-learned.sqlite3"
"""The SQLite file, in the pool's data folder, that keeps the learned queries."""
LEARNED_TABLE: Final = "nativemcp_learned_queries"
"""The table (SQLite and PostgreSQL alike) of the learned queries."""
KEPT_PER_TOOL: Final = 32
"""The most queries kept for one tool: the most recently used ones."""
MAX_QUERY_CHARS: Final = 200
"""The longest query kept, in characters (after spaces are collapsed)."""
RELOAD_SECONDS: Final = 60.0
"""How old the queries another replica kept may be before this process rereads them."""
PENDING_SECONDS: Final = 600.0
"""How long a session's search waits for the call that follows it."""
MAX_SESSIONS: Final = 4096
"""The most sessions whose last search is remembered (the oldest are forgotten)."""

_logger = logging.getLogger("nativemcp.tool_search")

_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {LEARNED_TABLE} ("
    " tool TEXT NOT NULL, query TEXT NOT NULL,"
    " uses INTEGER NOT NULL DEFAULT 1, last_used DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (tool, query))"
)
_KEEP: Final = (
    "INSERT INTO {table} (tool, query, uses, last_used) VALUES ({p}, {p}, 1, {p}) "
    "ON CONFLICT (tool, query) DO UPDATE SET uses = {table}.uses + 1, "
    "last_used = excluded.last_used"
)
_TRIM: Final = (
    "DELETE FROM {table} WHERE tool = {p} AND query NOT IN ("
    "SELECT query FROM {table} WHERE tool = {p} ORDER BY last_used DESC LIMIT {p})"
)
_READ: Final = "SELECT tool, query FROM {table} ORDER BY tool, last_used DESC"


def kept_query(query: str) -> str | None:
    """``query`` as it is kept (spaces collapsed), or None where it is not kept: empty,
    or longer than `MAX_QUERY_CHARS`."""
    words = " ".join(query.split())
    if not words or len(words) > MAX_QUERY_CHARS:
        return None
    return words


class _File:
    """A SQLite file: one connection per call (a query is kept a few times an hour)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = str(path)
        self._made = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        if not self._made:
            conn.execute(_SCHEMA)
            self._made = True
        return conn

    def read(self) -> list[tuple[str, str]]:
        if not self.path.exists():
            return []
        conn = self._connect()
        try:
            return [(str(t), str(q)) for t, q in conn.execute(_READ.format(table=LEARNED_TABLE))]
        finally:
            conn.close()

    def keep(self, tool: str, query: str, now: float) -> None:
        conn = self._connect()
        try:
            # One writer at a time across processes (BEGIN IMMEDIATE takes the lock).
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_KEEP.format(table=LEARNED_TABLE, p="?"), (tool, query, now))
            conn.execute(_TRIM.format(table=LEARNED_TABLE, p="?"), (tool, tool, KEPT_PER_TOOL))
            conn.execute("COMMIT")
        finally:
            conn.close()


class _Table:
    """A PostgreSQL table, shared by every replica of the catalog."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.name = redact_url(url)
        self._database: Database | None = None

    def _opened(self) -> Database:
        # Opened on first use: a pool that never searches holds no connection.
        if self._database is None:
            self._database = Database(self.url, "tool-search-learned", [[_SCHEMA]], pool_size=1)
        return self._database

    def read(self) -> list[tuple[str, str]]:
        with self._opened().connection() as conn:
            rows = conn.execute(_READ.format(table=LEARNED_TABLE)).fetchall()
        return [(str(tool), str(query)) for tool, query in rows]

    def keep(self, tool: str, query: str, now: float) -> None:
        with self._opened().transaction() as conn:
            conn.execute(_KEEP.format(table=LEARNED_TABLE, p="%s"), (tool, query, now))
            conn.execute(_TRIM.format(table=LEARNED_TABLE, p="%s"), (tool, tool, KEPT_PER_TOOL))

    def close(self) -> None:
        if self._database is not None:
            self._database.close()


class QueryLearning:
    """The queries users found each tool by, and each session's last search.

    `words` is what `ToolIndex`'s ``learned`` takes; `version` grows whenever it
    changes, so an index built from an older version is rebuilt. Make one with
    `query_learning`; `close` it with the pool.
    """

    def __init__(self, place: _File | _Table) -> None:
        self._place = place
        self._words: dict[str, list[str]] = {}
        self._read_at: float | None = None
        self._lock = threading.Lock()
        self._sessions = _SessionQueries()
        self.version = 0

    @property
    def name(self) -> str:
        """Where the queries live (a path, or the database's URL without password)."""
        return self._place.name

    @property
    def words(self) -> Mapping[str, Sequence[str]]:
        """Per full name, the queries that led to its calls, most recent first."""
        return self._words

    async def refresh(self) -> None:
        """Reread the kept queries where the last read is older than `RELOAD_SECONDS`
        (another replica may have kept some since). A place that cannot be read is
        logged and read again on the next refresh; the words known stay.

        Raises:
            DatabaseUnavailable: PostgreSQL cannot be reached.
            sqlite3.Error: the file cannot be read.
        """
        if self._read_at is not None and time.monotonic() - self._read_at < RELOAD_SECONDS:
            return
        try:
            rows = await anyio.to_thread.run_sync(self._place.read)
        except (DatabaseUnavailable, sqlite3.Error) as exc:
            _logger.warning("cannot read the learned tool-search queries in %s: %s", self.name, exc)
            return
        words: dict[str, list[str]] = {}
        for tool, query in rows:
            words.setdefault(tool, []).append(query)
        with self._lock:
            self._read_at = time.monotonic()
            if words != self._words:
                self._words = words
                self.version += 1

    def searched(self, session: Hashable, query: str) -> None:
        """``session`` searched the catalog for ``query``: kept for the call that
        follows it (an earlier search of the session is dropped)."""
        self._sessions.searched(session, query)

    async def learn_call(self, session: Hashable, full_name: str) -> bool:
        """``session`` calls ``full_name``: keep its last query (if recent and fit to
        keep, see `kept_query`) as words that tool was found by. False where nothing
        was kept; a place that cannot be written is logged, and the call goes on."""
        query = self._sessions.called(session)
        words = kept_query(query) if query is not None else None
        if words is None:
            return False
        try:
            await anyio.to_thread.run_sync(self._place.keep, full_name, words, time.time())
        except (DatabaseUnavailable, sqlite3.Error) as exc:
            _logger.warning("cannot keep a tool-search query in %s: %s", self.name, exc)
            return False
        with self._lock:
            said = [q for q in self._words.get(full_name, []) if q != words]
            self._words = {**self._words, full_name: [words, *said][:KEPT_PER_TOOL]}
            self.version += 1
        return True

    def close(self) -> None:
        """Close the database's connections (a SQLite file holds none open)."""
        if isinstance(self._place, _Table):
            self._place.close()


def query_learning(data_dir: Path | None, database_url: str | None) -> QueryLearning:
    """The query learning of a pool: in PostgreSQL where it has a ``database_url``,
    else in `LEARNED_FILE` in its data folder (`PoolConfig` checks it has one).

    Raises:
        ValueError: neither is given.
    """
    if database_url is not None:
        return QueryLearning(_Table(database_url))
    if data_dir is None:
        raise ValueError("learned queries need a data folder or a database_url")
    return QueryLearning(_File(data_dir / LEARNED_FILE))


class _SessionQueries:
    """Each session's last search, until the call that follows it (or it expires)."""

    def __init__(self) -> None:
        self._pending: OrderedDict[Hashable, tuple[str, float]] = OrderedDict()

    def searched(self, session: Hashable, query: str) -> None:
        """``session`` searched ``query`` (its earlier search, if any, is dropped)."""
        self._pending.pop(session, None)
        self._pending[session] = (query, time.monotonic())
        while len(self._pending) > MAX_SESSIONS:
            self._pending.popitem(last=False)

    def called(self, session: Hashable) -> str | None:
        """The query ``session`` last searched, if it is recent; once only."""
        pending = self._pending.pop(session, None)
        if pending is None or time.monotonic() - pending[1] > PENDING_SECONDS:
            return None
        return pending[0]
