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
import heapq
import itertools
import math
import sqlite3
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from ._blockmax import (
    _SLACK,
    block_bound,
    cjk_surface,
    fast_tokens,
    non_ascii_tokens,
    score_block,
    seal,
    skippable_tokens,
    surface_counts,
    term_score,
    top_k,
)
from ._index_cache import StoreIndex, unsealed
from ._postings import Phrase, idf, phrase_frequency, token_positions

__all__ = [
    "PAIRWISE_BLOCKS",
    "READ_AHEAD",
    "PhraseCounter",
    "bm25",
    "match",
    "phrase_frequencies",
    "phrase_key",
    "phrase_weights",
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
            (store_rid, lo, "", block.packed_chunks()),
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


def phrase_key(phrase: Phrase) -> str:
    """A phrase's tokens, space-joined (tokens hold no space): two terms of a query
    folding to the same tokens share one key."""
    return " ".join(phrase.tokens)


def phrase_weights(
    conn: sqlite3.Connection, index: StoreIndex, wanted: Sequence[Phrase]
) -> list[tuple[str, float]]:
    """Per phrase of ``wanted`` (no prefix), in query order, its key and FTS5's idf for
    it over the whole store (``index``), the unsealed tail included."""
    frequency = phrase_frequencies(conn, index, wanted)
    return [(key, idf(index.rows, frequency[key])) for key in map(phrase_key, wanted)]


def phrase_frequencies(
    conn: sqlite3.Connection, index: StoreIndex, wanted: Sequence[Phrase]
) -> dict[str, int]:
    """Per distinct phrase of ``wanted`` (no prefix), by key, how many chunks of the
    whole store (``index``) hold it, the unsealed tail included."""
    frequency: dict[str, int] = {}
    for phrase in wanted:
        key = phrase_key(phrase)
        if key in frequency:
            continue
        if len(phrase.tokens) == 1:
            # Postings in the blocks plus the tail's rows.
            frequency[key] = sum(df for _, _, df in index.bounds([key])[key]) + (
                index.tail_frequency(key) if index.unsealed else 0
            )
        else:
            # Adjacency is in no block's postings: FTS5 counts the chunks, all of them.
            frequency[key] = conn.execute(
                f"SELECT count(*) FROM {index.fts} WHERE {index.fts} MATCH ?", (match(phrase),)
            ).fetchone()[0]
    return frequency


def search_blocks(
    conn: sqlite3.Connection,
    index: StoreIndex,
    wanted: Sequence[Phrase],
    k: int,
    rank_tail: Callable[[], list[tuple[int, float]]] | None,
    weights: Sequence[tuple[str, float]] | None = None,
    floor: float = -math.inf,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(chunk id, BM25)`` pairs for a query of phrases without a
    prefix: `top_k` over the store's blocks (``index``), scored from their postings,
    and the chunks after the last ranked by ``rank_tail`` (FTS5), if any wait.
    ``weights``: each phrase's key and idf, in query order (`phrase_weights`, the
    default), given when ``wanted`` is part of a larger query; ``floor``: a score the
    caller's k-th is known to reach, so no chunk scoring less is wanted (a block whose
    bound is below is not read).

    A phrase of several tokens (a CJK word, as bigrams) is bounded in a block by the
    least bound of its tokens (it occurs in a chunk at most as often as each of them);
    its chunks are those holding all its tokens, and a chunk that can still make the
    cut is counted exactly from its text (`_PhraseScorer`)."""
    phrase_of = {phrase_key(phrase): phrase for phrase in wanted}
    keys = list(phrase_of)
    distinct = sorted({token for phrase in wanted for token in phrase.tokens})
    bounds = index.bounds(distinct)
    if weights is None:
        weights = phrase_weights(conn, index, wanted)
    # A phrase written twice in the query (as two terms) counts twice, as in FTS5.
    key_weight = dict.fromkeys(keys, 0.0)
    for key, weight in weights:
        key_weight[key] += weight
    factors = index.factors
    contributions: dict[int, dict[str, float]] = {}
    for key, phrase in phrase_of.items():
        weight = key_weight[key]
        if len(phrase.tokens) == 1:
            for lo, bound, _ in bounds[key]:
                if bound > 0:
                    contributions.setdefault(lo, {})[key] = weight * bound * factors[lo]
            continue
        first, *rest = ({lo: bound for lo, bound, _ in bounds[token]} for token in phrase.tokens)
        for lo, bound in first.items():
            least = min([bound, *(other.get(lo, 0.0) for other in rest)])
            if least > 0:
                contributions.setdefault(lo, {})[key] = weight * least * factors[lo]
    together = _together(conn, index, list(phrase_of.values()))
    ranges: list[tuple[float, int]] = [(math.inf, _TAIL)] if rank_tail is not None else []
    for lo, block in contributions.items():
        found = None if together is None else together.get(lo, ())
        ranges.append((block_bound(block, found), lo))
    # top_k reads the blocks in this order (its sort is stable): their postings are
    # fetched in it, a few blocks per statement.
    ranges = [entry for entry in ranges if entry[0] * (1 + _SLACK) >= floor]
    ranges.sort(key=lambda entry: -entry[0])
    postings = _Postings(conn, index.rid, distinct, [lo for _, lo in ranges if lo != _TAIL])
    scorer = _PhraseScorer(conn, phrase_of, k)
    tokens_only = all(len(phrase.tokens) == 1 for phrase in wanted)

    def read(lo: int, threshold: float) -> list[tuple[int, float]]:
        threshold = max(threshold, floor)
        if rank_tail is not None and lo == _TAIL:
            return rank_tail()
        packed = postings.block(lo)
        ids, lengths = index.chunks(lo)
        skippable = skippable_tokens(contributions[lo], threshold)
        if tokens_only:  # every frequency is in the postings
            terms = [(key, weight, packed[key]) for key, weight in weights if key in packed]
            return score_block(ids, lengths, terms, index.average, skippable, threshold)
        return scorer.score(ids, lengths, packed, weights, index.average, skippable, threshold)

    return top_k(ranges, k, read)


class _Postings:
    """The query tokens' postings in the blocks a search reads, fetched in the order
    they will be read, many blocks per statement: a statement costs about 10 us, a
    block fetched in vain about 1 us per token. The first fetches `READ_AHEAD`
    blocks, each later one twice as many as were fetched before it (16, 32, 96...): a
    store of up to 16 blocks is read in one statement, a search of 40 blocks in two,
    and one stopping early has fetched at most `READ_AHEAD` blocks, or twice as many
    as it read, in vain."""

    def __init__(
        self, conn: sqlite3.Connection, rid: int, tokens: Sequence[str], order: Sequence[int]
    ) -> None:
        self._conn = conn
        self._rid = rid
        self._tokens = tokens
        self._order = order
        self._position = {lo: number for number, lo in enumerate(order)}
        self._fetched: dict[int, dict[str, bytes]] = {}

    def block(self, lo: int) -> dict[str, bytes]:
        """Per token, block ``lo``'s postings (a token it lacks is absent)."""
        found = self._fetched.pop(lo, None)
        if found is not None:
            return found
        start = self._position[lo]
        batch = self._order[start : start + max(2 * start, READ_AHEAD)]
        for each in batch:
            self._fetched[each] = {}
        for each, token, packed in self._conn.execute(
            "SELECT lo, token, postings FROM block_postings WHERE store_rid = ?"
            f" AND lo IN ({','.join('?' * len(batch))})"
            f" AND token IN ({','.join('?' * len(self._tokens))})",
            (self._rid, *batch, *self._tokens),
        ):
            self._fetched[each][token] = packed
        return self._fetched.pop(lo)


class _PhraseScorer:
    """Scores a block for a query holding phrases of several tokens.

    Such a phrase's frequency in a chunk is at most the least of its tokens': every
    chunk is first scored with that, and only one that can still enter the top ``k``
    (above the search's ``threshold`` and the block's own k-th exact score) is
    counted exactly from its text, tokenized as the index was."""

    def __init__(self, conn: sqlite3.Connection, phrases: Mapping[str, Phrase], k: int) -> None:
        self._conn = conn
        self._phrases = phrases
        self._counter = PhraseCounter(phrases)
        self._k = k

    def score(
        self,
        ids: array[int],
        lengths: array[int],
        packed: Mapping[str, bytes],
        weights: Sequence[tuple[str, float]],
        average: float,
        skippable: Collection[str],
        threshold: float,
    ) -> list[tuple[int, float]]:
        """``(chunk id, BM25)`` of the block's chunks that can make the top ``k``."""
        frequencies: dict[str, dict[int, int]] = {}
        for key, phrase in self._phrases.items():
            per_token = [_decode(packed[token]) for token in phrase.tokens if token in packed]
            if len(per_token) < len(phrase.tokens):
                continue  # a token is missing: the phrase is not in this block
            found = per_token[0]
            for other in per_token[1:]:
                found = {i: min(tf, other[i]) for i, tf in found.items() if i in other}
            if found:
                frequencies[key] = found
        candidates: set[int] = set()
        for key, found in frequencies.items():
            if key not in skippable:
                candidates.update(found)
        several = [key for key in frequencies if len(self._phrases[key].tokens) > 1]
        exact: list[tuple[int, float]] = []
        pending: list[tuple[float, int]] = []
        for chunk in candidates:
            upper = bm25(chunk, frequencies, weights, lengths[chunk], average)
            if any(chunk in frequencies[key] for key in several):
                pending.append((upper, chunk))
            else:
                exact.append((ids[chunk], upper))
        # The block's own k best exact scores (a min-heap) bound what else can enter.
        best = heapq.nlargest(self._k, (score for _, score in exact))
        heapq.heapify(best)
        pending.sort(reverse=True)
        for upper, chunk in pending:
            cut = max(threshold, best[0] if len(best) >= self._k else -math.inf)
            if upper * (1 + _SLACK) < cut:
                break
            (body,) = self._conn.execute(
                "SELECT body FROM chunks WHERE id = ?", (ids[chunk],)
            ).fetchone()
            counted = self._counter.count(body, several)
            for key in several:
                if chunk in frequencies[key]:
                    frequencies[key][chunk] = counted[key]
            score = bm25(chunk, frequencies, weights, lengths[chunk], average)
            if score > 0:
                exact.append((ids[chunk], score))
                if len(best) < self._k:
                    heapq.heappush(best, score)
                else:
                    heapq.heappushpop(best, score)
        return exact


class PhraseCounter:
    """Counts a query's phrases in a chunk's text, tokenized as the index was."""

    def __init__(self, phrases: Mapping[str, Phrase]) -> None:
        self._phrases = phrases
        self._surfaces = {key: cjk_surface(phrase.tokens) for key, phrase in phrases.items()}

    def count(self, body: str, keys: Sequence[str]) -> dict[str, int]:
        """How often each phrase of ``keys`` occurs in ``body``: CJK words and bigrams
        found in it as text (`surface_counts`), any other phrase among its tokens."""
        found = [(key, surface) for key in keys if (surface := self._surfaces[key]) is not None]
        counts = dict(
            zip(
                [key for key, _ in found],
                surface_counts(body, [surface for _, surface in found]),
                strict=True,
            )
        )
        rest = [key for key in keys if key not in counts]
        if rest:
            ascii_free = all(
                not token.isascii() for key in rest for token in self._phrases[key].tokens
            )
            positions = token_positions(non_ascii_tokens(body) if ascii_free else fast_tokens(body))
            counts.update((key, phrase_frequency(self._phrases[key], positions)) for key in rest)
        return counts


def _decode(packed: bytes) -> dict[int, int]:
    """A block's postings of one token: chunk index to term frequency."""
    pairs = array("i")
    pairs.frombytes(packed)
    return dict(zip(pairs[0::2], pairs[1::2], strict=True))


def bm25(
    chunk: int,
    frequencies: Mapping[str, Mapping[int, int]],
    weights: Sequence[tuple[str, float]],
    length: int,
    average: float,
) -> float:
    """A chunk's BM25 from its phrases' frequencies (per phrase key, chunk to frequency),
    its length and the store's average, in query order as FTS5 adds them: the very
    float its ``rank`` gives."""
    score = 0.0
    for key, weight in weights:
        tf = frequencies.get(key, {}).get(chunk, 0)
        if tf:
            score += weight * term_score(tf, length, average)
    return score


def _together(
    conn: sqlite3.Connection, index: StoreIndex, wanted: Sequence[Phrase]
) -> dict[int, set[frozenset[str]]] | None:
    """Per block, sets of query phrases (keyed by their tokens, space-joined) holding
    every set that one of its chunks holding two or more of them holds (FTS5
    intersects the doclists); None for a query of too many terms, or a store of too
    few blocks.

    A block's bound is the most any of its sets adds up to, so it needs each set once,
    and a pair found in a chunk that holds more may stand beside that chunk's whole
    set (its sum is no larger): each pair is placed in the blocks its chunks fall in,
    a few bisections per block, and only a chunk found by several pairs is looked at
    alone (thousands of chunks hold two common words, few hold three)."""
    if len(wanted) > _PAIRWISE_TERMS or len(index.blocks) < PAIRWISE_BLOCKS:
        return None
    pairs: list[tuple[frozenset[str], list[int]]] = []
    for first, second in itertools.combinations(wanted, 2):
        rows = [
            rowid
            for (rowid,) in conn.execute(
                f"SELECT rowid FROM {index.fts} WHERE {index.fts} MATCH ? AND rowid <= ?",
                (f"{match(first)} AND {match(second)}", index.sealed),
            )
        ]
        rows.sort()  # FTS5's order already: sorting sorted rows is one pass
        pairs.append((frozenset((phrase_key(first), phrase_key(second))), rows))
    starts = index.starts
    together: dict[int, set[frozenset[str]]] = {}
    for found, rows in pairs:
        at = 0
        while at < len(rows):
            block = bisect.bisect_right(starts, rows[at]) - 1
            together.setdefault(starts[block], set()).add(found)
            # On to the first of the pair's chunks in a later block.
            if block + 1 == len(starts):
                break
            at = bisect.bisect_left(rows, starts[block + 1], at)
    if len(pairs) > 1:
        counts = Counter(itertools.chain.from_iterable(rows for _, rows in pairs))
        several = {rowid for rowid, count in counts.items() if count > 1}
        present: dict[int, set[str]] = {}
        for found, rows in pairs:
            for rowid in several.intersection(rows):
                present.setdefault(rowid, set()).update(found)
        for rowid, held in present.items():
            together[starts[bisect.bisect_right(starts, rowid) - 1]].add(frozenset(held))
    return together


_TAIL: Final = -1
"""The key of the unsealed tail among the ranges `top_k` reads."""
_PAIRWISE_TERMS: Final = 8
"""Up to this many distinct terms, a search finds the chunks holding two or more of
them (a query per pair) to bound each block tightly; above, bounds add every term."""
PAIRWISE_BLOCKS: Final = 16
"""From this many sealed blocks on, a search finds those chunks; below, bounds add
every term. The pair queries cost about as much as the blocks they spare at 11
blocks (10,413 chunks of `bench.search`, its 50 Latin queries: ranking p50 213-275 us
with them, 201-243 without); at 20 they save (396 against 460 us), at 31 more (296-317
against 458-470) and at 102 most of the time (555-605 against 1,909-2,772 us; 4
rounds in process each, a shared 2-core machine; `_together` as it is now)."""
READ_AHEAD: Final = 16
"""Blocks whose postings the first statement of a search fetches (see `_Postings`).
At the 11 blocks of `bench.search`'s default store, ranking its 50 Latin queries took
196-210 us a query with 16 (one statement) against 208-222 us with 4 (4 blocks, then
8: two), min of 7 runs in process."""
_PAIR_BYTES: Final = 8
"""Bytes per posting in a block: an index and a frequency, 4 bytes each."""


def match(phrase: Phrase) -> str:
    """One phrase as FTS5 syntax: its tokens are letters and digits only, so nothing
    inside the quotes is syntax."""
    return '"' + " ".join(phrase.tokens) + '"' + (" *" if phrase.prefix else "")
