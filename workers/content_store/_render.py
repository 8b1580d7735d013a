"""The text the model reads for each content-store result: the facts it needs to act
next (ids, line ranges, scores, what to call next), never a bare status line.

What to do next is said in the reader's words: the model's (tool calls, `NextSteps`)
by default; the command line passes its own `NextSteps` (``nativemcp list --offset 3``)
to `render_text`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from ._models import (
    AddContentResult,
    ContentSummary,
    DeleteContentResult,
    DeleteStoreResult,
    ListContentResult,
    ListStoresResult,
    ReadContentResult,
    SearchResult,
    StoreInfo,
)
from ._snippet import highlight
from ._tokenize import query_terms

__all__ = [
    "NextSteps",
    "format_size",
    "render_add_content",
    "render_create_store",
    "render_delete_content",
    "render_delete_store",
    "render_list_content",
    "render_list_stores",
    "render_read_content",
    "render_search",
    "render_text",
]


def format_size(size: int) -> str:
    """``1.5 KB``-style sizes."""
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _size(size: int) -> str:
    """``246 B``, ``1.5 KB = 1536 B``: the exact count stays in the text beside the
    rounded one, as it is in the JSON."""
    rounded = format_size(size)
    return rounded if size < 1024 else f"{rounded} = {size} B"


class NextSteps:
    """The next steps a result's text suggests, as tool calls for a model; a subclass
    says them in another reader's words (the command line's verbs)."""

    def list_more(self, store_id: str, offset: int) -> str:
        """A listing goes on at ``offset``."""
        return f'More: list_content(store_id="{store_id}", offset={offset})'

    def add_files(self, store_id: str) -> str:
        """A store is empty."""
        return "Add one with add_content."

    def create_store(self) -> str:
        """There is no store yet."""
        return "Create one with create_store(name=...)."

    def read_hit(self, store_id: str, content_id: str, lines: tuple[int, int]) -> str:
        """Read a search's top hit."""
        return (
            f'Read the top hit: read_content(store_id="{store_id}", '
            f'content_id="{content_id}", from_line={lines[0]}, '
            f"to_line={lines[1]}) (or another hit's id and line range above)"
        )

    def read_more(self, store_id: str, content_id: str, from_line: int) -> str:
        """A read stopped before the end of the file."""
        return f"(more: from_line={from_line})"


TOOL_CALLS: Final = NextSteps()
"""The next steps in the model's words."""


def _count(number: int, noun: str) -> str:
    """``1 chunk``, ``2 chunks``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _store_line(store: StoreInfo) -> str:
    extra = f" — {store.description}" if store.description else ""
    session = f" | Session: {store.session_id}" if store.session_id else ""
    items = _count(store.content_count, "item")
    return (
        f'"{store.name}"{extra}\n   Store ID: {store.store_id} | {items}{session}'
        f" | Created: {_when(store.created_at)}"
    )


def render_create_store(store: StoreInfo) -> str:
    """Text for `create_store`."""
    lines = [
        f'Created store "{store.name}"',
        f"  Store ID: {store.store_id}",
    ]
    if store.description:
        lines.append(f"  Description: {store.description}")
    if store.session_id:
        lines.append(f"  Session: {store.session_id}")
    lines.append(f"  Created: {_when(store.created_at)}")
    lines.append(
        f'Next: add_content(store_id="{store.store_id}", path=... or content=..., filename=...)'
    )
    return "\n".join(lines)


def _content_facts(item: ContentSummary | AddContentResult) -> str:
    return (
        f"Content ID: {item.content_id} | Type: {item.mime_type} | "
        f"Size: {_size(item.size)} | Lines: {item.line_count} | Chunks: {item.chunk_count}"
    )


def render_add_content(result: AddContentResult) -> str:
    """Text for `add_content` (new item, or the existing duplicate)."""
    if result.duplicate:
        head = (
            f'Not added: "{result.filename}" has exactly the text of content '
            f"{result.content_id} already in store {result.store_id}; use that id."
        )
    else:
        head = f'Added "{result.filename}" to store {result.store_id}'
    # The next step names its arguments only: both ids are stated just above, and
    # repeating them would cost more tokens than the whole result as JSON.
    return "\n".join(
        [
            head,
            f"  {_content_facts(result)}",
            f"  Uploaded: {_when(result.uploaded_at)} | SHA-256: {result.content_hash}",
            f"  Preview: {result.preview}",
            f"Next: read_content(from_line=1, to_line={min(result.line_count, 200)})"
            " or keyword_similarity_search(query=...) with these IDs.",
        ]
    )


def render_list_content(result: ListContentResult, steps: NextSteps = TOOL_CALLS) -> str:
    """Text for `list_content`: numbered files with their facts and a preview."""
    if result.total == 0:
        return f"No files in store {result.store_id}. {steps.add_files(result.store_id)}"
    if not result.contents:
        return (
            f"No files at offset {result.offset}: store {result.store_id} has "
            f"{_count(result.total, 'file')}."
        )
    first = result.offset + 1
    last = result.offset + len(result.contents)
    lines = [f"Files {first}-{last} of {result.total} in store {result.store_id}:", ""]
    for number, item in enumerate(result.contents, first):
        preview = item.preview if len(item.preview) <= 150 else item.preview[:150] + "…"
        lines.extend(
            [
                f"{number}. {item.filename} ({_size(item.size)}, "
                f"{_count(item.line_count, 'line')})",
                f"   Type: {item.mime_type} | ID: {item.content_id} | Chunks: {item.chunk_count}",
                f"   Uploaded: {_when(item.uploaded_at)} | SHA-256: {item.content_hash}",
                f"   Preview: {preview}",
                "",
            ]
        )
    if result.has_more:
        lines.append(steps.list_more(result.store_id, last))
    return "\n".join(lines).rstrip("\n")


def render_read_content(result: ReadContentResult, steps: NextSteps = TOOL_CALLS) -> str:
    """Text for `read_content`: the lines, numbered."""
    start, end = result.line_range
    width = len(str(end))
    head = (
        f"{result.filename} — lines {start}-{end} of {result.total_lines} "
        f"(content {result.content_id}, store {result.store_id})"
    )
    body = [
        f"{number:>{width}} | {line}"
        for number, line in enumerate(result.content.split("\n"), start)
    ]
    tail = []
    if end < result.total_lines:
        tail.append(steps.read_more(result.store_id, result.content_id, end + 1))
    return "\n".join([head, *body, *tail])


def render_search(result: SearchResult, steps: NextSteps = TOOL_CALLS) -> str:
    """Text for `keyword_similarity_search`: located, scored, highlighted contexts."""
    if not result.results:
        floor = f" at threshold {result.threshold}" if result.threshold is not None else ""
        return (
            f'No matches for "{result.query}" in store {result.store_id}{floor}. '
            "Try fewer or different terms."
        )
    count = len(result.results)
    terms = len(query_terms(result.query))
    lines = [
        f'{_count(count, "result")} for "{result.query}" in store '
        f"{result.store_id} (relevance 0..1: the share of the query's "
        f"{_count(terms, 'term')} a hit holds, weighted by BM25):",
        "",
    ]
    for number, hit in enumerate(result.results, 1):
        start, end = hit.line_range
        lines.extend(
            [
                f"{number}. {hit.filename}:{start}-{end} (relevance: {hit.score:.2f}, "
                f"BM25 {hit.raw_score:.2f})",
                f"   Match Type: {hit.relevance_type}"
                + (f" — {', '.join(hit.matched_terms)}" if hit.matched_terms else ""),
                f"   Context: {highlight(hit.context, hit.matched_terms)}",
                f"   Content ID: {hit.content_id} | Chunk ID: {hit.chunk_id}",
                "",
            ]
        )
    top = result.results[0]
    lines.append(steps.read_hit(result.store_id, top.content_id, top.line_range))
    return "\n".join(lines)


def render_delete_content(result: DeleteContentResult) -> str:
    """Text for `delete_content`."""
    return (
        f'Deleted "{result.filename}" (content {result.content_id}, '
        f"{_count(result.deleted_chunks, 'chunk')}) from store {result.store_id}."
    )


def render_delete_store(result: DeleteStoreResult) -> str:
    """Text for `delete_store`."""
    return (
        f'Deleted store "{result.name}" ({result.store_id}) and its '
        f"{_count(result.deleted_contents, 'content item')}."
    )


def render_list_stores(result: ListStoresResult, steps: NextSteps = TOOL_CALLS) -> str:
    """Text for `list_stores`."""
    if not result.stores:
        return f"No stores yet. {steps.create_store()}"
    lines = [f"{_count(result.total, 'store')}:", ""]
    for number, store in enumerate(result.stores, 1):
        lines.append(f"{number}. {_store_line(store)}")
    return "\n".join(lines)


Rendered = (
    ListContentResult
    | ListStoresResult
    | ReadContentResult
    | SearchResult
    | DeleteContentResult
    | DeleteStoreResult
)
"""The results whose text `render_text` writes with another reader's `NextSteps`."""


def render_text(result: Rendered, steps: NextSteps = TOOL_CALLS) -> str:
    """The text of a content-store result, its next steps in ``steps``' words.

    Raises:
        TypeError: ``result`` is not one of `Rendered`.
    """
    if isinstance(result, ListContentResult):
        return render_list_content(result, steps)
    if isinstance(result, ListStoresResult):
        return render_list_stores(result, steps)
    if isinstance(result, ReadContentResult):
        return render_read_content(result, steps)
    if isinstance(result, SearchResult):
        return render_search(result, steps)
    if isinstance(result, DeleteContentResult):
        return render_delete_content(result)
    if isinstance(result, DeleteStoreResult):
        return render_delete_store(result)
    raise TypeError(f"no content-store text for {type(result).__name__}")
