"""The pending tail of a PostgreSQL store, indexed in the memory of each process.

The chunks past a store's merged watermark are not in sealed blocks yet: a search
scores them from the tokens written with them. Matching them in PostgreSQL
(``LIKE '% token %'`` on every tail chunk) made a search right after a large write
cost 26-28 ms in the bench (0.8-1 ms settled); a process instead keeps the tail's
postings (`TailCache`),
built once from the tail's chunk rows and then extended by reading only the rows
newer than the newest it holds.

What keeps it exact across processes and replicas: within a store, chunk ids grow in
commit order (writers hold the store's row lock while they take ids), so the rows a
search's snapshot holds up to its newest id never change but for deletes. When the
watermark moves (a merge sealed the oldest part), the kept tail leaves out what the
merge sealed; it is dropped and built again when the store's chunk count is not the
kept count plus the rows just read (a delete, here or elsewhere), when most of it was
merged, or when the watermark moved back (a re-index); a search whose snapshot is
older than the kept tail builds one of its own and leaves the kept one alone.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Container, Sequence
from typing import Any, Final, NamedTuple

__all__ = ["TailCache", "TailView"]

_KEPT_CHUNKS: Final = 32_768
"""Pending chunks a process keeps, over every store (about 4 KB each, measured: texts
and postings); the least recently searched stores' tails are dropped past it, the one
searched last is kept whatever its size (the merge bounds it while writes go on)."""


class TailView(NamedTuple):
    """What a search reads of the tail: every pending chunk's id, length and token
    text (in id order), and per query token (or token a query prefix starts) its
    packed ``(index, tf)`` pairs (indexes into ``ids``), as a sealed block's postings."""

    ids: array[int]
    lengths: array[int]
    texts: list[str]
    postings: dict[str, bytes]

    def positions(self, chunk_id: int, wanted: Container[str]) -> dict[str, list[int]]:
        """Where each token of ``wanted`` stands in the pending chunk ``chunk_id`` (only
        those: all of a chunk's tokens cost 5 µs each, most of a phrase search of a
        large tail, measured)."""
        where: dict[str, list[int]] = {}
        tokens = self.texts[bisect.bisect_left(self.ids, chunk_id)].split()
        for position, token in enumerate(tokens):
            if token in wanted:
                where.setdefault(token, []).append(position)
        return where


class _Tail:
    """One store's pending chunks as of its newest id read: ids, lengths, token texts
    and an inverted index (token -> packed ``(index, tf)`` pairs), only appended to;
    the chunks before index `start` were merged since (sealed: no longer pending)."""

    def __init__(self, merged: int) -> None:
        self.merged = merged
        self.newest = merged
        self.start = 0
        # The store's chunk count in the snapshot that read up to `newest`.
        self.rows = 0
        self.ids = array("q")
        self.lengths = array("i")
        self.texts: list[str] = []
        self.index: dict[str, array[int]] = {}

    def extend(self, conn: Any, rid: int, newest: int) -> int:
        """Read the store's chunks after the newest held, up to ``newest``; how many."""
        found = conn.execute(
            "SELECT id, length, tokens FROM cs_chunks WHERE store_rid = %s AND id > %s"
            " AND id <= %s ORDER BY id",
            (rid, self.newest, newest),
        ).fetchall()
        index = self.index
        for chunk_id, length, text in found:
            position = len(self.ids)
            self.ids.append(chunk_id)
            self.lengths.append(length)
            self.texts.append(text)
            for token, tf in Counter(text.split()).items():
                pairs = index.get(token)
                if pairs is None:
                    index[token] = pairs = array("i")
                pairs.extend((position, tf))
        self.newest = newest
        return len(found)

    def advance(self, merged: int) -> None:
        """Leave out the chunks up to ``merged``, which a merge sealed (the watermark
        moves a block at a time while writes go on, and building a 5,198-chunk tail
        took 0.3 s, measured)."""
        self.merged = merged
        self.start = bisect.bisect_right(self.ids, merged)

    def view(self, tokens: Sequence[str], prefixes: Sequence[str]) -> TailView:
        """The chunks and, per token of ``tokens`` (and token ``prefixes`` start), its
        postings from index `start` on, copied: later appends do not show."""
        found = [token for token in tokens if token in self.index]
        if prefixes:
            started = tuple(prefixes)
            found += [token for token in self.index if token.startswith(started)]
        postings = {}
        for token in found:
            pairs = self.index[token]
            cut = bisect.bisect_left(pairs[0::2], self.start) if self.start else 0
            if cut * 2 < len(pairs):
                postings[token] = pairs[cut * 2 :].tobytes()
        size = len(self.ids)
        return TailView(self.ids[:size], self.lengths[:size], self.texts[:size], postings)


class TailCache:
    """Per store, its pending tail's postings, kept by a process across searches (see
    the module docstring); safe to share between threads."""

    def __init__(self, size: int = _KEPT_CHUNKS) -> None:
        self._size = size
        self._tails: OrderedDict[int, _Tail] = OrderedDict()
        self._lock = threading.Lock()

    def view(
        self,
        conn: Any,
        store: tuple[int, int, int, int],
        tokens: Sequence[str],
        prefixes: Sequence[str] = (),
    ) -> TailView:
        """The tail of ``store`` (its row id, chunk count, merged watermark and newest
        chunk id, read in one snapshot) for a query's ``tokens`` and ``prefixes``, read
        on ``conn`` (in that snapshot, or after it)."""
        rid, rows, merged, newest = store
        with self._lock:
            kept = self._tails.get(rid)
            if kept is not None and kept.merged <= merged and kept.newest <= newest:
                added = kept.extend(conn, rid, newest)
                if kept.merged < merged:
                    kept.advance(merged)
                # Half of what is kept merged: built again, smaller.
                compact = kept.start * 2 > len(kept.ids)
                if kept.rows + added == rows and not compact:
                    kept.rows = rows
                    self._keep(rid, kept)
                    return kept.view(tokens, prefixes)
            elif kept is not None and kept.newest > newest:
                # This search's snapshot is older than what is kept: a tail of its own.
                own = _Tail(merged)
                own.extend(conn, rid, newest)
                return own.view(tokens, prefixes)
            # A delete changed the tail (or a merge sealed most of it): built again
            # from its rows.
            fresh = _Tail(merged)
            fresh.extend(conn, rid, newest)
            fresh.rows = rows
            self._keep(rid, fresh)
            return fresh.view(tokens, prefixes)

    def _keep(self, rid: int, tail: _Tail) -> None:
        """Keep ``tail`` as the most recently searched, within `_KEPT_CHUNKS` (called
        under the lock)."""
        self._tails[rid] = tail
        self._tails.move_to_end(rid)
        while len(self._tails) > 1 and sum(len(t.ids) for t in self._tails.values()) > self._size:
            self._tails.popitem(last=False)
