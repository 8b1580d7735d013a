"""The search index of a PostgreSQL store: sealed blocks, merged off the write path.

An item's chunks are written with their tokens (one text each) and nothing per token
(one ``COPY``); the chunks past the store's merged watermark (``cs_stores.merged``)
are its pending tail. A merge (`merge_step`: once writes stop, as SQLite seals its
blocks, or a full block at a time while a long tail waits) folds the tail into sealed
blocks of `BLOCK_CHUNKS` chunks, `_blockmax`'s: one ``cs_blocks`` row per block (with
a version, new at every sealing) and, per (token, block), one ``cs_block_postings``
row with the packed postings, their positions, the token's best term score in the
block (its bound), its chunk count there, and the block's version and average chunk
length (read with the bounds, without a join). The empty token's row holds the
block's chunk ids and lengths, which a process keeps for its next searches
(`BlockCache`).

A search (`ranked`) reads the store and, per query token, its bound and count in every
block (and for a store of few blocks the postings too) in one statement: a token's
document frequency is the sum of its counts plus the tail's, so no count is kept per
token outside the blocks. A query of plain terms is then ranked by block-max
(`top_k`): the tail first, scored exactly from its postings (which each process keeps
in memory, `_pg_tail`), then the blocks highest bound first until no block left can
reach the top k. A phrase or a CJK prefix
is matched on every block and the tail, on its tokens' positions. Either way the
scores are FTS5's BM25, exactly.

A deleted chunk's blocks are sealed again from the chunks left in their ranges
(`reseal`), so postings and counts are always the stored chunks' own. Everything here
runs in the caller's transaction or on its connection; what seals blocks holds the
store's merge lock.
"""

from __future__ import annotations

import bisect
import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from ._blockmax import (
    BLOCK_CHUNKS,
    block_bound,
    scale_bound,
    score_block,
    seal,
    skippable_tokens,
    top_k,
    unpack_chunks,
)
from ._pg_arrays import int8_array, text_array
from ._pg_tail import TailCache, TailView
from ._postings import Phrase, bm25, idf, phrase_frequency, token_positions

__all__ = [
    "BLOCK_CHUNKS",
    "BlockCache",
    "Kept",
    "StoreIndex",
    "merge_step",
    "ranked",
    "reseal",
]

_PAIR_BYTES: Final = 8
"""Bytes per posting in a block: an index and a frequency, 4 bytes each."""
_CHUNKS_TOKEN: Final = ""
"""The token (never a real one) whose row holds a block's chunk ids and lengths."""
_PREFETCH: Final = 16
"""Blocks whose postings one statement reads, next in bound order; a store of this
many blocks or fewer is read whole in the statement that reads the bounds."""
_TOP: Final = "\U0010ffff"
"""The highest character: no token holds it (letters and digits only)."""
_CACHED_BLOCKS: Final = 1024
"""Blocks whose chunk ids and lengths a process keeps (12 KiB each when full)."""
_TAIL: Final = -1
"""The key of the pending tail among the ranges `top_k` reads."""


# -- merging ---------------------------------------------------------------------------


def merge_step(
    conn: Any, store_rid: int, merged: int, block_chunks: int = BLOCK_CHUNKS, *, full: bool = False
) -> bool:
    """Seal the store's oldest pending chunks (ids above ``merged``) into one block, in
    the caller's transaction, which holds the store's merge lock; False when none waits
    (with ``full``, while writes go on: when not enough wait to fill a block).

    The newest block, when not full, is sealed again with the chunks after it, so a
    trickle of writes leaves one growing block rather than many small ones.
    """
    pending = conn.execute(
        "SELECT 1 FROM cs_chunks WHERE store_rid = %s AND id > %s LIMIT 1", (store_rid, merged)
    ).fetchone()
    if pending is None:
        return False
    last = conn.execute(
        "SELECT lo, size FROM cs_blocks WHERE store_rid = %s ORDER BY lo DESC LIMIT 1",
        (store_rid,),
    ).fetchone()
    growing = last is not None and last[1] < block_chunks
    lo = last[0] if growing else merged + 1
    rows = conn.execute(
        "SELECT id, body, tokens FROM cs_chunks WHERE store_rid = %s AND id >= %s"
        " ORDER BY id LIMIT %s",
        (store_rid, lo, block_chunks),
    ).fetchall()
    if full and len(rows) < block_chunks:
        return False
    if growing:
        _drop_block(conn, store_rid, lo)
    hi = rows[-1][0]
    _write_block(conn, store_rid, lo, hi, rows)
    conn.execute(
        "UPDATE cs_stores SET merged = greatest(merged, %s), blocks = blocks + %s WHERE rid = %s",
        (hi, 0 if growing else 1, store_rid),
    )
    return True


def reseal(conn: Any, store_rid: int, chunk_ids: Sequence[int]) -> None:
    """Seal again, from the chunks left in their ranges, the blocks that held
    ``chunk_ids`` (just deleted), so a block's postings and counts are its chunks' own."""
    if not chunk_ids:
        return
    blocks = conn.execute(
        "SELECT lo, hi FROM cs_blocks WHERE store_rid = %s AND hi >= %s AND lo <= %s",
        (store_rid, min(chunk_ids), max(chunk_ids)),
    ).fetchall()
    wanted = sorted(chunk_ids)
    for lo, hi in blocks:
        # A block in the ids' span that holds none of them (another item's chunks,
        # written in between) is left as it is.
        first = bisect.bisect_left(wanted, lo)
        if first == len(wanted) or wanted[first] > hi:
            continue
        _drop_block(conn, store_rid, lo)
        rows = conn.execute(
            "SELECT id, body, tokens FROM cs_chunks WHERE store_rid = %s"
            " AND id BETWEEN %s AND %s"
            " ORDER BY id",
            (store_rid, lo, hi),
        ).fetchall()
        # An emptied block stays, as a range with no postings: its ids are never
        # handed out again, and the watermark stays where it is.
        _write_block(conn, store_rid, lo, hi, rows)


def _drop_block(conn: Any, store_rid: int, lo: int) -> None:
    conn.execute("DELETE FROM cs_blocks WHERE store_rid = %s AND lo = %s", (store_rid, lo))
    conn.execute("DELETE FROM cs_block_postings WHERE store_rid = %s AND lo = %s", (store_rid, lo))


def _write_block(
    conn: Any, store_rid: int, lo: int, hi: int, rows: Sequence[tuple[int, str, str]]
) -> None:
    """Seal ``(id, text, token text)`` chunks into the block ``lo``..``hi``."""
    block = seal([(chunk_id, text) for chunk_id, text, _ in rows])
    # Each token's positions in its chunks, in the order of its postings (a phrase is
    # matched on them, as FTS5 does on its position lists), from the tokens written
    # with the chunk rather than its text tokenized once more.
    positions: dict[str, array[int]] = {}
    for _, _, tokens in rows:
        for token, where in token_positions(tokens.split()).items():
            positions.setdefault(token, array("i")).extend(where)
    (version,) = conn.execute(
        "INSERT INTO cs_blocks (store_rid, lo, hi, average, size) VALUES (%s, %s, %s, %s, %s)"
        " RETURNING version",
        (store_rid, lo, hi, block.average, len(rows)),
    ).fetchone()
    # COPY text written directly: tokens are letters and digits only (nothing to
    # escape), a float's repr reads back as the same float8, and bytea goes as hex
    # (its backslash doubled for COPY).
    head = f"{store_rid}\t"
    tail = f"\t{block.average!r}\t{version}\n"
    lines = [
        f"{head}{_CHUNKS_TOKEN}\t{lo}\t0\t{len(rows)}\t\\\\x{block.packed_chunks().hex()}\t\\\\x"
        f"{tail}"
    ]
    lines += [
        f"{head}{token}\t{lo}\t{bound!r}\t{len(packed) // _PAIR_BYTES}\t\\\\x{packed.hex()}"
        f"\t\\\\x{positions[token].tobytes().hex()}{tail}"
        for token, (bound, packed) in block.postings.items()
    ]
    with conn.cursor().copy(
        "COPY cs_block_postings (store_rid, token, lo, bound, df, postings, positions, average,"
        " version) FROM STDIN"
    ) as copy:
        copy.write("".join(lines).encode("utf-8"))


# -- search ----------------------------------------------------------------------------


class StoreIndex(NamedTuple):
    """What a search reads of a store first: its row id, BM25's N and average length,
    its merged watermark, its newest chunk id and its block count."""

    rid: int
    rows: int
    average: float
    merged: int
    newest: int
    blocks: int


class BlockCache:
    """Sealed blocks' chunk ids and lengths (12 bytes a chunk), kept by a process for
    the searches that read those blocks again: each plain search needs them for every
    block it scores, and a block changes only when it is sealed again, with a new
    version, which the search reads beside its bounds and checks here."""

    def __init__(self, size: int = _CACHED_BLOCKS) -> None:
        self._size = size
        self._blocks: OrderedDict[tuple[int, int], tuple[int, array[int], array[int]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def chunks(
        self, conn: Any, store_rid: int, versions: Mapping[int, int]
    ) -> dict[int, tuple[array[int], array[int]]]:
        """The chunk ids and lengths of each block ``lo`` of ``versions`` (lo: the
        version the caller read), read from the database when not kept.

        Raises:
            _Changed: a block was sealed again (or dropped) since its version was read.
        """
        found: dict[int, tuple[array[int], array[int]]] = {}
        with self._lock:
            for lo, version in versions.items():
                kept = self._blocks.get((store_rid, lo))
                if kept is not None and kept[0] == version:
                    self._blocks.move_to_end((store_rid, lo))
                    found[lo] = kept[1], kept[2]
        missing = [lo for lo in versions if lo not in found]
        if not missing:
            return found
        for lo, version, packed in conn.execute(
            "SELECT lo, version, postings FROM cs_block_postings WHERE store_rid = %s"
            " AND token = '' AND lo = ANY(%s::int8[])",
            (store_rid, int8_array(missing)),
            binary=True,
        ):
            if version != versions[lo]:
                raise _Changed
            found[lo] = unpack_chunks(packed)
            with self._lock:
                self._blocks[store_rid, lo] = (version, *found[lo])
                if len(self._blocks) > self._size:
                    self._blocks.popitem(last=False)
        if len(found) < len(versions):
            raise _Changed
        return found


class Kept(NamedTuple):
    """What a process keeps between searches: sealed blocks' chunk ids and lengths,
    and the pending tails' postings."""

    blocks: BlockCache
    tails: TailCache


class _Changed(Exception):
    """A block read by a search was sealed again meanwhile (by a delete or a merge)."""


def ranked(
    conn: Any, store_id: str, wanted: Sequence[Phrase], k: int, kept: Kept
) -> list[tuple[int, float]] | None:
    """The ``k`` best ``(chunk id, BM25)`` pairs of the store for the query's phrases,
    best first (ties: lower id first), over its sealed blocks and its pending tail; None
    when the store does not exist.

    A search runs without a transaction (the store and the postings it needs come in
    one statement, one snapshot), and again in one repeatable-read snapshot if a block
    it read was sealed again meanwhile.
    """
    try:
        return _ranked(conn, store_id, wanted, k, kept)
    except _Changed:
        pass
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return _ranked(conn, store_id, wanted, k, kept)


def _ranked(
    conn: Any, store_id: str, wanted: Sequence[Phrase], k: int, kept: Kept
) -> list[tuple[int, float]] | None:
    plain = not any(len(phrase.tokens) > 1 or phrase.prefix for phrase in wanted)
    exact = sorted({t for p in wanted for t in (p.tokens[:-1] if p.prefix else p.tokens)})
    prefixes = sorted({p.tokens[-1] for p in wanted if p.prefix})
    # The store and, per block holding a query token: for plain terms their bounds and
    # counts (with the postings too when the store has few blocks), for a phrase or a
    # prefix the postings and positions. One statement: one snapshot.
    if plain:
        found = conn.execute(
            _STORE_SQL,
            {"store": store_id, "tokens": text_array(exact), "whole": _PREFETCH},
            binary=True,
        ).fetchall()
    else:
        params: dict[str, Any] = {"store": store_id, "exact": text_array(exact)}
        for n, prefix in enumerate(prefixes):
            # A prefix as a range of the key (byte order: every token it starts sorts
            # from it up to it followed by the highest character), which a generic plan
            # scans too.
            params[f"from{n}"], params[f"to{n}"] = prefix, prefix + _TOP
        found = conn.execute(_phrase_sql(len(prefixes)), params, binary=True).fetchall()
    if not found:
        return None
    rid, rows, tokens_total, merged, newest, blocks = found[0][:6]
    if not wanted or rows <= 0:
        return []
    store = StoreIndex(rid, rows, max(tokens_total / rows, 1e-9), merged, newest, blocks)
    tail = _NO_TAIL
    if newest > merged:
        # Up to the newest chunk the store's totals count (newer ones are not in N).
        tail = kept.tails.view(conn, (rid, rows, merged, newest), exact, prefixes)
    entries = [row[6:] for row in found if row[6] is not None]
    if not plain:
        scores = _phrase_scores(conn, store, wanted, tail, entries, kept.blocks)
        return sorted(scores.items(), key=lambda entry: (-entry[1], entry[0]))[:k]
    return _block_max(
        conn, store, [phrase.tokens[0] for phrase in wanted], tail, entries, k, kept.blocks
    )


_STORE_COLUMNS: Final = "s.rid, s.chunk_total, s.token_total, s.merged, s.newest, s.blocks,"
# The store's row and the postings rows joined to it, nothing else: no subquery or CTE
# (its newest chunk id and block count are kept on its row), one nested loop.
_STORE_SQL: Final = f"""
SELECT {_STORE_COLUMNS}
       p.lo, p.token, p.bound, p.df, p.average, p.version,
       CASE WHEN s.blocks <= %(whole)s THEN p.postings END
FROM cs_stores s
LEFT JOIN cs_block_postings p
    ON p.store_rid = s.rid AND p.token = ANY(%(tokens)s::text[] COLLATE "C")
WHERE s.id = %(store)s
"""


def _phrase_sql(prefixes: int) -> str:
    """The store and the postings and positions of a query's exact tokens and of the
    tokens its ``prefixes`` prefixes start (``%(fromN)s``, ``%(toN)s``), per block."""
    clauses = ['p.token = ANY(%(exact)s::text[] COLLATE "C")']
    clauses += [f"(p.token >= %(from{n})s AND p.token < %(to{n})s)" for n in range(prefixes)]
    return f"""
SELECT {_STORE_COLUMNS}
       p.lo, p.token, p.postings, p.positions, p.version
FROM cs_stores s
LEFT JOIN cs_block_postings p ON p.store_rid = s.rid AND ({" OR ".join(clauses)})
WHERE s.id = %(store)s
"""


_NO_TAIL: Final = TailView(array("q"), array("i"), [], {})
"""The tail of a store whose every chunk is sealed."""


def _block_max(
    conn: Any,
    store: StoreIndex,
    tokens: Sequence[str],
    tail: TailView,
    entries: Sequence[Sequence[Any]],
    k: int,
    cache: BlockCache,
) -> list[tuple[int, float]]:
    """Plain terms: `top_k` over the tail (scored first) and the blocks by bound, from
    ``entries``: per block holding a query token, its bound, count, the block's average
    length and version, and the postings (None: not read yet)."""
    distinct = sorted(set(tokens))
    frequency = dict.fromkeys(distinct, 0)
    in_block: dict[int, list[tuple[str, float]]] = {}
    averages: dict[int, float] = {}
    versions: dict[int, int] = {}
    packed: dict[int, dict[str, bytes]] = {}
    for lo, token, bound, df, sealed_average, version, postings in entries:
        in_block.setdefault(lo, []).append((token, bound))
        averages[lo] = sealed_average
        versions[lo] = version
        frequency[token] += df
        if postings is not None:
            packed.setdefault(lo, {})[token] = postings
    tail_postings = tail.postings
    for token, pending in tail_postings.items():
        frequency[token] += len(pending) // _PAIR_BYTES
    weights = [(token, idf(store.rows, frequency[token])) for token in tokens if frequency[token]]
    if not weights:
        return []
    # A token written twice in the query (as two terms) counts twice, as in FTS5.
    token_weight = dict.fromkeys(distinct, 0.0)
    for token, weight in weights:
        token_weight[token] += weight
    ranges: list[tuple[float, int]] = [(math.inf, _TAIL)] if tail_postings else []
    bounds: dict[int, dict[str, float]] = {}
    for lo, present in in_block.items():
        factor = scale_bound(1.0, averages[lo], store.average)
        bounds[lo] = {token: token_weight[token] * bound * factor for token, bound in present}
        ranges.append((block_bound(bounds[lo], None), lo))
    order = [lo for _, lo in sorted(ranges, key=lambda entry: -entry[0]) if lo != _TAIL]
    blocks: dict[int, tuple[array[int], array[int], dict[str, bytes]]] = {}
    if packed:
        # A store of few blocks: every block's postings came with the bounds.
        chunks = cache.chunks(conn, store.rid, versions)
        blocks = {lo: (*chunks[lo], packed[lo]) for lo in versions}

    def read(lo: int, threshold: float) -> list[tuple[int, float]]:
        if lo == _TAIL:
            terms = [
                (token, weight, tail_postings[token])
                for token, weight in weights
                if token in tail_postings
            ]
            return score_block(tail.ids, tail.lengths, terms, store.average)
        if lo not in blocks:
            start = order.index(lo)
            batch = {block: versions[block] for block in order[start : start + _PREFETCH]}
            blocks.update(_read_blocks(conn, store.rid, batch, distinct, cache))
        ids, lengths, postings = blocks[lo]
        terms = [(token, weight, postings[token]) for token, weight in weights if token in postings]
        return score_block(
            ids, lengths, terms, store.average, skippable_tokens(bounds[lo], threshold)
        )

    return top_k(ranges, k, read)


def _read_blocks(
    conn: Any, store_rid: int, versions: Mapping[int, int], tokens: Sequence[str], cache: BlockCache
) -> dict[int, tuple[array[int], array[int], dict[str, bytes]]]:
    """Per block of ``versions``: its chunk ids, their lengths and the packed postings
    of ``tokens``.

    Raises:
        _Changed: a block was sealed again since its version was read.
    """
    packed: dict[int, dict[str, bytes]] = {lo: {} for lo in versions}
    for lo, version, token, postings in conn.execute(
        "SELECT lo, version, token, postings FROM cs_block_postings WHERE store_rid = %s"
        ' AND token = ANY(%s::text[] COLLATE "C") AND lo = ANY(%s::int8[])',
        (store_rid, text_array(tokens), int8_array(versions)),
        # Binary: bytea as it is, not as hex text to decode.
        binary=True,
    ):
        if version != versions[lo]:
            raise _Changed
        packed[lo][token] = postings
    chunks = cache.chunks(conn, store_rid, versions)
    return {lo: (*chunks[lo], packed[lo]) for lo in versions}


def _phrase_scores(
    conn: Any,
    store: StoreIndex,
    wanted: Sequence[Phrase],
    tail: TailView,
    entries: Sequence[Sequence[Any]],
    cache: BlockCache,
) -> dict[int, float]:
    """BM25 per chunk for a query holding a phrase or a prefix: every block and the
    tail are matched (no pruning), a phrase on its tokens' positions in the blocks;
    ``entries``: per block and token found, the token's postings and positions and the
    block's version.

    Raises:
        _Changed: a block was sealed again since its version was read.
    """
    # Per token found, over every block: chunk id -> (tf, the block's positions of
    # the token, where this chunk's start).
    postings: dict[str, dict[int, tuple[int, array[int], int]]] = {}
    sealed: dict[int, list[tuple[str, bytes, bytes]]] = {}
    versions: dict[int, int] = {}
    for lo, token, packed, located, version in entries:
        sealed.setdefault(lo, []).append((token, packed, located))
        versions[lo] = version
    lengths: dict[int, int] = {}
    for lo, (ids, chunk_lengths) in cache.chunks(conn, store.rid, versions).items():
        lengths.update(zip(ids, chunk_lengths, strict=True))
        for token, packed, located in sealed[lo]:
            pairs, where = array("i"), array("i")
            pairs.frombytes(packed)
            where.frombytes(located)
            target = postings.setdefault(token, {})
            start = 0
            for index, tf in zip(pairs[0::2], pairs[1::2], strict=True):
                target[ids[index]] = (tf, where, start)
                start += tf
    # The pending chunks' postings of the query's tokens: chunk id -> tf.
    pending: dict[str, dict[int, int]] = {}
    for token, packed in tail.postings.items():
        pairs = array("i")
        pairs.frombytes(packed)
        tfs = pending[token] = {}
        for index, tf in zip(pairs[0::2], pairs[1::2], strict=True):
            tfs[tail.ids[index]] = tf
            lengths[tail.ids[index]] = tail.lengths[index]
    # A phrase of several tokens can only be in a chunk holding each of its exact
    # tokens (and a token its prefix starts): only those chunks' positions are read
    # (a pending chunk's from its tokens, split: of the query's tokens only).
    positions: dict[int, dict[str, list[int]]] = {}
    for phrase in wanted:
        if len(phrase.tokens) > 1:
            for chunk_id in _holding(phrase, postings):
                positions[chunk_id] = _chunk_positions(chunk_id, postings)
            for chunk_id in _holding(phrase, pending):
                positions[chunk_id] = tail.positions(chunk_id, pending)
    weighted: list[tuple[float, dict[int, int]]] = []
    for phrase in wanted:
        frequencies: dict[int, int] = {}
        if len(phrase.tokens) == 1:
            # A lone token's frequency is its tf; a prefix's, the sum over the tokens
            # it starts. No positions needed.
            for token, per_chunk in postings.items():
                if _counts(phrase, token):
                    for chunk_id, (tf, _, _) in per_chunk.items():
                        frequencies[chunk_id] = frequencies.get(chunk_id, 0) + tf
            for token, tfs in pending.items():
                if _counts(phrase, token):
                    for chunk_id, tf in tfs.items():
                        frequencies[chunk_id] = frequencies.get(chunk_id, 0) + tf
        else:
            for chunk_id in sorted(_holding(phrase, postings) | _holding(phrase, pending)):
                if (freq := phrase_frequency(phrase, positions[chunk_id])) > 0:
                    frequencies[chunk_id] = freq
        if frequencies:
            weighted.append((idf(store.rows, len(frequencies)), frequencies))
    return bm25(weighted, lengths, store.average)


def _counts(phrase: Phrase, token: str) -> bool:
    """Whether ``token`` counts for a one-token ``phrase``: it is the token, or one
    its prefix starts."""
    return token == phrase.tokens[0] or (phrase.prefix and token.startswith(phrase.tokens[0]))


def _chunk_positions(
    chunk_id: int, postings: Mapping[str, Mapping[int, tuple[int, array[int], int]]]
) -> dict[str, list[int]]:
    """A sealed chunk's positions of each token read that it holds."""
    found = {}
    for token, per_chunk in postings.items():
        entry = per_chunk.get(chunk_id)
        if entry is not None:
            tf, where, start = entry
            found[token] = where[start : start + tf].tolist()
    return found


def _holding(phrase: Phrase, postings: Mapping[str, Mapping[int, object]]) -> set[int]:
    """The sealed chunks holding every exact token of ``phrase`` (and, for a prefix, a
    token it starts)."""
    exact = phrase.tokens[:-1] if phrase.prefix else phrase.tokens
    held = set(postings.get(exact[0], ()))
    for token in exact[1:]:
        held &= postings.get(token, {}).keys()
    if phrase.prefix:
        started: set[int] = set()
        for token, per_chunk in postings.items():
            if token.startswith(phrase.tokens[-1]):
                started |= per_chunk.keys()
        held &= started
    return held
