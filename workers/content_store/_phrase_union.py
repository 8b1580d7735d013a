"""Exact top k for a query of two to eight phrases, one of several tokens (a CJK word
beside other terms), from the chunks holding several phrases and each phrase's own top
k in the sealed blocks.

Bounded together in the blocks, such a query skips few of them: a phrase of several
tokens is bounded by the least of its tokens' bounds, loose for common bigrams. And
FTS5 over the whole store scores every row holding any phrase (about 1 µs a row).
But the top k of ``P1 OR P2 OR P3`` lies among:

- the chunks holding two phrases or more. For two, FTS5 finds them (``P1 AND P2``, its
  doclists intersected) and scores them with its own ``rank``, the very float the OR
  query gives (it sums the same parts in the same order). For more, FTS5 finds them
  pair by pair, rowids only, and they are scored here from their blocks and texts
  (`_several`), with FTS5's formula in its order: the same float;
- each phrase's own top k, scored as in the query (`search_blocks` with the query's
  weights): a chunk holding only ``P1`` scores exactly its ``P1`` part, and if k chunks
  beat that (a lower rowid first among ties, as everywhere), they beat it in the whole
  query too, where a chunk's score only grows with the phrases it holds. Each is
  searched only above the k-th score in hand (``floor``): the chunks holding several
  phrases are scored first, and they score highest.

The unsealed tail is ranked by FTS5 (``rank_tail``), as in `search_blocks`.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import sqlite3
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from ._blockmax import _SLACK
from ._blocks import PhraseCounter, bm25, match, phrase_frequencies, phrase_key, search_blocks
from ._index_cache import StoreIndex
from ._postings import Phrase, idf

__all__ = ["SEVERAL_ROW_COST", "UNION_BLOCKS", "UNION_PHRASES", "search_phrase_union"]

UNION_BLOCKS: Final = 64
"""From this many sealed blocks on, a query of two to eight phrases is ranked this way;
below, FTS5 ranks the whole store. `bench.search`'s CJK queries of two words, in
process (median of 3 or 7 runs, a shared 2-core machine), before each phrase's own top
k was searched above a floor: at 31 blocks slower (2.9-3.7 ms against FTS5's 2.2-2.4),
at 61 even (3.2-3.3 against 3.4-3.5), at 102 faster (2.5-3.2 against 5.7-7.2; with the
floor 0.8-2.4 against main's 2.1-14.2, three phrases 4.1-8.7 against FTS5's 7.8-14.8)."""
UNION_PHRASES: Final = 8
"""Up to this many distinct phrases a query is ranked this way (a statement per pair
for the chunks holding two: 28 for 8); above, by FTS5 over the whole store. At 102
blocks, `bench.search`'s CJK queries of two and three words joined into four and five
phrases (median of 5, in process): 6.2-10.5 ms against FTS5's 11.8-15.6 (four),
9.2-11.7 against 14.6-17.9 (five)."""
SEVERAL_ROW_COST: Final = 5
"""A query of three phrases or more is ranked this way only while the chunks expected
to hold two of them (``df_i * df_j / N`` per pair, as if independent) number less than
the rows FTS5 scores (``sum df``) over this: each costs about 5 µs here (bounded from
its block's postings, sorted), where FTS5 scores a row in about 1. At 104,030 chunks,
a CJK word beside two words held by 61,000-104,000 chunks each: 201-366 ms this way
against FTS5's 93-139 (60,000-104,000 chunks hold two); beside two rarer words
(1,500-13,000 chunks: about 600 hold two), 1.6-4.9 ms against 4.6-13.7."""


def search_phrase_union(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    k: int,
    rank_tail: Callable[[], list[tuple[int, float]]] | None,
    several_row_cost: float = SEVERAL_ROW_COST,
) -> list[tuple[int, float]] | None:
    """The ``k`` best ``(chunk id, BM25)`` pairs for a query of phrases without a prefix,
    of two to `UNION_PHRASES` distinct phrases (see the module docstring), best first,
    a lower rowid first among ties: FTS5's ranking, exactly. None for a query of three
    phrases or more that FTS5 ranks faster: the chunks expected to hold two phrases,
    at ``several_row_cost`` each (`SEVERAL_ROW_COST`), cost more than FTS5's rows.

    Raises:
        ValueError: ``wanted`` does not hold two to `UNION_PHRASES` distinct phrases.
    """
    frequency = phrase_frequencies(conn, index, wanted)
    keys = list(frequency)
    if not 2 <= len(keys) <= UNION_PHRASES:
        raise ValueError(f"two to {UNION_PHRASES} distinct phrases wanted, got {len(keys)}")
    # Chunks expected to hold two phrases, as if they were independent (times the
    # store's rows), against the rows FTS5 scores.
    expected = sum(a * b for a, b in itertools.combinations(frequency.values(), 2))
    if len(keys) > 2 and expected * several_row_cost > sum(frequency.values()) * index.rows:
        return None
    weights = [(key, idf(index.rows, frequency[key])) for key in map(phrase_key, wanted)]
    if len(keys) == 2:
        # A chunk holding both, scored by FTS5 with both: its rank is the OR query's.
        scores = dict(
            conn.execute(
                f"SELECT rowid, -rank FROM {index.fts} WHERE {index.fts} MATCH ? AND rowid <= ?",
                (" AND ".join(match(phrase) for phrase in wanted), index.sealed),
            )
        )
        held: Collection[int] = set(scores)
    else:
        held, scores = _several(conn, index, wanted, weights, k)
    # Then each phrase's own top k, above the k-th score in hand (the floor only grows).
    best = heapq.nlargest(k, scores.values())
    heapq.heapify(best)
    for key in keys:
        floor = best[0] if len(best) >= k else -math.inf
        for rowid, score in _own(conn, index, wanted, weights, key, k, floor):
            # A chunk holding several phrases is scored above (or cannot enter).
            if rowid not in held:
                scores[rowid] = score
                _keep(best, k, score)
    found = [*scores.items(), *(rank_tail() if rank_tail is not None else ())]
    return heapq.nlargest(k, found, key=lambda entry: (entry[1], -entry[0]))


def _own(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    weights: Sequence[tuple[str, float]],
    key: str,
    k: int,
    floor: float,
) -> list[tuple[int, float]]:
    """The phrase ``key``'s own top ``k`` in the blocks, each chunk scored with its part
    of the query alone (terms folding to the same tokens: each with its weight), and
    none below ``floor``."""
    own = [phrase for phrase in wanted if phrase_key(phrase) == key]
    own_weights = [(each, weight) for each, weight in weights if each == key]
    return search_blocks(conn, index, own, k, None, own_weights, floor)


def _several(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    weights: Sequence[tuple[str, float]],
    k: int,
) -> tuple[Collection[int], dict[int, float]]:
    """For a query of three phrases or more: the sealed chunks holding two or more, and
    the BM25 of those among them that can enter the top ``k``.

    FTS5 finds them pair by pair (rowids only: its ``rank`` would work out every idf
    again per statement). Each is bounded from its block's postings (a single token's
    frequency is there; a phrase of several occurs at most as often as each of its
    tokens) and, best bound first, scored until the next bound is below the k-th
    score: a phrase of several tokens is counted in the chunk's text. Each phrase's
    part is added in query order, as FTS5 adds them: the very float its ``rank``
    gives."""
    phrase_of = {phrase_key(phrase): phrase for phrase in wanted}
    held: dict[int, set[str]] = {}
    for first, second in itertools.combinations(phrase_of.values(), 2):
        pair = (phrase_key(first), phrase_key(second))
        for (rowid,) in conn.execute(
            f"SELECT rowid FROM {index.fts} WHERE {index.fts} MATCH ? AND rowid <= ?",
            (f"{match(first)} AND {match(second)}", index.sealed),
        ):
            held.setdefault(rowid, set()).update(pair)
    best: list[float] = []  # the k best scores in hand, a min-heap
    scores: dict[int, float] = {}
    counter = PhraseCounter(phrase_of)
    frequencies, pending = _bounded(conn, index, phrase_of, weights, held)
    for upper, rowid, length in pending:
        if len(best) >= k and upper * (1 + _SLACK) < best[0]:
            # Bounds come in descending order and the k-th score only grows: none of
            # the rest can enter the top k.
            break
        several = [key for key in held[rowid] if len(phrase_of[key].tokens) > 1]
        score = upper  # exact where every phrase it holds is one token
        if several:
            (body,) = conn.execute("SELECT body FROM chunks WHERE id = ?", (rowid,)).fetchone()
            for key, tf in counter.count(body, several).items():
                frequencies[key][rowid] = tf
            score = bm25(rowid, frequencies, weights, length, index.average)
        scores[rowid] = score
        _keep(best, k, score)
    return held.keys(), scores


def _keep(best: list[float], k: int, score: float) -> None:
    """Put ``score`` among the ``k`` best of the min-heap ``best``."""
    if len(best) < k:
        heapq.heappush(best, score)
    elif score > best[0]:
        heapq.heapreplace(best, score)


def _bounded(
    conn: sqlite3.Connection,
    index: StoreIndex,
    phrase_of: Mapping[str, Phrase],
    weights: Sequence[tuple[str, float]],
    held: Mapping[int, Collection[str]],
) -> tuple[dict[str, dict[int, int]], list[tuple[float, int, int]]]:
    """Per phrase, chunk id to a bound on its frequency (exact for a token) for each
    chunk of ``held`` (chunk id to the phrases it holds); and per chunk, highest first,
    the bound on its score, its id and its length."""
    frequencies: dict[str, dict[int, int]] = {key: {} for key in phrase_of}
    if not held:
        return frequencies, []
    starts = index.starts
    by_block: dict[int, list[int]] = {}
    for rowid in held:
        by_block.setdefault(starts[bisect.bisect_right(starts, rowid) - 1], []).append(rowid)
    # A phrase occurs in a chunk at most as often as any of its tokens: its rarest
    # token's postings (the fewest bytes to read) bound it; a token's are exact.
    bounds = index.bounds(sorted({t for phrase in phrase_of.values() for t in phrase.tokens}))
    rarest = {
        key: min(phrase.tokens, key=lambda token: sum(df for _, _, df in bounds[token]))
        for key, phrase in phrase_of.items()
    }
    columns = _columns(conn, index.rid, sorted(set(rarest.values())), by_block)
    bounded: list[tuple[float, int, int]] = []
    for lo, rowids in by_block.items():
        ids, lengths = index.chunks(lo)
        block = columns[lo]
        for rowid in rowids:
            at = bisect.bisect_left(ids, rowid)
            for key in held[rowid]:
                frequencies[key][rowid] = _frequency(block[rarest[key]], at)
            upper = bm25(rowid, frequencies, weights, lengths[at], index.average)
            bounded.append((upper, rowid, lengths[at]))
    bounded.sort(reverse=True)
    return frequencies, bounded


def _columns(
    conn: sqlite3.Connection, rid: int, tokens: Sequence[str], blocks: Collection[int]
) -> dict[int, dict[str, tuple[array[int], array[int]]]]:
    """Per block of ``blocks`` and token, its postings as two columns: the chunk
    indexes (ascending) and their frequencies."""
    found: dict[int, dict[str, tuple[array[int], array[int]]]] = {lo: {} for lo in blocks}
    for lo, token, packed in conn.execute(
        "SELECT lo, token, postings FROM block_postings WHERE store_rid = ?"
        f" AND lo IN ({','.join('?' * len(blocks))})"
        f" AND token IN ({','.join('?' * len(tokens))})",
        (rid, *blocks, *tokens),
    ):
        pairs = array("i")
        pairs.frombytes(packed)
        found[lo][token] = (pairs[0::2], pairs[1::2])
    return found


def _frequency(column: tuple[array[int], array[int]], at: int) -> int:
    """The frequency of chunk ``at`` (an index in its block) in a token's postings."""
    indexes, frequencies = column
    where = bisect.bisect_left(indexes, at)
    return frequencies[where] if where < len(indexes) and indexes[where] == at else 0
