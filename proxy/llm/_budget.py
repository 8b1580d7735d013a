"""A tool result cut to a token budget at a boundary that keeps it readable.

A result over its budget shows what fits of it: whole lines of a text, whole items of a
JSON list, and only when the first line alone is over, that line up to the last whole
word that fits. One line after what is shown (`notice`) says what was left out (lines or
items, and bytes) and how to read the rest: the ``read_result`` calls to make and the
result's URI, ``nativemcp://results/<id>``.

Counts are `count_tokens`' (exact o200k_base with the ``tokens`` extra, else characters /
4). Python strings hold code points, so no cut ever falls inside a UTF-8 sequence; the
cut falls at a line end, an item's end or a space, never inside a word (unless one word
alone is over the budget, when it falls at the last punctuation, else a character).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from ._tokens import count_tokens

__all__ = [
    "DEFAULT_RESULT_BUDGET",
    "MIN_BUDGET",
    "RESULTS_URI",
    "Omitted",
    "check_budget",
    "fit_items",
    "fit_lines",
    "human_size",
    "largest_fitting",
    "notice",
]

DEFAULT_RESULT_BUDGET: Final = 8_000
"""The agent loop's token budget per tool result unless the pool says otherwise.

About 32 KB of text: room for a page of any result, a small share of any current
model's context, and far below Claude Code's 25,000-token limit on MCP output."""
MIN_BUDGET: Final = 200
"""The smallest budget a result may be given: the notice alone takes up to about 90."""
RESULTS_URI: Final = "nativemcp://results/"
"""The prefix of a kept result's resource URI (the result's id follows)."""
_BREAK: Final = re.compile(r"\s+")
_PUNCTUATION: Final = re.compile(r"[,;:.)\]}>/|-]")


def check_budget(budget: object, name: str = "budget") -> int:
    """``budget`` itself when it is a whole number of tokens of at least `MIN_BUDGET`.

    Raises:
        ValueError: a bool, a non-integer, or fewer than `MIN_BUDGET` tokens.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_BUDGET:
        raise ValueError(
            f"{name} must be a whole number of tokens, at least {MIN_BUDGET} (the note "
            f"that says how to read the rest takes up to about 90), not {budget!r}"
        )
    return budget


class Omitted(NamedTuple):
    """What a cut left out, for the one line that says so."""

    unit: str
    """``"line"`` or ``"item"``."""
    first: int
    """The first unit shown (1-based)."""
    shown: int
    """How many whole units are shown (0: only the start of the first)."""
    total: int
    """How many units the whole result (or the part being read) has."""
    left_bytes: int
    """The UTF-8 size of what is not shown."""
    result_id: str
    """The kept result's id."""
    start_shown: bool = True
    """With ``shown`` 0: whether the start of the first unit is shown."""


def human_size(size: int) -> str:
    """``size`` bytes as people write it (``812 bytes``, ``1.3 KB``, ``2.0 MB``)."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def notice(omitted: Omitted) -> str:
    """The one line that says what a cut left out and how to read the rest."""
    unit, first, shown, total = omitted.unit, omitted.first, omitted.shown, omitted.total
    last = first + shown - 1
    left = total - last
    if shown:
        what = f"{unit}s {first:,}-{last:,} of {total:,} shown, {left:,} {unit}"
        what += f"{'s' if left != 1 else ''} ({human_size(omitted.left_bytes)}) left out"
        next_line = last + 1
    else:
        start = "only the start of" if omitted.start_shown else "not even"
        what = (
            f"{start} {unit} {first:,} of {total:,} shown, "
            f"{human_size(omitted.left_bytes)} left out"
        )
        next_line = first
    rid = omitted.result_id
    return (
        f"[cut to fit the token budget: {what}. The whole result is kept as "
        f"{RESULTS_URI}{rid}: read_result(id={rid!r}, from_line={next_line}) reads on, "
        f"read_result(id={rid!r}, query='words') finds the passages that hold them]"
    )


def largest_fitting(fits: Callable[[int], bool], high: int) -> int:
    """The largest ``n`` in ``0..high`` with ``fits(n)`` (``fits(0)`` assumed true).

    Token counts grow with ``n`` all but by a token here and there (a notice's numbers
    gain a digit), so the binary search's answer is checked and stepped down."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    while low > 0 and not fits(low):
        low -= 1
    return low


def fit_lines(
    lines: Sequence[str],
    budget: int,
    *,
    result_id: str,
    first: int = 1,
    total: int | None = None,
    header: str = "",
    unit: str = "line",
    rest_bytes: int = 0,
) -> str:
    """``header`` and as many whole ``lines`` as fit ``budget`` with the notice, joined.

    ``lines`` are units ``first``.. of a whole of ``total`` units (default: these),
    and ``rest_bytes`` the size of the units after them.
    The answer is never over ``budget``; when every line fits, no notice is added (a
    part's ``header`` says which it is).
    When not even the first line fits, that line is cut after the last whole word that
    fits (`_fit_words`).
    """
    total = len(lines) + first - 1 if total is None else total
    head = f"{header}\n" if header else ""
    whole = head + "\n".join(lines)
    if count_tokens(whole) <= budget:  # the header, if any, says which lines these are
        return whole
    sizes = [len(line.encode()) + 1 for line in lines]

    def shown(n: int) -> str:
        left = sum(sizes[n:]) + rest_bytes
        mark = notice(Omitted(unit, first, n, total, left, result_id))
        return head + "".join(f"{line}\n" for line in lines[:n]) + mark

    n = largest_fitting(lambda n: count_tokens(shown(n)) <= budget, len(lines))
    if n > 0 or not lines:
        return shown(n)
    omitted = Omitted(unit, first, 0, total, sum(sizes) + rest_bytes, result_id)
    return _fit_words(lines[0], budget, head, omitted)


def _fit_words(line: str, budget: int, head: str, omitted: Omitted) -> str:
    """The start of ``line`` up to the last whole word that fits, then the notice."""
    ends = [match.start() for match in _BREAK.finditer(line)]
    if not ends:
        # One word over the whole budget (base64, a minified blob): at punctuation.
        ends = [match.end() for match in _PUNCTUATION.finditer(line)]
    if not ends:
        ends = list(range(1, len(line)))

    def shown(k: int) -> str:
        start = line[: ends[k - 1]] if k else ""
        left = omitted.left_bytes - len(start.encode())
        mark = notice(omitted._replace(left_bytes=left, start_shown=bool(start)))
        return f"{head}{start}\n{mark}" if start else f"{head}{mark}"

    k = largest_fitting(lambda k: count_tokens(shown(k)) <= budget, len(ends))
    return shown(k)


def fit_items(
    items: Sequence[str],
    budget: int,
    *,
    result_id: str,
    total_bytes: int,
) -> tuple[str, int]:
    """The first items of a JSON list (each item's compact JSON) as a JSON list that
    fits ``budget`` with the notice, and how many items it holds (0: none fit)."""
    sizes = [len(item.encode()) + 1 for item in items]
    every = "[" + ",\n".join(items) + "]"
    if count_tokens(every) <= budget:  # fits once written compactly: nothing left out
        return every, len(items)

    def shown(n: int) -> str:
        left = max(total_bytes - sum(sizes[:n]) - 1, 0)
        mark = notice(Omitted("item", 1, n, len(items), left, result_id))
        return "[" + ",\n".join(items[:n]) + "]\n" + mark

    n = largest_fitting(lambda n: count_tokens(shown(n)) <= budget, len(items))
    return shown(n), n
