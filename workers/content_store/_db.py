"""The content store's SQLite database: stores, contents, line chunks and their FTS5 index.

One file in WAL mode. Each store has its own FTS5 table (``fts_<store rowid>``), so
BM25's statistics are the store's own and a search reads only that store's index.
Once writes stop, a store's chunks are also sealed into blocks with per-token bounds
(`_blocks`), so a search of a large store reads only the blocks that can still make
its top k (`_blockmax`), and a CJK word beside one other term is ranked from each
one's top k there (`_phrase_union`); FTS5 ranks prefixes, phrases among more terms,
small stores and chunks not sealed yet. What every search of a store reads besides its
postings is kept between searches until the file changes (`_index_cache`).
Two connections: the writer, one transaction at a time (the server's write calls, and
the thread that seals blocks and merges a store's index once writes stop:
`IndexMerger`), and the reader; WAL lets reads go on while a
long write is in progress and shows them only committed data. Every change is one
transaction, so a process killed mid-way leaves the change wholly applied or wholly
absent.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from ._blockmax import BLOCK_CHUNKS, MIN_BLOCKS
from ._blocks import match, reseal, seal_blocks, search_blocks
from ._index_cache import IndexCache
from ._merging import IDLE_SECONDS, STEP_PAGES, IndexMerger
from ._models import ContentSummary, SearchHit, StoreInfo
from ._phrase_union import SEVERAL_ROW_COST, UNION_BLOCKS, UNION_PHRASES, search_phrase_union
from ._postings import phrases
from ._records import (
    INDEX_VERSION,
    INSERT_BATCH,
    NewContent,
    content_summary,
    content_values,
    found_candidates,
    new_id,
    store_info,
    utc_now,
)
from ._relevance import candidate_count, rank_hits
from ._tokenize import index_text

# NewContent lives in _records; tests still import it from here.
__all__ = ["ContentDB", "NewContent"]

CACHE_KIB: Final = 16 * 1024
"""Page cache per connection (KiB)."""
MMAP_BYTES: Final = 256 * 1024 * 1024
"""How much of the database file SQLite may memory-map."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS stores (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    description TEXT,
    session_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS contents (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    store_id TEXT NOT NULL REFERENCES stores(id) ON DELETE CASCADE,
    filename TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    preview TEXT NOT NULL,
    uploaded_at TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (store_id, sha256)
);
CREATE INDEX IF NOT EXISTS contents_by_store ON contents (store_id, rid);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    content_rid INTEGER NOT NULL REFERENCES contents(rid) ON DELETE CASCADE,
    store_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_content ON chunks (content_rid);
CREATE INDEX IF NOT EXISTS chunks_by_store ON chunks (store_id);
CREATE TABLE IF NOT EXISTS blocks (
    store_rid INTEGER NOT NULL,
    lo INTEGER NOT NULL,
    hi INTEGER NOT NULL,
    average REAL NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (store_rid, lo)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS block_postings (
    store_rid INTEGER NOT NULL,
    lo INTEGER NOT NULL,
    token TEXT NOT NULL,
    postings BLOB NOT NULL,
    PRIMARY KEY (store_rid, lo, token)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS block_bounds (
    store_rid INTEGER NOT NULL,
    token TEXT NOT NULL,
    lo INTEGER NOT NULL,
    bound REAL NOT NULL,
    df INTEGER NOT NULL,
    PRIMARY KEY (store_rid, token, lo)
) WITHOUT ROWID;
"""
_FTS_TOKENIZER: Final = "unicode61 remove_diacritics 2"
"""Words split on Unicode classes, case and accents folded; CJK arrives as bigrams."""

_CONTENT_COLUMNS: Final = (
    "store_id, id, filename, mime_type, size, line_count, chunk_count, preview, uploaded_at, sha256"
)


def _fts(store_rid: int) -> str:
    """The name of a store's FTS5 table (from its integer rowid: never user text)."""
    return f"fts_{int(store_rid)}"


def _now() -> str:
    """`utc_now` as stored here: ISO 8601 text (SQLite has no timestamp type)."""
    return utc_now().isoformat(timespec="milliseconds")


def _store(row: Sequence[Any]) -> StoreInfo:
    return store_info(row, datetime.fromisoformat)


def _summary(row: Sequence[Any]) -> ContentSummary:
    return content_summary(row, datetime.fromisoformat)


def _connect(path: Path | str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA foreign_keys = ON")
    # Searches read the index pages over and over: keep them in this connection's
    # cache and map the file, instead of a read() call per page.
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    return conn


class ContentDB:
    """Stores, contents and search over one SQLite file (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        merge_idle: float = IDLE_SECONDS,
        block_chunks: int = BLOCK_CHUNKS,
        min_blocks: int = MIN_BLOCKS,
        union_blocks: int = UNION_BLOCKS,
        several_row_cost: float = SEVERAL_ROW_COST,
    ) -> None:
        """Open (or create) the database at ``path``; a store's index is merged after
        ``merge_idle`` seconds without writes (`IndexMerger`); every ``block_chunks``
        new chunks of a store are sealed into a block a search may skip (`top_k`), once
        the store has ``min_blocks`` of them, and from ``union_blocks`` on for a query
        of CJK words beside other terms too (`search_phrase_union`, for three terms or
        more while its chunks holding several cost less than FTS5's rows at
        ``several_row_cost`` each)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.block_chunks = block_chunks
        self.min_blocks = min_blocks
        self.union_blocks = union_blocks
        self.several_row_cost = several_row_cost
        # The merging thread writes too: one transaction at a time on the writer.
        self._writing = threading.Lock()
        self._write = _connect(path)
        self._write.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode survives a killed process (not a power cut): the
        # committed transactions are in the WAL file the next opener replays.
        self._write.execute("PRAGMA synchronous = NORMAL")
        self._write.executescript(_SCHEMA)
        self._check_version()
        self._read = _connect(path)
        self._indexes = IndexCache(self._read, _fts)
        self._closed = False
        self._merger = IndexMerger(self._merge_step, idle=merge_idle, seal=self._seal_step)

    def _check_version(self) -> None:
        # The 'schema' row has only ever marked changes of the index (`INDEX_VERSION`,
        # which PostgreSQL records too): a change of the tables would need a migration,
        # not this re-index.
        row = self._write.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and int(row[0]) == INDEX_VERSION:
            return
        with self._transaction():
            if row is not None:
                # The index rewrite changed: re-index every chunk from its stored text.
                for (store_rid,) in self._write.execute("SELECT rid FROM stores").fetchall():
                    self._write.execute(f"DELETE FROM {_fts(store_rid)}")
                    rows = self._write.execute(
                        "SELECT c.id, c.body FROM chunks c JOIN stores s ON s.id = c.store_id"
                        " WHERE s.rid = ?",
                        (store_rid,),
                    ).fetchall()
                    self._write.executemany(
                        f"INSERT INTO {_fts(store_rid)} (rowid, body) VALUES (?, ?)",
                        ((rid, index_text(body)) for rid, body in rows),
                    )
                # The block bounds hold tokens of the old rewrite too: sealed afresh.
                self._write.execute("DELETE FROM blocks")
                self._write.execute("DELETE FROM block_postings")
                self._write.execute("DELETE FROM block_bounds")
                for store_rid, store_id in self._write.execute(
                    "SELECT rid, id FROM stores"
                ).fetchall():
                    seal_blocks(self._write, store_rid, store_id, self.block_chunks)
            self._write.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)",
                (str(INDEX_VERSION),),
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._write
        with self._writing:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Stop merging, then close both connections (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._merger.close()
        self._read.close()
        self._write.close()

    def _seal_step(self, store_id: str) -> bool:
        """Seal one block of the store's newest chunks (`_seal`) in a transaction of
        its own; False once none waits (or the store is gone)."""
        with self._transaction() as conn:
            store_rid = self._store_rid(conn, store_id)
            return (
                store_rid is not None
                and seal_blocks(conn, store_rid, store_id, self.block_chunks, limit=1) > 0
            )

    def _merge_step(self, store_id: str) -> bool:
        """Merge `STEP_PAGES` pages of the store's index segments toward one b-tree;
        False once there is nothing left to merge (or the store is gone)."""
        with self._transaction() as conn:
            store_rid = self._store_rid(conn, store_id)
            if store_rid is None:
                return False
            fts = _fts(store_rid)
            before = conn.total_changes
            # A negative page count merges every segment, not only full levels: an
            # optimize done in steps. FTS5 counts two changes or more when it did work.
            conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('merge', ?)", (-STEP_PAGES,))
            return conn.total_changes - before >= 2

    @staticmethod
    def _index_rows(conn: sqlite3.Connection, store_rid: int) -> int:
        """How many chunks the store's index holds (its document-size table: no scan of
        the index)."""
        return int(conn.execute(f"SELECT count(*) FROM {_fts(store_rid)}_docsize").fetchone()[0])

    # -- stores ----------------------------------------------------------------------

    def create_store(self, name: str, description: str | None, session_id: str | None) -> StoreInfo:
        """Add an empty store."""
        store_id = new_id("st")
        now = _now()
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO stores (id, name, description, session_id, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (store_id, name, description, session_id, now, now),
            )
            assert cursor.lastrowid is not None
            conn.execute(
                f"CREATE VIRTUAL TABLE {_fts(cursor.lastrowid)} USING fts5("
                f"body, tokenize = '{_FTS_TOKENIZER}')"
            )
        store = self.get_store(store_id)
        assert store is not None
        return store

    _STORE_SELECT: Final = (
        "SELECT s.id, s.name, s.description, s.session_id, s.created_at, s.updated_at,"
        " (SELECT count(*) FROM contents c WHERE c.store_id = s.id) FROM stores s"
    )

    def get_store(self, store_id: str) -> StoreInfo | None:
        """The store, or None."""
        row = self._read.execute(f"{self._STORE_SELECT} WHERE s.id = ?", (store_id,)).fetchone()
        return _store(row) if row else None

    def list_stores(self, session_id: str | None = None) -> list[StoreInfo]:
        """Every store (or a session's), oldest first."""
        if session_id is None:
            rows = self._read.execute(f"{self._STORE_SELECT} ORDER BY s.rid").fetchall()
        else:
            rows = self._read.execute(
                f"{self._STORE_SELECT} WHERE s.session_id = ? ORDER BY s.rid", (session_id,)
            ).fetchall()
        return [_store(row) for row in rows]

    def delete_store(self, store_id: str) -> int:
        """Remove a store and its contents; the number of contents removed."""
        with self._transaction() as conn:
            store_rid = self._store_rid(conn, store_id)
            if store_rid is None:
                return 0
            conn.execute(f"DROP TABLE IF EXISTS {_fts(store_rid)}")
            conn.execute("DELETE FROM blocks WHERE store_rid = ?", (store_rid,))
            conn.execute("DELETE FROM block_postings WHERE store_rid = ?", (store_rid,))
            conn.execute("DELETE FROM block_bounds WHERE store_rid = ?", (store_rid,))
            conn.execute("DELETE FROM chunks WHERE store_id = ?", (store_id,))
            count: int = conn.execute(
                "SELECT count(*) FROM contents WHERE store_id = ?", (store_id,)
            ).fetchone()[0]
            conn.execute("DELETE FROM contents WHERE store_id = ?", (store_id,))
            conn.execute("DELETE FROM stores WHERE id = ?", (store_id,))
        return count

    @staticmethod
    def _store_rid(conn: sqlite3.Connection, store_id: str) -> int | None:
        row = conn.execute("SELECT rid FROM stores WHERE id = ?", (store_id,)).fetchone()
        return int(row[0]) if row else None

    # -- contents --------------------------------------------------------------------

    def _content_where(
        self, column: Literal["id", "sha256"], store_id: str, value: str
    ) -> ContentSummary | None:
        """The summary of the store's content whose ``column`` is ``value``, or None."""
        row = self._read.execute(
            f"SELECT {_CONTENT_COLUMNS} FROM contents WHERE store_id = ? AND {column} = ?",
            (store_id, value),
        ).fetchone()
        return _summary(row) if row else None

    def find_duplicate(self, store_id: str, sha256: str) -> ContentSummary | None:
        """The store's content with this text hash, or None."""
        return self._content_where("sha256", store_id, sha256)

    def add_content(
        self,
        store_id: str,
        item: NewContent,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[ContentSummary, bool]:
        """Insert a content item and index its chunks, in one transaction.

        Returns the stored summary and whether it was a duplicate (then nothing was
        written and the summary is the existing item's). ``progress(done, total)`` is
        called after each batch of chunks.
        """
        content_id = new_id("ct")
        now = _now()
        total = len(item.chunks)
        with self._transaction() as conn:
            store_rid = self._store_rid(conn, store_id)
            if store_rid is None:
                raise LookupError(f"store {store_id} is gone")
            fts = _fts(store_rid)
            existing = conn.execute(
                "SELECT id FROM contents WHERE store_id = ? AND sha256 = ?",
                (store_id, item.sha256),
            ).fetchone()
            if existing is None:
                cursor = conn.execute(
                    "INSERT INTO contents (id, store_id, filename, mime_type, size, line_count,"
                    " chunk_count, preview, uploaded_at, sha256, body)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    content_values(content_id, store_id, item, now),
                )
                rid = cursor.lastrowid
                # Above every sealed block too: a new chunk never lands in a range whose
                # bounds were computed without it (its newest chunks may have been deleted).
                first: int = conn.execute(
                    "SELECT max(coalesce((SELECT max(id) FROM chunks), 0),"
                    " coalesce((SELECT max(hi) FROM blocks), 0)) + 1"
                ).fetchone()[0]
                for start in range(0, total, INSERT_BATCH):
                    batch = item.chunks[start : start + INSERT_BATCH]
                    ids = range(first + start, first + start + len(batch))
                    conn.executemany(
                        "INSERT INTO chunks (id, content_rid, store_id, seq, start_line,"
                        " end_line, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            (cid, rid, store_id, start + n, c.start_line, c.end_line, c.text)
                            for n, (cid, c) in enumerate(zip(ids, batch, strict=True))
                        ),
                    )
                    conn.executemany(
                        f"INSERT INTO {fts} (rowid, body) VALUES (?, ?)",
                        ((cid, index_text(c.text)) for cid, c in zip(ids, batch, strict=True)),
                    )
                    if progress is not None:
                        progress(start + len(batch), total)
                conn.execute("UPDATE stores SET updated_at = ? WHERE id = ?", (now, store_id))
                existing_id = content_id
                indexed = self._index_rows(conn, store_rid)
            else:
                existing_id = existing[0]
            row = conn.execute(
                f"SELECT {_CONTENT_COLUMNS} FROM contents WHERE id = ?", (existing_id,)
            ).fetchone()
        if existing is None:
            # Sealing tokenizes a block's chunks in Python: done once writes stop.
            self._merger.wrote(store_id, total, indexed, unsealed=True)
        return _summary(row), existing is not None

    def get_content(self, store_id: str, content_id: str) -> ContentSummary | None:
        """A content item's summary, or None."""
        return self._content_where("id", store_id, content_id)

    def content_text(self, content_id: str) -> str:
        """The stored text of a content item ('' if it is gone)."""
        row = self._read.execute("SELECT body FROM contents WHERE id = ?", (content_id,)).fetchone()
        return str(row[0]) if row else ""

    def count_contents(self, store_id: str) -> int:
        """How many contents the store holds."""
        count: int = self._read.execute(
            "SELECT count(*) FROM contents WHERE store_id = ?", (store_id,)
        ).fetchone()[0]
        return count

    def list_contents(self, store_id: str, offset: int, limit: int) -> list[ContentSummary]:
        """A page of the store's contents, oldest first."""
        rows = self._read.execute(
            f"SELECT {_CONTENT_COLUMNS} FROM contents WHERE store_id = ?"
            " ORDER BY rid LIMIT ? OFFSET ?",
            (store_id, limit, offset),
        ).fetchall()
        return [_summary(row) for row in rows]

    def delete_content(self, store_id: str, content_id: str) -> int:
        """Remove a content item and its chunks; the number of chunks removed."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT rid FROM contents WHERE store_id = ? AND id = ?", (store_id, content_id)
            ).fetchone()
            store_rid = self._store_rid(conn, store_id)
            if row is None or store_rid is None:
                return 0
            chunk_ids = [
                chunk_id
                for (chunk_id,) in conn.execute(
                    "SELECT id FROM chunks WHERE content_rid = ?", (row[0],)
                )
            ]
            conn.execute(
                f"DELETE FROM {_fts(store_rid)} WHERE rowid IN"
                " (SELECT id FROM chunks WHERE content_rid = ?)",
                (row[0],),
            )
            deleted: int = conn.execute(
                "DELETE FROM chunks WHERE content_rid = ?", (row[0],)
            ).rowcount
            reseal(conn, store_rid, store_id, chunk_ids)
            conn.execute("DELETE FROM contents WHERE rid = ?", (row[0],))
            conn.execute("UPDATE stores SET updated_at = ? WHERE id = ?", (_now(), store_id))
            indexed = self._index_rows(conn, store_rid)
        self._merger.wrote(store_id, deleted, indexed)
        return deleted

    # -- search ----------------------------------------------------------------------

    def search(
        self, store_id: str, query: str, top_n: int, threshold: float | None
    ) -> list[SearchHit] | None:
        """The best ``top_n`` chunks for a plain-terms query, best first (BM25); None
        when the store does not exist.

        Each hit's score is its relevance (`rank_hits`); hits below ``threshold`` and
        hits with no positive score are left out.
        """
        with self._snapshot():
            ranked = self.ranked(store_id, query, candidate_count(top_n, query))
            if ranked is None:
                return None
            if not ranked:
                return []
            marks = ",".join("?" * len(ranked))
            rows = self._read.execute(
                "SELECT c.id, ct.id, c.seq, c.start_line, c.end_line, c.body, ct.filename"
                " FROM chunks c JOIN contents ct ON ct.rid = c.content_rid"
                f" WHERE c.id IN ({marks})",
                [rowid for rowid, _ in ranked],
            ).fetchall()
        return rank_hits(found_candidates(ranked, rows), query, top_n, threshold)

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction on the read connection (or the one already open): a
        search sees one state of the file from its first statement to its last, as do
        the index facts it keeps (`IndexCache`)."""
        conn = self._read
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")

    def ranked(self, store_id: str, query: str, k: int) -> list[tuple[int, float]] | None:
        """The ``k`` best ``(chunk id, BM25)`` pairs for a plain-terms query, best first,
        with a positive score: FTS5's ranking, exactly; None when the store does not
        exist.

        A query of single-token terms, or of one phrase of several (a CJK word), reads
        the sealed blocks by bound (`top_k`) and FTS5 ranks the unsealed tail. Such a
        phrase beside other terms (up to `UNION_PHRASES` in all) is ranked from the
        chunks holding two phrases or more and each phrase's own top k in the blocks
        above the k-th score those reach (`search_phrase_union`), in a store of
        ``union_blocks`` or more: bounded together by their tokens' bounds, they skip
        few blocks (at 104,000 chunks, two or three CJK words: 71-85 of 102 blocks
        read, 10.5-14.9 ms against FTS5's 10.0-13.4 ms); this way a CJK word beside
        another takes 0.7-2.4 ms, three phrases 3.1-8.7 ms against FTS5's 6.6-14.8
        (one word alone, 7-15 blocks, 0.7-0.8 ms against 3.7). A prefix (a lone CJK
        character), a phrase among more terms, or three or more phrases that many
        chunks hold together (``several_row_cost``), is ranked by FTS5 over the whole
        store, as is any query of a store of fewer than ``min_blocks``.
        """
        with self._snapshot():
            conn = self._read
            index = self._indexes.current(store_id)
            if index is None:
                return None
            wanted = phrases(query)
            if not wanted:
                return []
            fts = index.fts
            expression = " OR ".join(match(phrase) for phrase in wanted)
            rank_tail = (
                (lambda: self._rank_range(fts, expression, index.sealed + 1, _MAX_ROWID, k))
                if index.unsealed
                else None
            )
            if len(index.blocks) < self.min_blocks or any(p.prefix for p in wanted):
                found = self._rank_range(fts, expression, 0, _MAX_ROWID, k)
            elif len(wanted) == 1 or all(len(p.tokens) == 1 for p in wanted):
                found = search_blocks(conn, index, wanted, k, rank_tail)
            elif (
                len(index.blocks) >= self.union_blocks
                and 2 <= len({phrase.tokens for phrase in wanted}) <= UNION_PHRASES
            ):
                union = search_phrase_union(
                    conn, index, wanted, k, rank_tail, self.several_row_cost
                )
                found = (
                    union
                    if union is not None
                    else self._rank_range(fts, expression, 0, _MAX_ROWID, k)
                )
            else:
                found = self._rank_range(fts, expression, 0, _MAX_ROWID, k)
        return [(rowid, score) for rowid, score in found if score > 0]

    def _rank_range(
        self, fts: str, expression: str, lo: int, hi: int, k: int
    ) -> list[tuple[int, float]]:
        """FTS5's ``k`` best rows with rowid in ``lo..hi`` (its own BM25)."""
        return self._read.execute(
            f"SELECT rowid, -rank FROM {fts} WHERE {fts} MATCH ?"
            " AND rowid BETWEEN ? AND ? ORDER BY rank LIMIT ?",
            (expression, lo, hi, k),
        ).fetchall()


_MAX_ROWID: Final = 2**63 - 1
"""The largest rowid: the open end of the newest range."""
