"""Exact top-k BM25 that reads only the blocks of the index that can still make the cut.

FTS5's ``ORDER BY rank LIMIT k`` scores every row holding a query term (about 1 µs
each): search time grows with the corpus. Here a store's chunks are cut, by rowid, into
sealed blocks of `BLOCK_CHUNKS` chunks, and each block keeps, per token, the highest
BM25 term score any of its chunks gets (at the block's own average length). A search
(block-max, as search engines do over impact-ordered postings):

1. computes each block's upper bound for the query: the sum over the query's phrases of
   idf times the phrase's best term score in the block (0 where a token is absent);
2. scores one block at a time from its postings (`score_block`: FTS5's formula, with
   the whole table's statistics), highest bound first; the unsealed tail of newest
   chunks has no bound and is ranked first (by FTS5);
3. stops once ``k`` hits are in hand and the next block's bound is below the k-th
   score: no chunk left unread can enter the top k.

The result is FTS5's own ranking, exactly: the bounds only decide what is read. They
hold whatever the store's average length is now: a score at average length ``A`` is at
most ``max(1, A / A0)`` times the score at the block's ``A0`` (`scale_bound`). A deleted
chunk leaves its block's bounds too high, never too low, so they stay valid.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Final, NamedTuple, TypeVar

from ._postings import BM25_B, BM25_K1, _fold_token, chunk_tokens
from ._tokenize import _CJK_CLASS, _CJK_RUN, normalize

__all__ = [
    "BLOCK_CHUNKS",
    "MIN_BLOCKS",
    "Sealed",
    "block_bound",
    "cjk_surface",
    "fast_tokens",
    "non_ascii_tokens",
    "read_averages",
    "scale_bound",
    "score_block",
    "seal",
    "skippable_tokens",
    "surface_counts",
    "term_score",
    "top_k",
    "unpack_chunks",
]

T = TypeVar("T")

BLOCK_CHUNKS: Final = 1024
"""Chunks per sealed block: the unit a search reads or skips."""
MIN_BLOCKS: Final = 4
"""Below this many sealed blocks FTS5 ranks the whole store: bounds then skip too few
blocks to pay for scoring the others in Python. At 10 blocks, with the index facts
kept between searches (`_index_cache`), the blocks rank in 0.25-0.31 ms at p50
against FTS5's 0.33-0.42 ms (measured in process, 300 queries)."""
_SLACK: Final = 1e-9
"""Relative margin on every bound, so float rounding never prunes a tying chunk."""


class Sealed(NamedTuple):
    """One block as written: its chunk ids and lengths (tokens), their average, and per
    token ``(bound, postings)``: the best `term_score` of its chunks at that average,
    and the chunks holding it as `array` bytes of ``index, tf`` pairs (index into the
    ids), in index order."""

    ids: array[int]
    lengths: array[int]
    average: float
    postings: dict[str, tuple[float, bytes]]

    def packed_chunks(self) -> bytes:
        """The block's chunk ids and lengths as one value, as both backends store them
        (read back with `unpack_chunks`)."""
        return self.ids.tobytes() + self.lengths.tobytes()


def unpack_chunks(packed: bytes) -> tuple[array[int], array[int]]:
    """A block's chunk ids and their lengths, from `Sealed.packed_chunks`."""
    ids, lengths = array("q"), array("i")
    split = len(packed) // (ids.itemsize + lengths.itemsize) * ids.itemsize
    ids.frombytes(packed[:split])
    lengths.frombytes(packed[split:])
    return ids, lengths


def term_score(tf: float, length: float, average: float) -> float:
    """BM25's term-frequency part (FTS5's formula, k1 1.2, b 0.75), without the idf."""
    return tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))


def scale_bound(score: float, sealed_average: float, average: float) -> float:
    """An upper bound at average length ``average`` for a term score computed at
    ``sealed_average``: the denominator's length part shrinks by at most that ratio."""
    return score * max(1.0, average / sealed_average)


def fast_tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for ``text``, as `chunk_tokens` gives them, faster: an
    ASCII line is lower-cased runs of letters and digits (exactly what ``unicode61``
    keeps), any other line is normalized once and its CJK runs cut into bigrams here
    rather than rewritten into a new string first."""
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    # Tokens never span lines (a newline separates them).
    tokens: list[str] = []
    for line in text.split("\n"):
        if line.isascii():
            tokens += line.lower().translate(_ASCII_SEPARATORS).split()
            continue
        pieces = _PIECE.findall(normalize(line))
        if not all(piece.isalnum() for piece in pieces):
            # A CJK-class character that is no letter (unassigned): the index's way.
            tokens += chunk_tokens(line)
            continue
        for piece in pieces:
            if len(piece) > 1 and _CJK_RUN.match(piece):
                # As `index_text`: each bigram, then the run's last character.
                tokens += [_fold_token(piece[i : i + 2]) for i in range(len(piece) - 1)]
                tokens.append(_fold_token(piece[-1]))
            else:
                tokens.append(_fold_token(piece))
    return tokens


def non_ascii_tokens(text: str) -> list[str]:
    """`fast_tokens` of ``text`` for finding phrases of non-ASCII tokens only: the
    tokens of each ASCII line (all ASCII) become one empty token, or none where the
    line has none, so those phrases occur exactly as often as in `fast_tokens`'s
    list (no occurrence holds an ASCII line's token, and tokens either side of a
    tokenless line stay adjacent). Most lines of most text are ASCII: they are only
    searched for a letter or digit, not tokenized."""
    tokens: list[str] = []
    for line in text.split("\n"):
        if not line.isascii():
            # Tokens never span lines: a line alone tokenizes as within the text.
            tokens += fast_tokens(line)
        elif _ASCII_ALNUM.search(line):
            tokens.append("")
    return tokens


def cjk_surface(tokens: Sequence[str]) -> str | None:
    """The text a phrase of CJK bigrams stands for (``東京 京都``: ``東京都``; ``東京``
    alone: ``東京``), when each token is two CJK letters and each after the first
    begins with the one before's second; None for any other phrase (`surface_counts`
    counts only those)."""
    if not tokens or not all(_CJK_PAIR.fullmatch(token) for token in tokens):
        return None
    if any(before[1] != after[0] for before, after in itertools.pairwise(tokens)):
        return None
    return tokens[0] + "".join(token[1] for token in tokens[1:])


def surface_counts(text: str, surfaces: Sequence[str]) -> list[int]:
    """How often each phrase of CJK bigrams standing for one of ``surfaces``
    (`cjk_surface`) occurs in the tokens of ``text``, without tokenizing it: a CJK
    run's bigrams are its adjacent pairs of characters, and the token after a run's
    last bigram is its last character alone, so the phrase occurs once per place its
    surface starts in a normalized line (overlapping places too: ``東京都東京都`` holds
    ``京都東`` once). Each line is normalized once for all the surfaces."""
    counts = [0] * len(surfaces)
    for line in text.split("\n"):
        if line.isascii():
            continue  # no CJK character
        normalized = normalize(line)
        for number, surface in enumerate(surfaces):
            start = normalized.find(surface)
            while start >= 0:
                counts[number] += 1
                start = normalized.find(surface, start + 1)
    return counts


_CJK_PAIR: Final = re.compile(f"(?:(?=[{_CJK_CLASS}])[^\\W_]){{2}}")
"""A bigram token: two CJK characters that are letters or digits."""
_ASCII_ALNUM: Final = re.compile("[A-Za-z0-9]")
"""What makes an ASCII line hold a token (every other ASCII character separates)."""
_PIECE: Final = re.compile(f"[{_CJK_CLASS}]+|(?:(?![{_CJK_CLASS}])[^\\W_])+")
"""A CJK run, or a run of other letters and digits: the words ``unicode61`` finds in
`index_text`'s output, which puts spaces around every CJK run."""


# Every ASCII character that is not a letter or digit separates tokens in unicode61.
_ASCII_SEPARATORS: Final = {
    code: " " for code in range(128) if not chr(code).isalnum() and chr(code) != " "
}


def seal(blocked: Sequence[tuple[int, str]]) -> Sealed:
    """The block of ``(chunk id, text)`` pairs, in id order (see `Sealed`)."""
    ids = array("q", [chunk_id for chunk_id, _ in blocked])
    counted = [Counter(fast_tokens(text)) for _, text in blocked]
    lengths = array("i", [sum(counts.values()) for counts in counted])
    average = max(sum(lengths) / len(lengths), 1.0) if lengths else 1.0
    pairs: dict[str, array[int]] = {}
    best: dict[str, float] = {}
    for index, counts in enumerate(counted):
        length = lengths[index]
        for token, tf in counts.items():
            found = pairs.get(token)
            if found is None:
                found = pairs[token] = array("i")
            found.append(index)
            found.append(tf)
            score = term_score(tf, length, average)
            if score > best.get(token, 0.0):
                best[token] = score
    postings = {token: (best[token], found.tobytes()) for token, found in pairs.items()}
    return Sealed(ids, lengths, average, postings)


def score_block(
    ids: array[int],
    lengths: array[int],
    terms: Sequence[tuple[str, float, bytes]],
    average: float,
    skippable: Collection[str] = (),
    threshold: float = -math.inf,
) -> list[tuple[int, float]]:
    """``(chunk id, BM25)`` of the chunks of a block holding a term, from each term's
    ``(token, idf, postings)`` in query order: FTS5's formula and order of operations,
    so the scores are the ones its ``rank`` gives. Chunks scoring below ``threshold``
    are left out (the caller's k-th score: they cannot enter its top k).

    Chunks holding only ``skippable`` tokens are left out: the caller knows they
    cannot reach its top k (MaxScore within the block). The other chunks are found in
    the postings of the remaining tokens, and a skippable token's part is added to
    them only (a block holds at most `BLOCK_CHUNKS`: its postings are read through,
    a set lookup each, faster than bisecting them per candidate).

    Each term's parts are added in query order, term by term, as FTS5 adds them.
    """
    decoded: list[tuple[str, float, array[int]]] = []
    for token, weight, packed in terms:
        pairs = array("i")
        pairs.frombytes(packed)
        decoded.append((token, weight, pairs))
    candidates: set[int] = set()
    if skippable:
        for token, _, pairs in decoded:
            if token not in skippable:
                candidates.update(pairs[0::2])
    # Locals, not globals, in the loops below; the same values, so the same floats.
    k1, b, plus_one, norm = BM25_K1, BM25_B, BM25_K1 + 1, 1 - BM25_B
    scores: dict[int, float] = {}
    for token, weight, pairs in decoded:
        # The pairs read two at a time from one iterator: no copy per column.
        pair = iter(pairs)
        postings: Iterable[tuple[int, int]] = zip(pair, pair, strict=True)
        if token in skippable:
            postings = [(index, tf) for index, tf in postings if index in candidates]
        if not scores:
            # The first term's parts are each chunk's whole score so far (0.0 + part is
            # part): one dict built in C instead of a lookup and a store per posting.
            scores = {
                index: weight
                * ((tf * plus_one) / (tf + k1 * (norm + b * lengths[index] / average)))
                for index, tf in postings
            }
            continue
        get = scores.get
        for index, tf in postings:
            part = weight * ((tf * plus_one) / (tf + k1 * (norm + b * lengths[index] / average)))
            scores[index] = get(index, 0.0) + part
    return [(ids[index], score) for index, score in scores.items() if score >= threshold]


def skippable_tokens(contributions: Mapping[str, float], threshold: float) -> set[str]:
    """The tokens whose chunks cannot reach ``threshold`` on their own: the largest
    set of the smallest ``contributions`` (bounds per token in a block) whose sum stays
    below it, so a chunk holding only those scores less."""
    skippable: set[str] = set()
    total = 0.0
    for token, bound in sorted(contributions.items(), key=lambda item: item[1]):
        total += bound
        if total * (1 + _SLACK) >= threshold:
            break
        skippable.add(token)
    return skippable


def block_bound(
    contributions: Mapping[str, float], together: Iterable[Collection[str]] | None
) -> float:
    """The most any chunk of a block can score for a query.

    ``contributions``: per query token in the block, its idf (summed over the query's
    terms that are that token) times its best term score there; ``together``: the sets
    of query tokens found in the same chunk, for each of the block's chunks holding two
    or more (None: not known, every token counts as present in one chunk). A chunk
    holding one query token scores at most that token's contribution; only the chunks
    in ``together`` can add several.
    """
    if together is None:
        return sum(contributions.values())
    best = max(contributions.values(), default=0.0)
    for present in together:
        best = max(best, sum(contributions.get(token, 0.0) for token in present))
    return best


def read_averages(blob: bytes | None) -> tuple[int, int]:
    """``(rows, tokens)`` from FTS5's averages record (``%_data`` row 1): the row count
    and the token total of its one column, as SQLite varints; ``(0, 0)`` when absent."""
    if not blob:
        return 0, 0
    values: list[int] = []
    offset = 0
    while offset < len(blob) and len(values) < 2:
        value = 0
        for index in range(9):
            byte = blob[offset]
            offset += 1
            if index == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values[0], values[1]) if len(values) == 2 else (0, 0)


def top_k(
    ranges: Iterable[tuple[float, T]],
    k: int,
    read: Callable[[T, float], list[tuple[int, float]]],
) -> list[tuple[int, float]]:
    """The ``k`` best ``(rowid, score)`` pairs, best first (ties: lower rowid first),
    reading ranges by bound.

    ``ranges``: ``(bound, key)`` per part of the index, the bound at least the score of
    any chunk in it; ``read(key, threshold)``: that part's scored chunks (or its best
    ``k``), any scoring below ``threshold`` (the k-th score so far) may be left out. Parts
    are read highest bound first until ``k`` are in hand and the next bound is below
    the k-th score: no chunk left unread can enter the top ``k``.
    """
    best: list[tuple[float, int]] = []  # a min-heap of (score, -rowid): the k-th on top
    for bound, key in sorted(ranges, key=lambda entry: -entry[0]):
        if len(best) >= k and bound * (1 + _SLACK) < best[0][0]:
            break
        found = read(key, best[0][0] if len(best) >= k else -math.inf)
        if len(best) < k:
            # No threshold yet, so every chunk of the range came back: sorted once in C
            # and cut to the k best (an ascending list is a min-heap), rather than each
            # pushed through the heap.
            best += [(score, -rowid) for rowid, score in found]
            best.sort()
            del best[:-k]
            continue
        for rowid, score in found:
            entry = (score, -rowid)
            if entry > best[0]:
                heapq.heapreplace(best, entry)
    return [(-negative, score) for score, negative in sorted(best, reverse=True)]
