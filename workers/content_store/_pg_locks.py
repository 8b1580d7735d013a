"""The locks a change of a PostgreSQL store's sealed blocks takes: the store's merge
lock (advisory: one merge of a store at a time, across every process) and then its row
lock, in the order a merge takes them; and the start's sealing of every store's
pending chunks under them (`merge_all`).
"""

from __future__ import annotations

from typing import Any, Final

from ._pg_index import merge_step

__all__ = ["lock_blocks", "merge_all", "merge_lock"]


def merge_lock(conn: Any, store_rid: int, *, wait: bool = False) -> bool:
    """Whether this transaction now holds the store's merge lock (an advisory lock, so
    two processes never merge one store at once: the second leaves it to the first,
    or with ``wait``, waits for it).

    Advisory locks are the database's, not a schema's: the key holds the schema, or
    the first store of every schema sharing a database (row id 1 in each) would have
    one lock, and a merge of one would leave the others' pending tails unsealed.
    """
    lock = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    row = conn.execute(
        f"SELECT {lock}(hashtext(current_schema() || '.nativemcp.cs_merge'), %s::int4)",
        (store_rid % _INT4,),
    ).fetchone()
    return wait or bool(row[0])


_INT4: Final = 2**31
"""Store row ids wrap into an advisory lock's second key (a rare collision of two
stores, or of two schemas' hashes, makes one of them wait for the next merge)."""


def merge_all(conn: Any) -> None:
    """Seal every store's pending chunks, in the caller's transaction."""
    for (store_rid,) in conn.execute(
        "SELECT rid FROM cs_stores s WHERE EXISTS (SELECT 1 FROM cs_chunks c"
        " WHERE c.store_rid = s.rid AND c.id > s.merged) ORDER BY rid"
    ).fetchall():
        if merge_lock(conn, store_rid):
            merging = True
            while merging:
                (merged,) = conn.execute(
                    "SELECT merged FROM cs_stores WHERE rid = %s", (store_rid,)
                ).fetchone()
                merging = merge_step(conn, store_rid, merged)


def lock_blocks(conn: Any, store_id: str, strength: str) -> int | None:
    """The store's row id, once this transaction holds its merge lock (waiting for a
    merge in progress: the change reseals or drops blocks) and then its row lock
    (``FOR`` ``strength``), in the order a merge takes them; None: no such store."""
    row = conn.execute("SELECT rid FROM cs_stores WHERE id = %s", (store_id,)).fetchone()
    if row is None:
        return None
    merge_lock(conn, row[0], wait=True)
    locked = conn.execute(
        f"SELECT rid FROM cs_stores WHERE rid = %s FOR {strength}", (row[0],)
    ).fetchone()
    return None if locked is None else int(locked[0])
