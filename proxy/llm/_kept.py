"""Whole results kept for ``read_result``: in memory, per owner, for a while, up to a size.

A result cut to its budget is kept whole (`KeptResult`: its lines, and the original of
every image scaled down for the model) under an id, for the owner that made the call.
`KeptResults` keeps them in memory for ``ttl`` seconds and up to ``max_bytes`` in all
(the oldest go first; the newest always stays). A pool with the content store keeps
them there instead (``WorkerPool``'s keeper), so they are searchable with the store's
own tools and outlive the process.

`read_kept` answers a ``read_result`` call: a range of lines (items, for a JSON list),
or the passages that match a query (`PassageIndex`: the content store's BM25), cut to
the budget again with the line that says how to read on, or an original image. An id
that is unknown, expired or another owner's gets the same answer: no such result.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from nativemcp.protocol import (
    INVALID_PARAMS,
    CallToolResult,
    ImageContent,
    NativeMCPResponse,
    TextContent,
    ToolError,
    text_response,
)

from ._budget import fit_lines, largest_fitting
from ._passages import Passage, PassageIndex
from ._tokens import count_tokens

__all__ = [
    "DEFAULT_KEEP_BYTES",
    "DEFAULT_KEEP_SECONDS",
    "About",
    "KeptResult",
    "KeptResults",
    "ReadRequest",
    "Unit",
    "check_top_n",
    "image_answer",
    "lines_answer",
    "new_result_id",
    "no_such_result",
    "passages_answer",
    "read_kept",
]

DEFAULT_KEEP_SECONDS: Final = 3600.0
"""How long `KeptResults` keeps a result by default: an hour."""
DEFAULT_KEEP_BYTES: Final = 64 * 1024 * 1024
"""How much `KeptResults` keeps in all by default: 64 MB (the oldest go first)."""
_TOP_N: Final = 5

Unit = Literal["line", "item"]
"""What one line of a kept result is: a line of text, or an item of a JSON list."""


def new_result_id() -> str:
    """A fresh result id: ``r`` and 16 hex digits (unguessable, 64 random bits)."""
    return f"r{secrets.token_hex(8)}"


def no_such_result(result_id: str) -> ToolError:
    """The error for an id that is unknown, expired or another caller's (one message)."""
    return ToolError(
        f"no kept result {result_id!r} for this caller: results are kept for a while "
        "after a cut, and only for the caller that made the call",
        code=INVALID_PARAMS,
    )


@dataclass(eq=False)
class KeptResult:
    """A whole tool result as ``read_result`` reads it."""

    id: str
    owner: str
    tool: str
    unit: Unit
    lines: Sequence[str]
    """The result's lines, each a line of text or a JSON key or item.

    A JSON list is one item to a line; an object one key or list item to a line."""
    images: tuple[ImageContent, ...] = ()
    """The result's images as the tool gave them (kept when one was scaled down)."""
    created: float = field(default_factory=time.monotonic)
    size: int = 0
    """The UTF-8 size of the lines, newlines included."""
    _index: PassageIndex | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.size:
            self.size = sum(len(line.encode()) + 1 for line in self.lines)
        self.lines = tuple(self.lines)

    @property
    def text(self) -> str:
        """The whole result as one text (what ``nativemcp://results/<id>`` reads)."""
        return "\n".join(self.lines)

    def passages(self) -> PassageIndex:
        """The BM25 index of this result's passages, made on the first query."""
        if self._index is None:
            self._index = PassageIndex(self.lines)
        return self._index


class KeptResults:
    """Kept results in memory: per owner, ``ttl`` seconds each, ``max_bytes`` in all.

    Safe to share between threads (a lock guards the map). `shared` is the process's
    own, which `tool_result_message` keeps in when given none.

    Raises:
        ValueError: ``ttl`` or ``max_bytes`` is not positive.
    """

    _shared: KeptResults | None = None

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_KEEP_SECONDS,
        max_bytes: int = DEFAULT_KEEP_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not ttl > 0 or isinstance(max_bytes, bool) or max_bytes <= 0:
            raise ValueError(
                f"ttl and max_bytes must be positive, not ttl={ttl!r}, max_bytes={max_bytes!r}"
            )
        self._ttl = ttl
        self._max_bytes = max_bytes
        self._clock = clock
        self._kept: OrderedDict[str, KeptResult] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @classmethod
    def shared(cls) -> KeptResults:
        """The process's own store (made on first use, with the defaults)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._kept)

    def keep(
        self,
        lines: Sequence[str],
        *,
        owner: str,
        tool: str,
        unit: Unit = "line",
        images: tuple[ImageContent, ...] = (),
    ) -> KeptResult:
        """Keep a whole result for ``owner`` under a new id, and return it."""
        kept = KeptResult(new_result_id(), owner, tool, unit, lines, images, self._clock())
        kept.size += sum(len(image.data) for image in images)
        with self._lock:
            self._kept[kept.id] = kept
            self._bytes += kept.size
            self._expire()
        return kept

    def get(self, result_id: str, *, owner: str) -> KeptResult:
        """The result kept under ``result_id`` for ``owner``.

        Raises:
            ToolError: no such id, expired, or kept for another owner (one message, so
                an id says nothing about whether another caller has it).
        """
        with self._lock:
            self._expire()
            kept = self._kept.get(result_id)
        if kept is None or not secrets.compare_digest(kept.owner, owner):
            raise no_such_result(result_id)
        return kept

    def _expire(self) -> None:
        now = self._clock()
        while self._kept:
            oldest = next(iter(self._kept.values()))
            expired = now - oldest.created > self._ttl
            # The newest is kept even when alone over the cap: it was just handed out.
            if not expired and (self._bytes <= self._max_bytes or len(self._kept) == 1):
                return
            del self._kept[oldest.id]
            self._bytes -= oldest.size


class ReadRequest(NamedTuple):
    """A ``read_result`` call's arguments, checked (`read_request`)."""

    result_id: str
    from_line: int = 1
    to_line: int | None = None
    query: str | None = None
    top_n: int = _TOP_N
    image: int | None = None


def read_kept(kept: KeptResult, request: ReadRequest, budget: int) -> NativeMCPResponse[Any]:
    """What ``read_result`` answers: lines ``from_line``..``to_line`` of ``kept``, or its
    ``top_n`` passages that match ``query``, cut to ``budget`` with the line that says
    how to read on; or its original image number ``image``.

    Raises:
        ToolError: a line number or image number out of range, or ``top_n`` not
            between 1 and 50.
    """
    about = About(kept.id, kept.tool, kept.unit, len(kept.lines))
    query = request.query
    if request.image is not None:
        return image_answer(about, kept.images, request.image)
    if query is not None and query.strip():
        check_top_n(request.top_n)
        found = kept.passages().search(query, request.top_n)
        return text_response(
            passages_answer(
                about, query, [(p, kept.lines[p.first - 1 : p.last]) for p in found], budget
            )
        )
    from_line = request.from_line
    last = about.check_range(from_line, request.to_line)
    rest = sum(len(line.encode()) + 1 for line in kept.lines[last:])
    return text_response(
        lines_answer(about, from_line, kept.lines[from_line - 1 : last], rest, budget)
    )


def image_answer(
    about: About, images: Sequence[ImageContent], number: int
) -> NativeMCPResponse[Any]:
    """The original of image ``number`` (1-based) of a kept result, after one line.

    Raises:
        ToolError: the result has no such image.
    """
    if not 1 <= number <= len(images):
        raise ToolError(
            f"result {about.result_id!r} has {len(images)} image(s) kept, not image {number}",
            code=INVALID_PARAMS,
        )
    image = images[number - 1]
    header = f"[result {about.result_id} ({about.tool}): image {number}, the original]"
    return NativeMCPResponse(result=CallToolResult(content=[TextContent(text=header), image]))


class About(NamedTuple):
    """What an answer of ``read_result`` says about the result it reads."""

    result_id: str
    tool: str
    unit: Unit
    total: int

    def check_range(self, from_line: int, to_line: int | None) -> int:
        """The last line to read of ``from_line``..``to_line`` (None: the end).

        Raises:
            ToolError: the range is empty or starts outside the result.
        """
        last = self.total if to_line is None else to_line
        if not 1 <= from_line <= max(self.total, 1) or last < from_line:
            raise ToolError(
                f"lines {from_line}..{last} are not in result {self.result_id!r}, which has "
                f"{self.total:,} {self.unit}s (1..{self.total})",
                code=INVALID_PARAMS,
            )
        return min(last, self.total)


def check_top_n(top_n: int) -> None:
    """Raises: ToolError: ``top_n`` is not between 1 and 50."""
    if not 1 <= top_n <= 50:
        raise ToolError(f"top_n must be between 1 and 50, not {top_n}", code=INVALID_PARAMS)


def lines_answer(
    about: About, from_line: int, lines: Sequence[str], rest_bytes: int, budget: int
) -> str:
    """The answer for ``lines`` (from ``from_line``; ``rest_bytes`` after them), in
    ``budget``."""
    last = from_line + len(lines) - 1
    header = (
        f"[result {about.result_id} ({about.tool}): {about.unit}s {from_line:,}-{last:,} "
        f"of {about.total:,}]"
    )
    return fit_lines(
        lines,
        budget,
        result_id=about.result_id,
        first=from_line,
        total=about.total,
        header=header,
        unit=about.unit,
        rest_bytes=rest_bytes,
    )


def passages_answer(
    about: About, query: str, found: Sequence[tuple[Passage, Sequence[str]]], budget: int
) -> str:
    """The answer for the passages ``found`` for ``query`` (each with its lines), best
    first: as many whole passages as fit ``budget``, or the best one's first lines."""
    rid, unit = about.result_id, about.unit
    if not found:
        return (
            f"[result {rid} ({about.tool}): no {unit} of {about.total:,} holds a word of "
            f"{query!r}; read_result(id={rid!r}, from_line=1) reads it in order]"
        )
    blocks = [
        "\n".join(
            [f"[{unit}s {passage.first:,}-{passage.last:,}, score {passage.score:.2f}]", *lines]
        )
        for passage, lines in found
    ]

    def shown(n: int) -> str:
        header = (
            f"[result {rid} ({about.tool}): the {n} passage{'s' if n != 1 else ''} of "
            f"{about.total:,} {unit}s that best match {query!r}, best first]"
        )
        return "\n".join([header, *blocks[:n]])

    n = largest_fitting(lambda n: count_tokens(shown(n)) <= budget, len(blocks))
    if n:
        return shown(n)
    best, lines = found[0]  # not even the best passage fits whole: its first lines
    return fit_lines(
        lines,
        budget,
        result_id=rid,
        first=best.first,
        total=about.total,
        header=shown(1).partition("\n")[0],
        unit=unit,
    )
