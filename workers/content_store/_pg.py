"""The content store on PostgreSQL: stores, contents, line chunks and their search index.

Tables (prefixed ``cs_``; planning's share the database under ``planning_``):

- ``cs_stores``: one row per store, with the store's chunk and token totals (BM25's
  N and average length), kept in the same transaction as every change, its merged
  watermark (the newest chunk id in its sealed blocks), its block count and the
  newest chunk id it ever held;
- ``cs_contents``: one row per item, ``UNIQUE (store_rid, sha256)``: the duplicate
  rule is the database's, so two pools adding the same text at once store it once;
- ``cs_chunks``: the line chunks, with their token count and tokens (one text, each
  token between spaces: a search of the pending tail splits it, `_pg_tail`);
- ``cs_blocks`` and ``cs_block_postings``: the search index, sealed blocks of chunks
  with per-token postings and bounds (`_pg_index`).

The statements that make them, version by version, are `_pg_schema`'s; the locks a
change of the blocks takes, `_pg_locks`'; the COPY text of chunk rows, `_pg_copy`'s.

Adding an item writes its row and its chunks (one ``COPY``) and nothing per token:
the new chunks wait in the store's pending tail until a merge seals them into blocks,
on a thread of this process once writes stop (`IndexMerger`), or when a process
starts. A search is exact either way: FTS5's BM25 (`_postings`) over the blocks, by
block-max, and over the tail, from the postings each process keeps of it in memory
(`TailCache`). The query text only selects
tokens: it never reaches PostgreSQL as syntax.

Writers to one store take its row lock (``FOR NO KEY UPDATE``) first: the duplicate
check, the inserts and the totals are serialised per store across every process. A
merge step takes the store's merge lock (advisory) and not its row lock, so adds go on
while it seals; deletes, which seal blocks again, take the merge lock first too. One
transaction per change means a killed worker leaves nothing half-written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, Literal

from nativemcp.protocol import DatabaseUnavailable
from nativemcp.workers._database import (
    POOL_MAX_SIZE,
    Database,
)

from ._blockmax import BLOCK_CHUNKS, fast_tokens
from ._merging import IDLE_SECONDS, IndexMerger
from ._models import ContentSummary, SearchHit, StoreInfo
from ._pg_copy import copy_text, token_text
from ._pg_index import BlockCache, Kept, merge_step, ranked, reseal
from ._pg_items import ItemNames
from ._pg_locks import lock_blocks, merge_lock
from ._pg_schema import COMPONENT, MIGRATIONS, check_index
from ._pg_tail import TailCache
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

__all__ = ["COMPONENT", "INDEX_VERSION", "MIGRATIONS", "PostgresContentDB"]

URGENT_BLOCKS: Final = 16
"""While writes to a store go on, its pending tail is sealed (a full block at a time,
on the merging thread) once it would fill this many blocks. Searches score the tail
from postings each process keeps (`TailCache`), so this bounds their memory (about
4 KB a chunk) rather than their time; sealing beside the writes costs the write path
(the merge's Python takes the worker's time: at 8 blocks the bench's write path fell
to 0.37-0.44x SQLite's once its searches between the two halves took milliseconds,
not the seconds in which the idle merge used to start; 2 blocks halved it)."""

_CONTENT_COLUMNS: Final = (
    "s.id, c.id, c.filename, c.mime_type, c.size, c.line_count, c.chunk_count, c.preview,"
    " c.uploaded_at, c.sha256"
)
_CONTENT_FROM: Final = "cs_contents c JOIN cs_stores s ON s.rid = c.store_rid"
_STORE_SELECT: Final = (
    "SELECT s.id, s.name, s.description, s.session_id, s.created_at, s.updated_at,"
    " (SELECT count(*) FROM cs_contents c WHERE c.store_rid = s.rid) FROM cs_stores s"
)


def _timestamptz(value: datetime) -> datetime:
    """A ``TIMESTAMPTZ`` as read: psycopg already returns an aware datetime."""
    return value


def _store(row: Sequence[Any]) -> StoreInfo:
    return store_info(row, _timestamptz)


def _summary(row: Sequence[Any]) -> ContentSummary:
    return content_summary(row, _timestamptz)


class PostgresContentDB:
    """Stores, contents and search in a PostgreSQL database (see the module docstring).

    Raises:
        ValueError: ``url`` is not a PostgreSQL URL, or ``pool_size`` is below 1.
    """

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = POOL_MAX_SIZE,
        merge_idle: float = IDLE_SECONDS,
        block_chunks: int = BLOCK_CHUNKS,
    ) -> None:
        """Connect (lazily) to the database at ``url`` with at most ``pool_size``
        connections; a store's pending chunks are sealed into blocks of
        ``block_chunks`` once no write came for ``merge_idle`` seconds."""
        import psycopg

        self.db = Database(
            url,
            COMPONENT,
            MIGRATIONS,
            after_migrate=check_index,
            pool_size=pool_size,
            # Every statement here is planned well without its parameters' values;
            # replanning each execution (PostgreSQL's default for these) cost more
            # than running it: a search's main statement 0.55 -> 0.21 ms, measured.
            settings={"plan_cache_mode": "force_generic_plan"},
        )
        self.block_chunks = block_chunks
        self.merge_idle = merge_idle
        self._kept = Kept(BlockCache(), TailCache())
        self._items = ItemNames()
        # Per store, when this process last wrote to it: while writes go on, a merge
        # seals only full blocks.
        self._written: dict[str, float] = {}
        # Merging only makes searches faster: a database that fails meanwhile leaves
        # the tail pending (searched exactly), and the next write tries again.
        self._merger = IndexMerger(
            self._merge_step, idle=merge_idle, errors=(psycopg.Error, DatabaseUnavailable)
        )

    def close(self) -> None:
        """Stop merging (a step in progress finishes first), then close the connection
        pool (idempotent)."""
        self._merger.close()
        self.db.close()

    def _merge_step(self, store_id: str, *, wait: bool = False) -> bool:
        """Seal one block of the store's pending chunks (`merge_step`) in a transaction
        of its own; False once none waits, the store is gone or (unless ``wait``)
        another process is merging it."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT rid FROM cs_stores WHERE id = %s", (store_id,)).fetchone()
            if row is None or not merge_lock(conn, row[0], wait=wait):
                return False
            # Read under the merge lock, which every change of the blocks holds: adds
            # go on meanwhile (their chunks come after every chunk read here).
            merged = conn.execute(
                "SELECT merged FROM cs_stores WHERE rid = %s", (row[0],)
            ).fetchone()
            writing = time.monotonic() - self._written.get(store_id, -math.inf) < self.merge_idle
            return merged is not None and merge_step(
                conn, row[0], merged[0], self.block_chunks, full=writing
            )

    def merge(self, store_id: str) -> None:
        """Seal every pending chunk of the store now, after any merge of it in progress
        (the merging thread does it once writes stop)."""
        self._written.pop(store_id, None)
        while self._merge_step(store_id, wait=True):
            pass

    # -- stores ----------------------------------------------------------------------

    def create_store(self, name: str, description: str | None, session_id: str | None) -> StoreInfo:
        """Add an empty store."""
        now = utc_now()
        store_id = new_id("st")
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO cs_stores (id, name, description, session_id, created_at,"
                " updated_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (store_id, name, description, session_id, now, now),
            )
        return StoreInfo(
            store_id=store_id,
            name=name,
            description=description,
            session_id=session_id,
            created_at=now,
            updated_at=now,
        )

    def get_store(self, store_id: str) -> StoreInfo | None:
        """The store, or None."""
        with self.db.connection() as conn:
            row = conn.execute(f"{_STORE_SELECT} WHERE s.id = %s", (store_id,)).fetchone()
        return _store(row) if row else None

    def list_stores(self, session_id: str | None = None) -> list[StoreInfo]:
        """Every store (or a session's), oldest first."""
        with self.db.connection() as conn:
            if session_id is None:
                rows = conn.execute(f"{_STORE_SELECT} ORDER BY s.rid").fetchall()
            else:
                rows = conn.execute(
                    f"{_STORE_SELECT} WHERE s.session_id = %s ORDER BY s.rid", (session_id,)
                ).fetchall()
        return [_store(row) for row in rows]

    def delete_store(self, store_id: str) -> int:
        """Remove a store and its contents; the number of contents removed."""
        with self.db.transaction() as conn:
            rid = lock_blocks(conn, store_id, "UPDATE")
            if rid is None:
                return 0
            count = conn.execute(
                "SELECT count(*) FROM cs_contents WHERE store_rid = %s", (rid,)
            ).fetchone()
            conn.execute("DELETE FROM cs_block_postings WHERE store_rid = %s", (rid,))
            conn.execute("DELETE FROM cs_blocks WHERE store_rid = %s", (rid,))
            # Contents and their chunks go by cascade.
            conn.execute("DELETE FROM cs_stores WHERE rid = %s", (rid,))
        return int(count[0]) if count else 0

    # -- contents --------------------------------------------------------------------

    def _content_where(
        self, column: Literal["id", "sha256"], store_id: str, value: str
    ) -> ContentSummary | None:
        """The summary of the store's content whose ``column`` is ``value``, or None."""
        with self.db.connection() as conn:
            row = conn.execute(
                f"SELECT {_CONTENT_COLUMNS} FROM {_CONTENT_FROM}"
                f" WHERE s.id = %s AND c.{column} = %s",
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

        Raises:
            LookupError: the store is gone.
        """
        total = len(item.chunks)
        tokenized = [fast_tokens(chunk.text) for chunk in item.chunks]
        with self.db.transaction() as conn:
            # The store's lock: one writer per store at a time, across every process.
            row = conn.execute(
                "SELECT rid, merged FROM cs_stores WHERE id = %s FOR NO KEY UPDATE", (store_id,)
            ).fetchone()
            if row is None:
                raise LookupError(f"store {store_id} is gone")
            store_rid, merged = row
            newest = merged
            now = utc_now()
            inserted = conn.execute(
                "INSERT INTO cs_contents (id, store_rid, filename, mime_type, size, line_count,"
                " chunk_count, preview, uploaded_at, sha256, body)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (store_rid, sha256) DO NOTHING RETURNING rid",
                content_values(new_id("ct"), store_rid, item, now),
            ).fetchone()
            if inserted is not None:
                newest = self._index(conn, store_rid, inserted[0], item, tokenized, progress)
                conn.execute(
                    "UPDATE cs_stores SET updated_at = %s, chunk_total = chunk_total + %s,"
                    " token_total = token_total + %s, newest = greatest(newest, %s)"
                    " WHERE rid = %s",
                    (now, total, sum(len(tokens) for tokens in tokenized), newest, store_rid),
                )
            found = conn.execute(
                f"SELECT {_CONTENT_COLUMNS} FROM {_CONTENT_FROM}"
                " WHERE c.store_rid = %s AND c.sha256 = %s",
                (store_rid, item.sha256),
            ).fetchone()
        assert found is not None
        if inserted is not None and total:
            # Every chunk written is pending: the merge is due once writes stop, and
            # before, a full block at a time, once the tail would fill `URGENT_BLOCKS`
            # (ids count every store's chunks: at most an early look that finds too
            # few to seal).
            self._written[store_id] = time.monotonic()
            self._merger.wrote(
                store_id,
                total,
                total,
                urgent=newest - merged >= URGENT_BLOCKS * self.block_chunks,
            )
        return _summary(found), inserted is None

    @staticmethod
    def _index(
        conn: Any,
        store_rid: int,
        content_rid: int,
        item: NewContent,
        tokenized: list[list[str]],
        progress: Callable[[int, int], None] | None,
    ) -> int:
        """Write the item's chunks; the newest chunk id."""
        total = len(item.chunks)
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('cs_chunks', 'id'))"
                " FROM generate_series(1, %s)",
                (total,),
            ).fetchall()
        ]
        for start in range(0, total, INSERT_BATCH):
            stop = min(start + INSERT_BATCH, total)
            # COPY text written directly (the adapters' per-value cost dominated ingest):
            # tokens are letters and digits only, so they need no escaping; the body does.
            chunk_rows = "".join(
                f"{ids[n]}\t{content_rid}\t{store_rid}\t{n}\t{item.chunks[n].start_line}"
                f"\t{item.chunks[n].end_line}\t{len(tokenized[n])}"
                f"\t{token_text(tokenized[n])}"
                f"\t{copy_text(item.chunks[n].text)}\n"
                for n in range(start, stop)
            )
            with conn.cursor().copy(
                "COPY cs_chunks (id, content_rid, store_rid, seq, start_line, end_line,"
                " length, tokens, body) FROM STDIN"
            ) as copy:
                copy.write(chunk_rows.encode("utf-8"))
            if progress is not None:
                progress(stop, total)
        return ids[-1] if ids else 0

    def get_content(self, store_id: str, content_id: str) -> ContentSummary | None:
        """A content item's summary, or None."""
        return self._content_where("id", store_id, content_id)

    def content_text(self, content_id: str) -> str:
        """The stored text of a content item ('' if it is gone)."""
        with self.db.connection() as conn:
            row = conn.execute(
                "SELECT body FROM cs_contents WHERE id = %s", (content_id,)
            ).fetchone()
        return str(row[0]) if row else ""

    def count_contents(self, store_id: str) -> int:
        """How many contents the store holds."""
        with self.db.connection() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {_CONTENT_FROM} WHERE s.id = %s", (store_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def list_contents(self, store_id: str, offset: int, limit: int) -> list[ContentSummary]:
        """A page of the store's contents, oldest first."""
        with self.db.connection() as conn:
            rows = conn.execute(
                f"SELECT {_CONTENT_COLUMNS} FROM {_CONTENT_FROM} WHERE s.id = %s"
                " ORDER BY c.rid LIMIT %s OFFSET %s",
                (store_id, limit, offset),
            ).fetchall()
        return [_summary(row) for row in rows]

    def delete_content(self, store_id: str, content_id: str) -> int:
        """Remove a content item and its chunks; the number of chunks removed."""
        with self.db.transaction() as conn:
            store_rid = lock_blocks(conn, store_id, "NO KEY UPDATE")
            if store_rid is None:
                return 0
            content = conn.execute(
                "SELECT rid FROM cs_contents WHERE store_rid = %s AND id = %s",
                (store_rid, content_id),
            ).fetchone()
            if content is None:
                return 0
            chunks = conn.execute(
                "SELECT id, length FROM cs_chunks WHERE content_rid = %s", (content[0],)
            ).fetchall()
            conn.execute("DELETE FROM cs_contents WHERE rid = %s", (content[0],))
            # Their blocks, sealed again without them: postings and counts stay exact.
            reseal(conn, store_rid, [chunk_id for chunk_id, _ in chunks])
            conn.execute(
                "UPDATE cs_stores SET updated_at = %s, chunk_total = chunk_total - %s,"
                " token_total = token_total - %s WHERE rid = %s",
                (utc_now(), len(chunks), sum(length for _, length in chunks), store_rid),
            )
        return len(chunks)

    # -- search ----------------------------------------------------------------------

    def search(
        self, store_id: str, query: str, top_n: int, threshold: float | None
    ) -> list[SearchHit] | None:
        """The best ``top_n`` chunks for a plain-terms query, best first (BM25); None
        when the store does not exist.

        ``candidate_count(top_n)`` chunks are ranked by BM25, then by relevance
        (`rank_hits`, as on SQLite); hits below ``threshold`` and hits with no positive
        score are left out.
        """
        with self.db.connection() as conn:
            found = self._ranked(conn, store_id, query, candidate_count(top_n, query))
            if found is None:
                return None
            found = [(chunk_id, score) for chunk_id, score in found if score > 0]
            if not found:
                return []
            candidates = found_candidates(
                found, self._items.candidate_rows(conn, [chunk_id for chunk_id, _ in found])
            )
        return rank_hits(candidates, query, top_n, threshold)

    def ranked(self, store_id: str, query: str, k: int) -> list[tuple[int, float]] | None:
        """The ``k`` best ``(chunk id, BM25)`` pairs for ``query``, best first (ties:
        lower id first); None when the store does not exist.

        Sealed blocks are read by bound (`ranked`), the pending tail from its postings:
        FTS5's ranking, exactly, whether the store was merged or not.
        """
        with self.db.connection() as conn:
            return self._ranked(conn, store_id, query, k)

    def _ranked(
        self, conn: Any, store_id: str, query: str, k: int
    ) -> list[tuple[int, float]] | None:
        return ranked(conn, store_id, phrases(query), k, self._kept)
