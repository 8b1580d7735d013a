"""The rows a PostgreSQL search shows: its candidate chunks, with their item's id and
file name, which each process keeps (`ItemNames`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from nativemcp.workers._database import unescape_text

from ._pg_arrays import int8_array

__all__ = ["ItemNames"]

_CACHED_ITEMS: Final = 4096
"""Items whose id and file name a process keeps (about 100 bytes each)."""


class ItemNames:
    """Per item row id, the item's id and file name, kept by a process for the searches
    that show its chunks again: neither ever changes, and a row id is never reused, so
    what is kept is never stale (a deleted item's chunks are in no search's rows).
    Reading them with the chunks cost a join in each search, 0.03-0.05 ms measured;
    safe to share between threads."""

    def __init__(self, size: int = _CACHED_ITEMS) -> None:
        self._size = size
        self._names: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def candidate_rows(self, conn: Any, chunk_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """Per chunk of ``chunk_ids`` still stored: its id, item id, seq, start and end
        line, text and the item's file name (the rows `found_candidates` reads)."""
        chunks = conn.execute(
            "SELECT id, content_rid, seq, start_line, end_line, body FROM cs_chunks"
            " WHERE id = ANY(%s::int8[])",
            (int8_array(chunk_ids),),
            # Binary: the texts as they are, without the connection's text loader (a
            # Python call per row, most of the rows' decoding), so unescaped here.
            binary=True,
        ).fetchall()
        with self._lock:
            names = {rid: self._names.get(rid) for _, rid, *_ in chunks}
            for rid, kept in names.items():
                if kept is not None:
                    self._names.move_to_end(rid)
        missing = [rid for rid, kept in names.items() if kept is None]
        if missing:
            read = {
                rid: (item_id, filename)
                for rid, item_id, filename in conn.execute(
                    "SELECT rid, id, filename FROM cs_contents WHERE rid = ANY(%s::int8[])",
                    (int8_array(missing),),
                )
            }
            names.update(read)
            with self._lock:
                self._names.update(read)
                while len(self._names) > self._size:
                    self._names.popitem(last=False)
        rows = []
        for chunk_id, rid, seq, start, end, body in chunks:
            found = names.get(rid)
            # None: the item was deleted between the two statements.
            if found is not None:
                rows.append((chunk_id, found[0], seq, start, end, unescape_text(body), found[1]))
        return rows
