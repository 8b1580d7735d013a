"""The content-store server: its tools, wired to the database."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Final

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec

from nativemcp.protocol import ToolAnnotations, ToolError
from nativemcp.workers import Context, FeatureError, Resource, Server, ServerConfig
from nativemcp.workers._safe_open import UnsafeFile, open_regular

from ._chunking import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_LINES,
    DEFAULT_OVERLAP_LINES,
    chunk_lines,
    split_lines,
)
from ._extract import (
    ExtractError,
    UnsupportedType,
    extract_text,
    guess_mime_type,
    text_to_text,
)
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
from ._records import NewContent
from ._render import (
    format_size,
    render_add_content,
    render_create_store,
    render_delete_content,
    render_delete_store,
    render_list_content,
    render_list_stores,
    render_read_content,
    render_search,
)
from ._storage import ContentStorage, open_storage
from ._tokenize import query_terms

__all__ = ["SERVER_NAME", "ContentStoreOptions", "create_server"]

SERVER_NAME: Final = "content-store"
"""The built-in server's name."""
MIB: Final = 1024 * 1024

_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
_DESTRUCTIVE: Final = ToolAnnotations(destructive_hint=True, idempotent_hint=True)


class ContentStoreOptions(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The content store's ``ServerConfig.options`` (all optional)."""

    allowed_paths: tuple[str, ...] = ()
    """Folders (or files) `add_content` may read ``path`` from, symlinks resolved; empty
    (the default): reading by path is disabled, only ``content`` is accepted."""
    max_file_bytes: int = 50 * MIB
    """Largest file `add_content` reads from ``path``."""
    max_text_bytes: int = 10 * MIB
    """Largest text (UTF-8 bytes) stored for one content item."""
    chunk_max_chars: int = DEFAULT_MAX_CHARS
    chunk_max_lines: int = DEFAULT_MAX_LINES
    chunk_overlap_lines: int = DEFAULT_OVERLAP_LINES
    allow_hardlinks: bool = False
    """True lets `add_content` read files with more than one hard link (another name
    of such a file may lie outside ``allowed_paths``; off by default)."""
    max_query_chars: int = 2_000
    """Longest search query, in characters: a search costs time and memory in its length."""
    max_query_terms: int = 64
    """Most distinct terms in one search query (each is one more index lookup)."""
    database_pool_size: int | None = None
    """With a PostgreSQL ``database_url``: the most connections one worker holds at once
    (None: the default, 4); searches run concurrently on them."""


MAX_OFFSET: Final = 2**62
"""Largest ``offset`` a page may start at (far past any real store; SQLite's own limit
is 2**63 - 1, and an offset past it would be SQLite's error, not ours)."""


def _options(raw: Mapping[str, Any]) -> ContentStoreOptions:
    values = dict(raw)
    paths = values.get("allowed_paths")
    if isinstance(paths, (list, tuple)):
        values["allowed_paths"] = [os.fspath(p) if isinstance(p, os.PathLike) else p for p in paths]
    try:
        options = msgspec.convert(values, ContentStoreOptions)
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid content-store options: {exc}") from exc
    if options.database_pool_size is not None and options.database_pool_size < 1:
        raise ValueError(
            "invalid content-store options: database_pool_size must be 1 or more, "
            f"not {options.database_pool_size}"
        )
    for root in options.allowed_paths:
        if not root or "\0" in root:
            raise ValueError(f"invalid content-store options: bad allowed_paths entry {root!r}")
    return options


def _inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or lies under it (both absolute, real)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


def _store_missing(store_id: str, known: list[StoreInfo]) -> ToolError:
    names = ", ".join(f"{s.store_id} ({s.name})" for s in known[:10]) or "none yet"
    return ToolError(
        f"Store not found: {store_id}. Known stores: {names}. Use list_stores() or create_store().",
        structured_content={"code": "STORE_NOT_FOUND", "storeId": store_id},
    )


class _ContentStore:
    """The server's state: options, the storage (opened on first use), the write lock."""

    def __init__(
        self, server: Server, options: ContentStoreOptions, database_url: str | None = None
    ) -> None:
        self.server = server
        self.options = options
        self.database_url = database_url
        self.allowed_roots = tuple(
            os.path.realpath(os.path.expanduser(root)) for root in options.allowed_paths
        )
        self._db: ContentStorage | None = None
        self._scratch: Path | None = None
        # The database is used from worker threads only, never from the event loop: a
        # write waiting for another process's lock (up to SQLite's busy timeout) or a
        # long search then holds up that call alone. Reads and writes go through
        # separate connections; each connection serves one thread at a time.
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._open_lock = threading.Lock()

    @contextmanager
    def writing(self) -> Iterator[ContentStorage]:
        """The database, for writes (one writer at a time)."""
        with self._write_lock:
            yield self.db

    @contextmanager
    def reading(self) -> Iterator[ContentStorage]:
        """The database, for reads (SQLite: one reader at a time on the read connection;
        PostgreSQL: concurrent, each on a pooled connection)."""
        if self.database_url:
            yield self.db
            return
        with self._read_lock:
            yield self.db

    @property
    def db(self) -> ContentStorage:
        with self._open_lock:
            return self._open()

    def _open(self) -> ContentStorage:
        if self._db is None:
            folder = self.server.data_dir
            if self.database_url:
                # Shared state: nothing is kept in the data folder.
                self._db = open_storage(
                    Path(), self.database_url, pool_size=self.options.database_pool_size
                )
                return self._db
            if folder is None:
                # No data folder configured: keep the data for this process only.
                self._scratch = Path(tempfile.mkdtemp(prefix="nativemcp-content-"))
                folder = self._scratch
            self._db = open_storage(folder, None)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def store(self, store_id: str) -> StoreInfo:
        with self.reading() as db:
            found = db.get_store(store_id)
            if found is None:
                raise _store_missing(store_id, db.list_stores())
        return found

    def check_query(self, query: str) -> None:
        """Refuse a query over the length or distinct-term limits (before any work)."""
        limit = self.options.max_query_chars
        if len(query) > limit:
            raise ToolError(
                f"Query too long: {len(query)} characters; at most {limit} are searched "
                "(content-store option max_query_chars). Search for fewer, more telling terms.",
                structured_content={"code": "QUERY_TOO_LONG", "length": len(query), "limit": limit},
            )
        terms = len(query_terms(query))
        limit = self.options.max_query_terms
        if terms > limit:
            raise ToolError(
                f"Query has too many terms: {terms} distinct terms; at most {limit} are "
                "searched (content-store option max_query_terms). Keep the telling ones.",
                structured_content={"code": "QUERY_TOO_MANY_TERMS", "terms": terms, "limit": limit},
            )

    def check_text_size(self, text: str, what: str) -> None:
        size = len(text.encode("utf-8"))
        if size > self.options.max_text_bytes:
            raise ToolError(
                f"{what} is too large: {format_size(size)} of text "
                f"(limit {format_size(self.options.max_text_bytes)})",
                structured_content={"code": "CONTENT_TOO_LARGE", "size": size},
            )

    def resolve_path(self, raw_path: str) -> str:
        """``raw_path`` resolved (symlinks followed), if inside `allowed_roots`."""
        if "\0" in raw_path:
            raise ToolError(
                f"Invalid path: {raw_path!r} contains a NUL byte",
                structured_content={"code": "INVALID_PATH", "path": raw_path},
            )
        if not self.allowed_roots:
            raise ToolError(
                f"Cannot read {raw_path}: reading files by path is disabled; configure "
                "allowed_paths (content-store option) to allow folders, or pass the text "
                "as content",
                structured_content={"code": "PATH_NOT_ALLOWED", "path": raw_path},
            )
        resolved = os.path.realpath(os.path.expanduser(raw_path))
        if not any(_inside(resolved, root) for root in self.allowed_roots):
            shown = f"{raw_path} (resolves to {resolved})" if resolved != raw_path else raw_path
            raise ToolError(
                f"Path not allowed: {shown} is outside the allowed_paths folders "
                f"({', '.join(self.allowed_roots)})",
                structured_content={"code": "PATH_NOT_ALLOWED", "path": raw_path},
            )
        return resolved

    def read_path(self, raw_path: str) -> tuple[bytes, str]:
        """The bytes of the file at ``raw_path`` and its name (runs in a thread)."""
        resolved = self.resolve_path(raw_path)
        try:
            info = os.stat(resolved)
        except FileNotFoundError:
            raise ToolError(
                f"File not found: {raw_path}",
                structured_content={"code": "FILE_NOT_FOUND", "path": raw_path},
            ) from None
        except OSError as exc:
            raise ToolError(f"Cannot access {raw_path}: {exc.strerror}") from exc
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise ToolError(
                f"Not a regular file: {raw_path} is {kind}",
                structured_content={"code": "NOT_A_FILE", "path": raw_path},
            )
        limit = self.options.max_file_bytes
        if info.st_size > limit:
            raise self._too_large(raw_path, info.st_size)
        try:
            fd, _ = open_regular(resolved, allow_hardlinks=self.options.allow_hardlinks)
        except UnsafeFile as exc:
            code = {"hardlink": "HARDLINK", "changed": "FILE_CHANGED"}.get(exc.rule, "NOT_A_FILE")
            raise ToolError(
                f"Cannot read {raw_path}: {exc.reason}",
                structured_content={"code": code, "path": raw_path},
            ) from None
        except OSError as exc:
            raise ToolError(f"Cannot read {raw_path}: {exc.strerror}") from exc
        with open(fd, "rb", closefd=True) as file:
            try:
                data = file.read(limit + 1)
            except OSError as exc:
                raise ToolError(f"Cannot read {raw_path}: {exc.strerror}") from exc
        if len(data) > limit:
            raise self._too_large(raw_path, len(data))
        return data, Path(raw_path).name or os.path.basename(resolved)

    def _too_large(self, raw_path: str, size: int) -> ToolError:
        return ToolError(
            f"File too large: {raw_path} is {format_size(size)} "
            f"(limit {format_size(self.options.max_file_bytes)})",
            structured_content={"code": "FILE_TOO_LARGE", "size": size},
        )

    def prepare(
        self,
        content: str | None,
        data: bytes | None,
        filename: str,
        mime_type: str | None,
    ) -> NewContent:
        """Extract, check and chunk a content item (runs in a thread)."""
        try:
            if data is not None:
                text, mime = extract_text(data, filename, mime_type)
            else:
                assert content is not None
                text, mime = text_to_text(
                    content, mime_type or guess_mime_type(filename) or "text/plain"
                )
        except ExtractError as exc:
            code = "UNSUPPORTED_TYPE" if isinstance(exc, UnsupportedType) else "UNREADABLE_CONTENT"
            raise ToolError(str(exc), structured_content={"code": code}) from exc
        self.check_text_size(text, filename)
        if not text.strip():
            raise ToolError(
                f"{filename} has no text to store (empty, or no extractable text)",
                structured_content={"code": "EMPTY_CONTENT"},
            )
        lines = split_lines(text)
        chunks = chunk_lines(
            lines,
            max_chars=self.options.chunk_max_chars,
            max_lines=self.options.chunk_max_lines,
            overlap_lines=self.options.chunk_overlap_lines,
        )
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return NewContent(filename, mime, text, digest, len(lines), chunks)


RESOURCE_TEMPLATE: Final = "nativemcp://content-store/{store}/{content}"
"""Each stored item is a resource at this URI (its text, as stored)."""
MAX_LISTED: Final = 1000
"""At most this many items are listed as resources (all stay readable by URI)."""


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
    state = _ContentStore(server, _options(config.options), config.database_url)
    server.on_shutdown(state.close)

    @server.tool(render=render_create_store)
    def create_store(
        name: str | None = None,
        description: str | None = None,
        session_id: str | None = None,
    ) -> StoreInfo:
        """Create an empty content store (a named collection of files searched together).

        session_id groups the store with a chat session (defaults to the current one).
        """
        with state.writing() as db:
            return db.create_store(
                name or "Unnamed Store", description, session_id or server.session_id
            )

    @server.tool(render=render_add_content)
    async def add_content(
        ctx: Context,
        store_id: str,
        content: str | None = None,
        path: str | None = None,
        filename: str | None = None,
        mime_type: str | None = None,
    ) -> AddContentResult:
        """Add a file (path) or text (content) to a store: parsed, chunked by lines, indexed.

        Supports text, Markdown, code, JSON, CSV, HTML, and PDF/DOCX/XLSX files (by
        default at most 50 MB per file and 10 MB of text). path is read only inside the
        folders the server allows (none by default: then pass the text as content). The
        same text added twice returns the existing content id (duplicate=true).
        """
        await anyio.to_thread.run_sync(state.store, store_id)
        if (content is None) == (path is None):
            raise ToolError(
                "Pass exactly one of content (text) or path (a file to read)",
                structured_content={"code": "INVALID_ARGUMENTS"},
            )
        data: bytes | None = None
        if path is not None:
            await ctx.report_progress(0, None, f"reading {path}")
            data, file_name = await anyio.to_thread.run_sync(state.read_path, path)
            filename = filename or file_name
        else:
            assert content is not None
            state.check_text_size(content, filename or "The content")
        name = filename or "untitled.txt"
        item = await anyio.to_thread.run_sync(state.prepare, content, data, name, mime_type)

        def find_duplicate() -> Any:
            with state.reading() as db:
                return db.find_duplicate(store_id, item.sha256)

        existing = await anyio.to_thread.run_sync(find_duplicate)
        if existing is None:
            total = len(item.chunks)
            await ctx.report_progress(0, total, f"indexing {name}: {total} chunks")

            def progress(done: int, total: int) -> None:
                anyio.from_thread.run(ctx.report_progress, done, total, f"indexed {done} chunks")

            def add() -> Any:
                with state.writing() as db:
                    return db.add_content(store_id, item, progress)

            summary, duplicate = await anyio.to_thread.run_sync(add)
        else:
            summary, duplicate = existing, True
        return AddContentResult(**msgspec.structs.asdict(summary), duplicate=duplicate)

    @server.tool(render=render_list_content, annotations=_READ_ONLY)
    def list_content(
        store_id: str,
        offset: Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50,
    ) -> ListContentResult:
        """List a store's files (oldest first) with size, lines, type, id, date and preview.

        Pages with offset/limit (limit at most 100); has_more tells if more follow.
        """
        state.store(store_id)
        with state.reading() as db:
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

    @server.tool(render=render_read_content, annotations=_READ_ONLY)
    def read_content(
        store_id: str,
        content_id: str,
        from_line: Annotated[int, msgspec.Meta(ge=1)] = 1,
        to_line: Annotated[int, msgspec.Meta(ge=1)] | None = None,
    ) -> ReadContentResult:
        """Read lines from_line..to_line (1-based, inclusive; to_line defaults to the end)."""
        state.store(store_id)
        with state.reading() as db:
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
        with state.reading() as db:
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

    @server.tool(render=render_search, annotations=_READ_ONLY)
    def keyword_similarity_search(
        store_id: str,
        query: str,
        top_n: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5,
        threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None,
    ) -> SearchResult:
        """Full-text search (BM25) over a store's chunks; plain terms, any language.

        Each result has the file, exact line range, relevance 0..1 (the share of the
        query's terms it holds, weighted by BM25) and raw BM25 score, match type and a
        context snippet. threshold drops hits with a lower relevance.
        """
        state.check_query(query)
        with state.reading() as db:
            hits = db.search(store_id, query, top_n, threshold)
            if hits is None:
                raise _store_missing(store_id, db.list_stores())
        return SearchResult(store_id=store_id, query=query, results=hits, threshold=threshold)

    @server.tool(render=render_delete_content, annotations=_DESTRUCTIVE)
    def delete_content(store_id: str, content_id: str) -> DeleteContentResult:
        """Remove a file and its search index entries from a store."""
        state.store(store_id)
        with state.reading() as db:
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
        with state.writing() as db:
            deleted = db.delete_content(store_id, content_id)
        return DeleteContentResult(
            store_id=store_id,
            content_id=content_id,
            filename=summary.filename,
            deleted_chunks=deleted,
        )

    @server.tool(render=render_list_stores, annotations=_READ_ONLY)
    def list_stores() -> ListStoresResult:
        """List every store with its id, name, item count and creation date."""
        with state.reading() as db:
            stores = db.list_stores()
        return ListStoresResult(stores=stores, total=len(stores))

    @server.tool(render=render_delete_store, annotations=_DESTRUCTIVE)
    def delete_store(store_id: str) -> DeleteStoreResult:
        """Remove a store and everything in it."""
        store = state.store(store_id)
        with state.writing() as db:
            deleted = db.delete_store(store_id)
        return DeleteStoreResult(store_id=store_id, name=store.name, deleted_contents=deleted)

    @server.resource(RESOURCE_TEMPLATE, name="content", mime_type="text/plain")
    def content_resource(store: str, content: str) -> str:
        """A stored item's full text (store id, content id)."""
        summary = state.db.get_content(store, content)
        if summary is None:
            raise FeatureError(
                f"no content {content!r} in store {store!r}; list_content shows what is stored"
            )
        return state.db.content_text(content)

    @server.resource_lister
    def stored_items() -> list[Resource]:
        """Every stored item as a resource (the newest stores' first MAX_LISTED)."""
        found: list[Resource] = []
        for store in state.db.list_stores():
            for item in state.db.list_contents(store.store_id, 0, MAX_LISTED - len(found)):
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

    @server.service_context
    def attached_files() -> str:
        """The current session's stores and files, for the system prompt."""
        with state.reading() as db:
            return _attached_files(db, server.session_id)

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
