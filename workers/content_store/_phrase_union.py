"""Exact top k for a query of two phrases, one of several tokens (a CJK word beside
another term), from each phrase's own top k in the sealed blocks.

Bounded together in the blocks, such a query skips few of them: a phrase of several
tokens is bounded by the least of its tokens' bounds, loose for common bigrams. And
FTS5 over the whole store scores every row holding either phrase (about 1 µs a row).
But the top k of ``P1 OR P2`` lies among:

- the chunks holding both: FTS5 finds them (``P1 AND P2``, its doclists intersected)
  and scores them with its own ``rank``, the very float the OR query gives (it sums
  the same parts in the same order);
- each phrase's own top k, scored as in the query (`search_blocks` with the query's
  weights): a chunk holding only ``P1`` scores exactly its ``P1`` part, and if k chunks
  beat that (a lower rowid first among ties, as everywhere), they beat it in the whole
  query too, where a chunk's score only grows with the phrases it holds.

The unsealed tail is ranked by FTS5 (``rank_tail``), as in `search_blocks`.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable, Sequence
from typing import Final

from ._blocks import match, phrase_key, phrase_weights, search_blocks
from ._index_cache import StoreIndex
from ._postings import Phrase

__all__ = ["UNION_BLOCKS", "search_phrase_union"]

UNION_BLOCKS: Final = 64
"""From this many sealed blocks on, a query of two phrases is ranked this way; below,
FTS5 ranks the whole store. `bench.search`'s CJK queries of two words, in process
(median of 3 or 7 runs, a shared 2-core machine): at 31 blocks slower (2.9-3.7 ms
against FTS5's 2.2-2.4), at 61 even (3.2-3.3 against 3.4-3.5), at 102 faster
(2.5-3.2 against 5.7-7.2). Three phrases stay with FTS5: at 102 blocks 9-13 ms this
way against its 10 (three phrases' own top k, and four statements for the chunks
holding two or three of them)."""


def search_phrase_union(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    k: int,
    rank_tail: Callable[[], list[tuple[int, float]]] | None,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(chunk id, BM25)`` pairs for a query of phrases without a prefix,
    of two distinct phrases (see the module docstring), best first, a lower rowid first
    among ties: FTS5's ranking, exactly.

    Raises:
        ValueError: ``wanted`` does not hold two distinct phrases.
    """
    weights = phrase_weights(conn, index, wanted)
    keys = list(dict.fromkeys(key for key, _ in weights))
    if len(keys) != 2:
        raise ValueError(f"two distinct phrases wanted, got {len(keys)}")
    scores: dict[int, float] = {}
    for key in keys:
        # Both terms of a query folding to the same tokens, each with its weight.
        own = [phrase for phrase in wanted if phrase_key(phrase) == key]
        own_weights = [(each, weight) for each, weight in weights if each == key]
        scores.update(search_blocks(conn, index, own, k, None, own_weights))
    # After each phrase's own: a chunk holding both is scored with both.
    scores.update(
        conn.execute(
            f"SELECT rowid, -rank FROM {index.fts} WHERE {index.fts} MATCH ? AND rowid <= ?",
            (" AND ".join(match(phrase) for phrase in wanted), index.sealed),
        )
    )
    found = [*scores.items(), *(rank_tail() if rank_tail is not None else ())]
    return heapq.nlargest(k, found, key=lambda entry: (entry[1], -entry[0]))
