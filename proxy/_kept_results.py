"""Where the agent loop keeps a result cut to its budget, and how ``read_result`` reads it.

`ResultKeeping` is a part of the pool (composed, not mixed in): it holds the budget
and the kept results. When the pool runs the ``content-store`` built-in, a result is
kept there, in one store per owner (``nativemcp results …``), so it is searchable with
the store's own tools too and takes no memory here but its id and line sizes;
``read_result`` reads its lines with ``read_content`` and its passages with the store's
BM25 (``keyword_similarity_search``). Without the content store (or when it fails) the
result is kept in memory (`KeptResults`: a TTL and a size cap). Either way a result is
read only by the owner it was kept for.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import anyio

from nativemcp.protocol import ImageContent, NativeMCPError, NativeMCPResponse, text_response

from .llm._fit import Whole, cut_output, to_keep
from .llm._kept import (
    About,
    KeptResults,
    Unit,
    check_top_n,
    image_answer,
    lines_answer,
    new_result_id,
    no_such_result,
    passages_answer,
    read_kept,
)
from .llm._passages import Passage
from .llm._read_result import read_request
from .llm._render import ToolOutput

if TYPE_CHECKING:
    from nativemcp.workers.content_store import ContentStoreAPI

__all__ = ["Cut", "ResultKeeping"]

_STORED_IDS: Final = 10_000
"""The content-store results whose ids `read_result` answers (the oldest are forgotten;
their text stays in the store, found by its own search)."""
_SEARCH_WIDTH: Final = 4
"""A query asks the owner's store for this many times ``top_n`` hits: some may be
another kept result's, and only this one's are answered."""


class Cut(NamedTuple):
    """A result that was cut: its id and the UTF-8 size of what was kept."""

    result_id: str
    size: int


@dataclass(frozen=True)
class _Stored:
    """A result kept in the content store: where, whose, and its lines' end offsets."""

    owner: str
    tool: str
    unit: Unit
    store_id: str
    content_id: str
    ends: tuple[int, ...]
    """The UTF-8 offset after each line's newline (for the bytes left out)."""


class ResultKeeping:
    """The agent loop's result budget, and the results it kept whole.

    Args:
        budget: tokens per result (None: no budget, nothing is cut or kept).
        content_store: the pool's content store as a typed proxy, or None when the
            pool does not run it (called at each keep: the store may start later).
    """

    def __init__(
        self, budget: int | None, content_store: Callable[[], ContentStoreAPI | None]
    ) -> None:
        self.budget = budget
        self.memory = KeptResults()
        self._content_store = content_store
        self._stored: OrderedDict[str, _Stored] = OrderedDict()
        self._stores: dict[str, str] = {}  # owner -> the id of its store
        self._lock = anyio.Lock()

    async def fit(self, output: ToolOutput, *, owner: str, tool: str) -> ToolOutput:
        """``output`` as the model reads it: as it is within the budget, else cut, with
        the whole kept for ``owner``."""
        return (await self.cut(output, owner=owner, tool=tool))[0]

    async def cut(
        self, output: ToolOutput, *, owner: str, tool: str
    ) -> tuple[ToolOutput, Cut | None]:
        """`fit`'s output, and what was kept (None: ``output`` is within the budget and
        returned as it is)."""
        budget = self.budget
        if budget is None:
            return output, None
        if len(output.body) <= budget and not output.extras:
            return output, None  # a token is a character at least: it fits, nothing to count
        # Counting a large text's tokens, cutting it and scaling an image take tens of
        # milliseconds: in a worker thread, so the pool's other calls go on meanwhile.
        whole = await anyio.to_thread.run_sync(to_keep, output, budget)
        if whole is None:
            return output, None
        result_id = await self._keep(whole, owner, tool)
        fitted = await anyio.to_thread.run_sync(cut_output, output, whole, budget, result_id)
        size = sum(len(line.encode()) + 1 for line in whole.lines)
        return fitted, Cut(result_id, size)

    async def whole(self, result_id: str, *, owner: str) -> tuple[str, tuple[ImageContent, ...]]:
        """The whole text of a kept result and its images (``nativemcp://results/<id>``).

        Raises:
            ToolError: no such result for ``owner``.
        """
        stored = self._stored.get(result_id)
        if stored is None:
            kept = self.memory.get(result_id, owner=owner)
            return kept.text, kept.images
        store = self._content_store()
        if store is None or not secrets.compare_digest(stored.owner, owner):
            raise no_such_result(result_id)
        read = await store.read_content(
            store_id=stored.store_id, content_id=stored.content_id, from_line=1
        )
        return read.content, ()

    async def _keep(self, whole: Whole, owner: str, tool: str) -> str:
        store = self._content_store()
        # The content store keeps text: a result with images stays in memory whole.
        if store is not None and not whole.images:
            try:
                return await self._keep_in_store(store, whole, owner, tool)
            except NativeMCPError:
                pass  # the store failed (closed, full disk): memory keeps it instead
        kept = self.memory.keep(
            whole.lines, owner=owner, tool=tool, unit=whole.unit, images=whole.images
        )
        return kept.id

    async def _keep_in_store(
        self, store: ContentStoreAPI, whole: Whole, owner: str, tool: str
    ) -> str:
        async with self._lock:  # one store per owner, made once
            store_id = self._stores.get(owner)
            if store_id is None:
                tag = hashlib.sha256(owner.encode()).hexdigest()[:12]
                made = await store.create_store(
                    name=f"nativemcp results {tag}",
                    description="tool results cut to the agent loop's budget, kept whole",
                )
                store_id = self._stores[owner] = made.store_id
        result_id = new_result_id()
        added = await store.add_content(
            store_id=store_id,
            content="\n".join(whole.lines),
            filename=f"{result_id}.txt",
            mime_type="text/plain",
        )
        ends = tuple(accumulate(len(line.encode()) + 1 for line in whole.lines))
        self._stored[result_id] = _Stored(owner, tool, whole.unit, store_id, added.content_id, ends)
        if len(self._stored) > _STORED_IDS:
            self._stored.popitem(last=False)
        return result_id

    async def read(
        self, arguments: Mapping[str, Any] | None, *, owner: str
    ) -> NativeMCPResponse[Any]:
        """What a ``read_result`` call answers for ``owner``.

        Raises:
            ArgumentsError: the arguments are not as ``read_result`` takes them.
            ToolError: no such result for ``owner``, or a line range outside it.
        """
        budget = self.budget or 10**9
        request = read_request(arguments)
        stored = self._stored.get(request.result_id)
        if stored is None:
            kept = self.memory.get(request.result_id, owner=owner)
            return read_kept(kept, request, budget)
        if not secrets.compare_digest(stored.owner, owner):
            raise no_such_result(request.result_id)
        store = self._content_store()
        if store is None:  # pragma: no cover - the pool closed meanwhile
            raise no_such_result(request.result_id)
        about = About(request.result_id, stored.tool, stored.unit, len(stored.ends))
        if request.image is not None:
            return image_answer(about, (), request.image)  # images are kept in memory
        if request.query is not None and request.query.strip():
            check_top_n(request.top_n)
            answer = await self._passages(store, stored, about, request.query, request.top_n)
            return text_response(answer)
        last = about.check_range(request.from_line, request.to_line)
        read = await store.read_content(
            store_id=stored.store_id,
            content_id=stored.content_id,
            from_line=request.from_line,
            to_line=last,
        )
        lines = read.content.split("\n")[: last - request.from_line + 1]
        rest = stored.ends[-1] - stored.ends[last - 1]
        return text_response(lines_answer(about, request.from_line, lines, rest, budget))

    async def _passages(
        self, store: ContentStoreAPI, stored: _Stored, about: About, query: str, top_n: int
    ) -> str:
        found = await store.keyword_similarity_search(
            store_id=stored.store_id, query=query, top_n=min(top_n * _SEARCH_WIDTH, 50)
        )
        hits = [hit for hit in found.results if hit.content_id == stored.content_id][:top_n]
        passages = []
        for hit in hits:
            first, last = hit.line_range
            read = await store.read_content(
                store_id=stored.store_id,
                content_id=stored.content_id,
                from_line=first,
                to_line=last,
            )
            lines = read.content.split("\n")[: last - first + 1]
            passages.append((Passage(first, last, hit.raw_score), lines))
        return passages_answer(about, query, passages, self.budget or 10**9)
