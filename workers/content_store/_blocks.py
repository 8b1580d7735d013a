"""The sealed blocks of a SQLite store: written, rebuilt after deletes, and read for a
block-max search (the algorithm and its bounds: `_blockmax`).

Three tables, next to the chunks they index: ``blocks`` (a store's rowid ranges, each
with its chunks' average length and count), ``block_postings`` (per block and token
the packed postings; the empty token holds the block's chunk ids and lengths) and
``block_bounds`` (per store, token and block: the token's best term score there and
its chunk count, read by token). Everything here runs in the caller's transaction or
on its read connection.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Final

from ._blockmax import (
    block_bound,
    score_block,
    seal,
    skippable_tokens,
    top_k,
)
from ._index_cache import StoreIndex, unsealed
from ._postings import Phrase, idf

__all__ = [
    "match",
    "reseal",
    "seal_blocks",
    "search_blocks",
]


def seal_blocks(
    conn: sqlite3.Connection,
    store_rid: int,
    store_id: str,
    block_chunks: int,
    limit: int | None = None,
) -> int:
    """Seal the store's newest chunks into blocks of up to ``block_chunks`` (`seal`),
    at most ``limit`` blocks, in the caller's transaction; how many were written.
    Chunks not sealed yet are ranked by FTS5: the search is exact either way."""
    sealed = 0
    while (limit is None or sealed < limit) and unsealed(conn, store_rid, store_id):
        last = conn.execute(
            "SELECT lo, hi, size FROM blocks WHERE store_rid = ? ORDER BY lo DESC LIMIT 1",
            (store_rid,),
        ).fetchone()
        if last is not None and last[2] < block_chunks:
            # The newest block is not full: rebuilt with the chunks after it, so a
            # trickle of writes leaves one growing block, not many small ones.
            lo = last[0]
            _drop_block(conn, store_rid, lo)
        else:
            lo = (last[1] if last is not None else 0) + 1
        rows = conn.execute(
            "SELECT id, body FROM chunks WHERE store_id = ? AND id >= ? ORDER BY id LIMIT ?",
            (store_id, lo, block_chunks),
        ).fetchall()
        _write_block(conn, store_rid, lo, rows[-1][0], rows)
        sealed += 1
    return sealed


def _drop_block(conn: sqlite3.Connection, store_rid: int, lo: int) -> None:
    conn.execute("DELETE FROM blocks WHERE store_rid = ? AND lo = ?", (store_rid, lo))
    conn.execute("DELETE FROM block_postings WHERE store_rid = ? AND lo = ?", (store_rid, lo))
    conn.execute("DELETE FROM block_bounds WHERE store_rid = ? AND lo = ?", (store_rid, lo))


def _write_block(
    conn: sqlite3.Connection,
    store_rid: int,
    lo: int,
    hi: int,
    rows: Sequence[tuple[int, str]],
) -> None:
    block = seal(rows)
    conn.execute(
        "INSERT INTO blocks (store_rid, lo, hi, average, size) VALUES (?, ?, ?, ?, ?)",
        (store_rid, lo, hi, block.average, len(rows)),
    )
    # The chunk ids and lengths travel as the postings of the empty token (never a
    # real one): a search reads them with the query's postings, in one statement.
    tokens = sorted(block.postings)
    conn.executemany(
        "INSERT INTO block_postings (store_rid, lo, token, postings) VALUES (?, ?, ?, ?)",
        (
            (store_rid, lo, "", block.ids.tobytes() + block.lengths.tobytes()),
            *((store_rid, lo, token, block.postings[token][1]) for token in tokens),
        ),
    )
    # The bounds apart, small rows by token: a search reads a token's bound in every
    # block as one range of the key, not one lookup per block among the postings.
    conn.executemany(
        "INSERT INTO block_bounds (store_rid, token, lo, bound, df) VALUES (?, ?, ?, ?, ?)",
        (
            (
                store_rid,
                token,
                lo,
                block.postings[token][0],
                len(block.postings[token][1]) // _PAIR_BYTES,
            )
            for token in tokens
        ),
    )


def reseal(
    conn: sqlite3.Connection, store_rid: int, store_id: str, chunk_ids: Sequence[int]
) -> None:
    """Rebuild the blocks that held ``chunk_ids`` (just deleted) from the chunks left
    in their ranges, so a block's postings are always its chunks' own."""
    if not chunk_ids:
        return
    blocks = conn.execute(
        "SELECT lo, hi FROM blocks WHERE store_rid = ? AND hi >= ? AND lo <= ?",
        (store_rid, min(chunk_ids), max(chunk_ids)),
    ).fetchall()
    for lo, hi in blocks:
        _drop_block(conn, store_rid, lo)
        rows = conn.execute(
            "SELECT id, body FROM chunks WHERE store_id = ? AND id BETWEEN ? AND ? ORDER BY id",
            (store_id, lo, hi),
        ).fetchall()
        # An emptied block stays as a range with no postings: the ids below the
        # newest block's end are never handed out again.
        _write_block(conn, store_rid, lo, hi, rows)


def search_blocks(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    k: int,
    rank_tail: Callable[[], list[tuple[int, float]]] | None,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(chunk id, BM25)`` pairs for a query of single-token terms:
    `top_k` over the store's blocks (``index``), scored from their postings, and the
    chunks after the last ranked by ``rank_tail`` (FTS5), if any wait."""
    tokens = [phrase.tokens[0] for phrase in wanted]
    distinct = sorted(set(tokens))
    marks = ",".join("?" * len(distinct))
    bounds = index.bounds(distinct)
    # Each token's document frequency: postings in the blocks plus the tail's rows.
    frequency = {
        token: sum(df for _, _, df in bounds[token])
        + (index.tail_frequency(token) if rank_tail is not None else 0)
        for token in distinct
    }
    average = index.average
    weights = [(token, idf(index.rows, frequency[token])) for token in tokens]
    # A token written twice in the query (as two terms) counts twice, as in FTS5.
    token_weight = dict.fromkeys(distinct, 0.0)
    for token, weight in weights:
        token_weight[token] += weight
    factors = index.factors
    contributions: dict[int, dict[str, float]] = {}
    for token in distinct:
        weight = token_weight[token]
        for lo, bound, _ in bounds[token]:
            contributions.setdefault(lo, {})[token] = weight * bound * factors[lo]
    together = _together(conn, index, distinct)
    ranges: list[tuple[float, int]] = [(math.inf, _TAIL)] if rank_tail is not None else []
    for lo, block in contributions.items():
        found = None if together is None else together.get(lo, ())
        ranges.append((block_bound(block, found), lo))

    def read(lo: int, threshold: float) -> list[tuple[int, float]]:
        if rank_tail is not None and lo == _TAIL:
            return rank_tail()
        packed: dict[str, bytes] = dict(
            conn.execute(
                "SELECT token, postings FROM block_postings"
                f" WHERE store_rid = ? AND lo = ? AND token IN ({marks})",
                (index.rid, lo, *distinct),
            ).fetchall()
        )
        ids, lengths = index.chunks(lo)
        terms = [(token, weight, packed[token]) for token, weight in weights if token in packed]
        return score_block(
            ids, lengths, terms, average, skippable_tokens(contributions[lo], threshold)
        )

    return top_k(ranges, k, read)


def _together(
    conn: sqlite3.Connection, index: StoreIndex, tokens: Sequence[str]
) -> dict[int, list[set[str]]] | None:
    """Per block, the query tokens each of its chunks holding two or more of them
    holds (FTS5 intersects the doclists); None for a query of too many terms."""
    if len(tokens) > _PAIRWISE_TERMS:
        return None
    present: dict[int, set[str]] = {}
    for first, second in itertools.combinations(tokens, 2):
        for (rowid,) in conn.execute(
            f"SELECT rowid FROM {index.fts} WHERE {index.fts} MATCH ? AND rowid <= ?",
            (f'"{first}" AND "{second}"', index.sealed),
        ):
            present.setdefault(rowid, set()).update((first, second))
    starts = index.starts
    together: dict[int, list[set[str]]] = {}
    for rowid, found in present.items():
        together.setdefault(starts[bisect.bisect_right(starts, rowid) - 1], []).append(found)
    return together


_TAIL: Final = -1
"""The key of the unsealed tail among the ranges `top_k` reads."""
_PAIRWISE_TERMS: Final = 8
"""Up to this many distinct terms, a search finds the chunks holding two or more of
them (a query per pair) to bound each block tightly; above, bounds add every term."""
_PAIR_BYTES: Final = 8
"""Bytes per posting in a block: an index and a frequency, 4 bytes each."""


def match(phrase: Phrase) -> str:
    """One phrase as FTS5 syntax: its tokens are letters and digits only, so nothing
    inside the quotes is syntax."""
    return '"' + " ".join(phrase.tokens) + '"' + (" *" if phrase.prefix else "")
