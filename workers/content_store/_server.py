"""The content-store server: its tools, wired to the state (`_state.ContentState`)."""

from __future__ import annotations

from typing import Annotated, Any, Final

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec

from nativemcp.protocol import ToolAnnotations, ToolError
from nativemcp.workers import Context, FeatureError, Resource, Server, ServerConfig

from ._chunking import split_lines
from ._models import (
    AddContentResult,
    DeleteContentResult,
    DeleteStoreResult,
    ListContentResult,
    ListStoresResult,
    ReadContentResult,
    SearchResult,
    StoreInfo,
)
from ._render import (
    render_add_content,
    render_create_store,
    render_delete_content,
    render_delete_store,
    render_list_content,
    render_list_stores,
    render_read_content,
    render_search,
)
from ._state import ContentState, parse_options, store_missing
from ._storage import ContentStorage

__all__ = ["MAX_OFFSET", "SERVER_NAME", "create_server"]

SERVER_NAME: Final = "content-store"
"""The built-in server's name."""

MAX_OFFSET: Final = 2**62
"""Largest ``offset`` a page may start at (far past any real store; SQLite's own limit
is 2**63 - 1, and an offset past it would be SQLite's error, not ours)."""

RESOURCE_TEMPLATE: Final = "nativemcp://content-store/{store}/{content}"
"""Each stored item is a resource at this URI (its text, as stored)."""
MAX_LISTED: Final = 1000
"""At most this many items are listed as resources (all stay readable by URI)."""

_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
_DESTRUCTIVE: Final = ToolAnnotations(destructive_hint=True, idempotent_hint=True)


class _Tools:
    """The content store's tools, resources and service context, on its state.

    Each public method is a tool, a resource or a hook (its docstring is the
    description); `create_server` lists them in the order ``tools/list`` shows them.
    """

    def __init__(self, server: Server, state: ContentState) -> None:
        self.server = server
        self.state = state

    def create_store(
        self,
        name: str | None = None,
        description: str | None = None,
        session_id: str | None = None,
    ) -> StoreInfo:
        """Create an empty content store (a named collection of files searched together).

        A new knowledge base or library, to put documents in and search them later.

        session_id groups the store with a chat session (defaults to the current one).
        """
        with self.state.writing() as db:
            return db.create_store(
                name or "Unnamed Store", description, session_id or self.server.session_id
            )

    async def add_content(
        self,
        ctx: Context,
        store_id: str,
        content: str | None = None,
        path: str | None = None,
        filename: str | None = None,
        mime_type: str | None = None,
    ) -> AddContentResult:
        """Add a file (path) or text (content) to a store: parsed, chunked by lines, indexed.

        Upload, import or save a document, notes or a PDF so it can be searched.

        Supports text, Markdown, code, JSON, CSV, HTML, and PDF/DOCX/XLSX files (by
        default at most 50 MB per file and 10 MB of text). path is read only inside the
        folders the server allows (none by default: then pass the text as content). The
        same text added twice returns the existing content id (duplicate=true).
        """
        await anyio.to_thread.run_sync(self.state.store, store_id)
        if (content is None) == (path is None):
            raise ToolError(
                "Pass exactly one of content (text) or path (a file to read)",
                structured_content={"code": "INVALID_ARGUMENTS"},
            )
        data: bytes | None = None
        if path is not None:
            await ctx.report_progress(0, None, f"reading {path}")
            data, file_name = await anyio.to_thread.run_sync(self.state.read_path, path)
            filename = filename or file_name
        else:
            assert content is not None
            self.state.check_text_size(content, filename or "The content")
        name = filename or "untitled.txt"
        item = await anyio.to_thread.run_sync(self.state.prepare, content, data, name, mime_type)

        def find_duplicate() -> Any:
            with self.state.reading() as db:
                return db.find_duplicate(store_id, item.sha256)

        existing = await anyio.to_thread.run_sync(find_duplicate)
        if existing is None:
            total = len(item.chunks)
            await ctx.report_progress(0, total, f"indexing {name}: {total} chunks")

            def progress(done: int, total: int) -> None:
                anyio.from_thread.run(ctx.report_progress, done, total, f"indexed {done} chunks")

            def add() -> Any:
                with self.state.writing() as db:
                    return db.add_content(store_id, item, progress)

            summary, duplicate = await anyio.to_thread.run_sync(add)
        else:
            summary, duplicate = existing, True
        return AddContentResult(**msgspec.structs.asdict(summary), duplicate=duplicate)

    def list_content(
        self,
        store_id: str,
        offset: Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50,
    ) -> ListContentResult:
        """List a store's files (oldest first) with size, lines, type, id, date and preview.

        Which documents and uploads a collection holds.

        Pages with offset/limit (limit at most 100); has_more tells if more follow.
        """
        self.state.store(store_id)
        with self.state.reading() as db:
            total = db.count_contents(store_id)
            contents = db.list_contents(store_id, offset, limit)
        return ListContentResult(
            store_id=store_id,
            contents=contents,
            total=total,
            offset=offset,
            limit=limit,
            has_more=offset + len(contents) < total,
        )

    def read_content(
        self,
        store_id: str,
        content_id: str,
        from_line: Annotated[int, msgspec.Meta(ge=1)] = 1,
        to_line: Annotated[int, msgspec.Meta(ge=1)] | None = None,
    ) -> ReadContentResult:
        """Read lines from_line..to_line (1-based, inclusive; to_line defaults to the end).

        Open or view a stored document, whole or a part of it, by its content id.
        """
        self.state.store(store_id)
        with self.state.reading() as db:
            summary = db.get_content(store_id, content_id)
        if summary is None:
            raise ToolError(
                f"Content not found: {content_id} in store {store_id}. "
                f'Use list_content(store_id="{store_id}") to see its files.',
                structured_content={
                    "code": "CONTENT_NOT_FOUND",
                    "storeId": store_id,
                    "contentId": content_id,
                },
            )
        total = summary.line_count
        last = total if to_line is None else min(to_line, total)
        if from_line > total or last < from_line:
            raise ToolError(
                f"Invalid line range {from_line}-{to_line if to_line is not None else 'end'} "
                f"for content {content_id} ({summary.filename}), which has {total} lines",
                structured_content={
                    "code": "INVALID_LINE_RANGE",
                    "contentId": content_id,
                    "fromLine": from_line,
                    "toLine": to_line,
                    "totalLines": total,
                },
            )
        with self.state.reading() as db:
            text = db.content_text(content_id)
        lines = split_lines(text)
        return ReadContentResult(
            store_id=store_id,
            content_id=content_id,
            filename=summary.filename,
            content="\n".join(lines[from_line - 1 : last]),
            line_range=(from_line, last),
            total_lines=total,
        )

    def keyword_similarity_search(
        self,
        store_id: str,
        query: str,
        top_n: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5,
        threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None,
    ) -> SearchResult:
        """Full-text search (BM25) over a store's chunks; plain terms, any language.

        Look up where uploaded documents mention a word or topic: the passages that fit.

        Each result has the file, exact line range, relevance 0..1 (the share of the
        query's terms it holds, weighted by BM25) and raw BM25 score, match type and a
        context snippet. threshold drops hits with a lower relevance.
        """
        self.state.check_query(query)
        with self.state.reading() as db:
            hits = db.search(store_id, query, top_n, threshold)
            if hits is None:
                raise store_missing(store_id, db.list_stores())
        return SearchResult(store_id=store_id, query=query, results=hits, threshold=threshold)

    def delete_content(self, store_id: str, content_id: str) -> DeleteContentResult:
        """Remove a file and its search index entries from a store.

        Delete one document or upload; the store and its other files stay.
        """
        self.state.store(store_id)
        with self.state.reading() as db:
            summary = db.get_content(store_id, content_id)
        if summary is None:
            raise ToolError(
                f"Content not found: {content_id} in store {store_id}",
                structured_content={
                    "code": "CONTENT_NOT_FOUND",
                    "storeId": store_id,
                    "contentId": content_id,
                },
            )
        with self.state.writing() as db:
            deleted = db.delete_content(store_id, content_id)
        return DeleteContentResult(
            store_id=store_id,
            content_id=content_id,
            filename=summary.filename,
            deleted_chunks=deleted,
        )

    def list_stores(self) -> ListStoresResult:
        """List every store with its id, name, item count and creation date.

        Which collections or knowledge bases exist, and how many documents each has.
        """
        with self.state.reading() as db:
            stores = db.list_stores()
        return ListStoresResult(stores=stores, total=len(stores))

    def delete_store(self, store_id: str) -> DeleteStoreResult:
        """Remove a store and everything in it.

        Drop a whole collection at once, every document inside included.
        """
        store = self.state.store(store_id)
        with self.state.writing() as db:
            deleted = db.delete_store(store_id)
        return DeleteStoreResult(store_id=store_id, name=store.name, deleted_contents=deleted)

    def content_resource(self, store: str, content: str) -> str:
        """A stored item's full text (store id, content id)."""
        summary = self.state.db.get_content(store, content)
        if summary is None:
            raise FeatureError(
                f"no content {content!r} in store {store!r}; list_content shows what is stored"
            )
        return self.state.db.content_text(content)

    def stored_items(self) -> list[Resource]:
        """Every stored item as a resource (the newest stores' first MAX_LISTED)."""
        found: list[Resource] = []
        for store in self.state.db.list_stores():
            for item in self.state.db.list_contents(store.store_id, 0, MAX_LISTED - len(found)):
                found.append(
                    Resource(
                        uri=RESOURCE_TEMPLATE.format(store=item.store_id, content=item.content_id),
                        name=item.filename,
                        description=f"{item.line_count} lines in store {store.name}",
                        mime_type="text/plain",
                    )
                )
            if len(found) >= MAX_LISTED:
                break
        return found

    def attached_files(self) -> str:
        """The current session's stores and files, for the system prompt."""
        with self.state.reading() as db:
            return _attached_files(db, self.server.session_id)


def create_server(config: ServerConfig) -> Server:
    """The content store: stores of text contents with BM25 full-text search.

    Raises:
        ValueError: ``config.options`` holds an unknown or ill-typed option.
    """
    server = Server(
        SERVER_NAME,
        description=(
            "Stores files and text, split into line chunks, with BM25 full-text search "
            "(Korean, Japanese, Chinese and accented text included)."
        ),
    )
    state = ContentState(server, parse_options(config.options), config.database_url)
    server.on_shutdown(state.close)

    # The tools, in the order tools/list shows them.
    tools = _Tools(server, state)
    server.tool(render=render_create_store)(tools.create_store)
    server.tool(render=render_add_content)(tools.add_content)
    server.tool(render=render_list_content, annotations=_READ_ONLY)(tools.list_content)
    server.tool(render=render_read_content, annotations=_READ_ONLY)(tools.read_content)
    server.tool(render=render_search, annotations=_READ_ONLY)(tools.keyword_similarity_search)
    server.tool(render=render_delete_content, annotations=_DESTRUCTIVE)(tools.delete_content)
    server.tool(render=render_list_stores, annotations=_READ_ONLY)(tools.list_stores)
    server.tool(render=render_delete_store, annotations=_DESTRUCTIVE)(tools.delete_store)

    server.resource(RESOURCE_TEMPLATE, name="content", mime_type="text/plain")(
        tools.content_resource
    )
    server.resource_lister(tools.stored_items)
    server.service_context(tools.attached_files)
    return server


def _attached_files(db: ContentStorage, session_id: str | None) -> str:
    """The service-context text: the session's stores and their files."""
    stores = db.list_stores(session_id)
    if not stores:
        return ""
    lines = ["Attached files (content store):"]
    for store in stores:
        lines.append(f'- store "{store.name}" (store_id: {store.store_id})')
        for item in db.list_contents(store.store_id, 0, 100):
            lines.append(
                f"  - {item.filename} (content_id: {item.content_id}, "
                f"{item.line_count} lines, {item.mime_type})"
            )
        if store.content_count > 100:
            lines.append(f"  - … {store.content_count - 100} more: use list_content")
    lines.append(
        "Use read_content(store_id, content_id, from_line, to_line) to read a file and "
        "keyword_similarity_search(store_id, query) to search."
    )
    return "\n".join(lines)
