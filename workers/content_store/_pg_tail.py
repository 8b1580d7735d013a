"""The pending tail of a PostgreSQL store, indexed in the memory of each process.

The chunks past a store's merged watermark are not in sealed blocks yet: a search
scores them from the tokens written with them. Matching them in PostgreSQL
(``LIKE '% token %'`` on every tail chunk) cost 25-280 ms per search right after a
large write, measured; a process instead keeps the tail's postings (`TailCache`),
built once from the tail's chunk rows and then extended by reading only the rows
newer than the newest it holds.

What keeps it exact across processes and replicas: within a store, chunk ids grow in
commit order (writers hold the store's row lock while they take ids), so the rows a
search's snapshot holds up to its newest id never change but for deletes. A kept tail
is dropped and built again when the watermark moves (a merge sealed part of it) or
when the store's chunk count is not the kept count plus the rows just read (a delete,
here or elsewhere); a search whose snapshot is older than the kept tail builds one of
its own and leaves the kept one alone.
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

__all__ = ["TailCache", "TailView"]

_CACHED_STORES: Final = 16
"""Stores whose pending tail a process keeps (the tail is bounded by the merge: about
8 blocks while writes go on, some MB of postings)."""


class TailView(NamedTuple):
    """What a search reads of the tail: every pending chunk's id, length and token
    text (in id order), and per query token (or token a query prefix starts) its
    packed ``(index, tf)`` pairs (indexes into ``ids``), as a sealed block's postings."""

    ids: array[int]
    lengths: array[int]
    texts: list[str]
    postings: dict[str, bytes]

    def matching(self) -> list[tuple[int, int, list[str]]]:
        """``(id, length, tokens in order)`` of each chunk holding a token of
        `postings`, in id order."""
        found: set[int] = set()
        for packed in self.postings.values():
            pairs = array("i")
            pairs.frombytes(packed)
            found.update(pairs[0::2])
        return [(self.ids[n], self.lengths[n], self.texts[n].split()) for n in sorted(found)]


class _Tail:
    """One store's pending chunks as of its newest id read: ids, lengths, token texts
    and an inverted index (token -> packed ``(index, tf)`` pairs), only appended to."""

    def __init__(self, merged: int) -> None:
        self.merged = merged
        self.newest = merged
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

    def view(self, tokens: Sequence[str], prefixes: Sequence[str]) -> TailView:
        """The chunks and, per token of ``tokens`` (and token ``prefixes`` start), its
        postings, copied: later appends do not show."""
        postings = {token: self.index[token].tobytes() for token in tokens if token in self.index}
        if prefixes:
            started = tuple(prefixes)
            for token, pairs in self.index.items():
                if token.startswith(started):
                    postings[token] = pairs.tobytes()
        size = len(self.ids)
        return TailView(self.ids[:size], self.lengths[:size], self.texts[:size], postings)


class TailCache:
    """Per store, its pending tail's postings, kept by a process across searches (see
    the module docstring); safe to share between threads."""

    def __init__(self, size: int = _CACHED_STORES) -> None:
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
            if kept is not None and kept.merged == merged and kept.newest <= newest:
                added = kept.extend(conn, rid, newest)
                if kept.rows + added == rows:
                    kept.rows = rows
                    self._tails.move_to_end(rid)
                    return kept.view(tokens, prefixes)
            elif kept is not None and kept.newest > newest:
                # This search's snapshot is older than what is kept: a tail of its own.
                own = _Tail(merged)
                own.extend(conn, rid, newest)
                return own.view(tokens, prefixes)
            # A merge or a delete changed the tail: built again from its rows.
            fresh = _Tail(merged)
            fresh.extend(conn, rid, newest)
            fresh.rows = rows
            self._tails[rid] = fresh
            self._tails.move_to_end(rid)
            if len(self._tails) > self._size:
                self._tails.popitem(last=False)
            return fresh.view(tokens, prefixes)
