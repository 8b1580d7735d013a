"""The content store's options and state: the storage (opened on first use), its locks,
and the checks a content item passes before it is stored."""

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
from typing import Any, Final

import msgspec

from nativemcp.protocol import ToolError
from nativemcp.workers import Server
from nativemcp.workers._safe_open import UnsafeFile, open_regular
from nativemcp.workers.telemetry import setup_span

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
from ._models import StoreInfo
from ._records import NewContent
from ._render import format_size
from ._storage import ContentStorage, open_storage
from ._tokenize import query_terms

__all__ = ["ContentState", "ContentStoreOptions", "parse_options", "store_missing"]

MIB: Final = 1024 * 1024


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


def parse_options(raw: Mapping[str, Any]) -> ContentStoreOptions:
    """The options in ``raw`` (a `ServerConfig.options`), checked.

    Raises:
        ValueError: an option is unknown, ill-typed or out of range.
    """
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


def store_missing(store_id: str, known: list[StoreInfo]) -> ToolError:
    """The error for an unknown ``store_id``, naming the first ten ``known`` stores."""
    names = ", ".join(f"{s.store_id} ({s.name})" for s in known[:10]) or "none yet"
    return ToolError(
        f"Store not found: {store_id}. Known stores: {names}. Use list_stores() or create_store().",
        structured_content={"code": "STORE_NOT_FOUND", "storeId": store_id},
    )


class ContentState:
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
            if self._db is not None:
                return self._db
            # The first call's trace shows the time (the schema made or checked).
            with setup_span("content-store open storage"):
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
                raise store_missing(store_id, db.list_stores())
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
