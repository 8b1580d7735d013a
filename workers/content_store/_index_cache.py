"""What a block-max search reads of a SQLite store besides the query's postings, kept
in the process between searches while the database file is unchanged.

A search used to read, every time, the store's block list, FTS5's totals, each query
token's bound in every block and each block it scores' chunk ids and lengths: about
a tenth of a search at 100,000 chunks, and the biggest blob of every block read. None
of it changes unless the file does, so `IndexCache` keeps it per store and drops it
all when SQLite's ``PRAGMA data_version`` moves: that number changes whenever another
connection, of this process or any other sharing the file, commits (the store's own
writer and sealing thread included). Read inside the search's read transaction, it
belongs to the snapshot the search reads, so nothing kept is older than what the
search sees.

Only facts of the index are kept, never a query's result: each search still reads
its tokens' postings and scores them.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable
from typing import Final

from ._blockmax import read_averages, scale_bound, unpack_chunks

__all__ = ["IndexCache", "StoreIndex", "unsealed"]

MAX_TOKENS: Final = 4096
"""Tokens whose unsealed-chunk counts a store keeps; past this they are dropped and
counted again (a store's queries use far fewer distinct tokens than its vocabulary)."""
MAX_BOUNDS: Final = 200_000
"""``(token, block)`` bounds a store keeps (about 25 MB); past this they are dropped
and read again. A token holds one per block it is in: a common token at 300,000
chunks, about 300."""


def unsealed(conn: sqlite3.Connection, store_rid: int, store_id: str) -> bool:
    """Whether chunks newer than the store's last block wait to be sealed (looked up
    on the index: no chunk text is read)."""
    row = conn.execute(
        "SELECT 1 FROM chunks WHERE store_id = ? AND id >"
        " (SELECT coalesce(max(hi), 0) FROM blocks WHERE store_rid = ?) LIMIT 1",
        (store_id, store_rid),
    ).fetchone()
    return row is not None


class StoreIndex:
    """One store's sealed blocks, FTS5 totals, and (read on first use) the bounds of
    the tokens searched and the chunk ids and lengths of the blocks read."""

    __slots__ = (
        "_bounds",
        "_chunks",
        "_conn",
        "_kept",
        "_tail",
        "average",
        "blocks",
        "factors",
        "fts",
        "rid",
        "rows",
        "sealed",
        "starts",
        "unsealed",
    )

    def __init__(self, conn: sqlite3.Connection, rid: int, store_id: str, fts: str) -> None:
        self._conn = conn
        self.rid = rid
        self.fts = fts
        self.blocks: list[tuple[int, int, float]] = conn.execute(
            "SELECT lo, hi, average FROM blocks WHERE store_rid = ? ORDER BY lo", (rid,)
        ).fetchall()
        """``(lo, hi, average length)`` per sealed block, by rowid."""
        self.starts = [lo for lo, _, _ in self.blocks]
        """The blocks' first chunk ids, for bisection."""
        self.sealed = self.blocks[-1][1] if self.blocks else 0
        """The last sealed chunk id (0: none)."""
        self.unsealed = unsealed(conn, rid, store_id)
        """Whether chunks after the last block wait to be sealed (FTS5 ranks them)."""
        row = conn.execute(f"SELECT block FROM {fts}_data WHERE id = 1").fetchone()
        rows, tokens = read_averages(row[0] if row else None)
        self.rows = rows
        """BM25's N: the chunks FTS5 holds."""
        self.average = tokens / rows if rows else 1.0
        """BM25's average chunk length, as FTS5 computes it."""
        self.factors = {lo: scale_bound(1.0, sealed, self.average) for lo, _, sealed in self.blocks}
        """Per block, what its bounds are multiplied by at today's average length."""
        self._bounds: dict[str, list[tuple[int, float, int]]] = {}
        self._kept = 0  # entries in ``_bounds``
        self._chunks: dict[int, tuple[array[int], array[int]]] = {}
        self._tail: dict[str, int] = {}

    def bounds(self, tokens: list[str]) -> dict[str, list[tuple[int, float, int]]]:
        """Per token, ``(block lo, bound, chunks holding it)`` for each block holding it."""
        missing = [token for token in tokens if token not in self._bounds]
        if missing:
            if self._kept + len(missing) * len(self.blocks) > MAX_BOUNDS:
                self._bounds.clear()
                self._kept = 0
                missing = list(dict.fromkeys(tokens))
            for token in missing:
                self._bounds[token] = []
            marks = ",".join("?" * len(missing))
            for lo, token, bound, df in self._conn.execute(
                "SELECT lo, token, bound, df FROM block_bounds"
                f" WHERE store_rid = ? AND token IN ({marks})",
                (self.rid, *missing),
            ):
                self._bounds[token].append((lo, bound, df))
                self._kept += 1
        return {token: self._bounds[token] for token in tokens}

    def tail_frequency(self, token: str) -> int:
        """How many unsealed chunks hold ``token`` (FTS5 counts them)."""
        found = self._tail.get(token)
        if found is None:
            if len(self._tail) >= MAX_TOKENS:
                self._tail.clear()
            found = self._tail[token] = self._conn.execute(
                f"SELECT count(*) FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid > ?",
                (f'"{token}"', self.sealed),
            ).fetchone()[0]
        return found

    def chunks(self, lo: int) -> tuple[array[int], array[int]]:
        """The ids and lengths of block ``lo``'s chunks (its postings index into them)."""
        found = self._chunks.get(lo)
        if found is None:
            (packed,) = self._conn.execute(
                "SELECT postings FROM block_postings WHERE store_rid = ? AND lo = ? AND token = ''",
                (self.rid, lo),
            ).fetchone()
            found = self._chunks[lo] = unpack_chunks(packed)
        return found


class IndexCache:
    """`StoreIndex` per store for one read connection, all dropped when the file
    changes (see the module docstring). Call `current` inside a read transaction."""

    def __init__(self, conn: sqlite3.Connection, fts: Callable[[int], str]) -> None:
        """Keep what ``conn`` (the read connection) reads; ``fts`` names a store's
        FTS5 table from its rowid."""
        self._conn = conn
        self._fts = fts
        self._version: int | None = None
        self._stores: dict[str, StoreIndex] = {}

    def current(self, store_id: str) -> StoreIndex | None:
        """Store ``store_id``'s index facts as of the open transaction's snapshot; None
        when there is no such store. Its rowid is kept with them: a search of a known
        store reads nothing here but the file's version."""
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        if version != self._version:
            self._stores.clear()
            self._version = version
        found = self._stores.get(store_id)
        if found is None:
            row = self._conn.execute("SELECT rid FROM stores WHERE id = ?", (store_id,)).fetchone()
            if row is None:
                return None
            rid = int(row[0])
            found = self._stores[store_id] = StoreIndex(self._conn, rid, store_id, self._fts(rid))
        return found
