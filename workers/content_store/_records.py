"""What the two storage backends share: the records they write and how rows read back.

`ContentDB` (SQLite, ``_db``) and `PostgresContentDB` (PostgreSQL, ``_pg``) store the
same things under different SQL; neither imports the other. What they must agree on
lives here: the item to insert (`NewContent`) and the values derived from it, ids,
timestamps, previews, the index version, and how a store, a content summary or a found
chunk is built from a row. Both backends select those rows in the column order the
readers below name.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

from ._chunking import Chunk
from ._models import ContentSummary, StoreInfo
from ._relevance import Candidate

__all__ = [
    "INDEX_VERSION",
    "INSERT_BATCH",
    "NewContent",
    "content_preview",
    "content_summary",
    "content_values",
    "found_candidates",
    "new_id",
    "store_info",
    "utc_now",
]

INDEX_VERSION: Final = 2
"""The version of the text-to-tokens rewrite (`index_text`, `chunk_tokens`) an index
was built with; bumped when it changes. Both backends record it and re-index every
chunk from its stored text when they open a database indexed by another version:
SQLite's FTS5 tables and PostgreSQL's postings hold tokens of the same rewrite, so they
go stale together. 2: text is NFKC-normalized and case-folded before indexing
(``ß`` → ``ss``)."""
INSERT_BATCH: Final = 500
"""Chunks inserted between two progress reports."""

_PREVIEW_CHARS: Final = 200
_SPACES: Final = re.compile(r"\s+")


class NewContent(NamedTuple):
    """A content item ready to insert: its text already extracted and chunked."""

    filename: str
    mime_type: str
    text: str
    sha256: str
    line_count: int
    chunks: Sequence[Chunk]


def new_id(prefix: str) -> str:
    """A short random id such as ``ct_3f9a1b2c4d5e``."""
    return f"{prefix}_{secrets.token_hex(6)}"


def utc_now() -> datetime:
    """The current UTC time to the millisecond: what both backends store."""
    current = datetime.now(UTC)
    return current.replace(microsecond=current.microsecond // 1000 * 1000)


def content_preview(text: str) -> str:
    """The start of ``text`` on one line, white space folded, at most 200 characters."""
    flat = _SPACES.sub(" ", text[: _PREVIEW_CHARS * 4]).strip()
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def content_values(
    content_id: str, store: str | int, item: NewContent, uploaded_at: str | datetime
) -> tuple[object, ...]:
    """A new contents row: id, store (its id or row id), filename, mime_type, size,
    line_count, chunk_count, preview, uploaded_at, sha256, body: the order of both
    backends' ``INSERT``."""
    return (
        content_id,
        store,
        item.filename,
        item.mime_type,
        len(item.text.encode("utf-8")),
        item.line_count,
        len(item.chunks),
        content_preview(item.text),
        uploaded_at,
        item.sha256,
        item.text,
    )


def store_info(row: Sequence[Any], read_time: Callable[[Any], datetime]) -> StoreInfo:
    """A store from a row of id, name, description, session_id, created_at, updated_at
    and the content count; ``read_time`` turns the backend's timestamps into datetimes."""
    return StoreInfo(
        store_id=row[0],
        name=row[1],
        description=row[2],
        session_id=row[3],
        created_at=read_time(row[4]),
        updated_at=read_time(row[5]),
        content_count=row[6],
    )


def content_summary(row: Sequence[Any], read_time: Callable[[Any], datetime]) -> ContentSummary:
    """A content summary from a row of store id, id, filename, mime_type, size,
    line_count, chunk_count, preview, uploaded_at and sha256; ``read_time`` turns the
    backend's timestamp into a datetime."""
    return ContentSummary(
        store_id=row[0],
        content_id=row[1],
        filename=row[2],
        mime_type=row[3],
        size=row[4],
        line_count=row[5],
        chunk_count=row[6],
        preview=row[7],
        uploaded_at=read_time(row[8]),
        content_hash=row[9],
    )


def found_candidates(
    ranked: Sequence[tuple[int, float]], rows: Iterable[Sequence[Any]]
) -> list[Candidate]:
    """The BM25-ranked ``(chunk id, score)`` pairs as candidates, in rank order, from
    rows of chunk id, content id, seq, start_line, end_line, body and filename; a
    chunk with no row (deleted since it was ranked) is left out."""
    chunks: dict[int, tuple[str, int, int, int, str, str]] = {
        row[0]: (row[1], row[2], row[3], row[4], row[5], row[6]) for row in rows
    }
    return [
        Candidate(*chunks[chunk_id], bm25=score) for chunk_id, score in ranked if chunk_id in chunks
    ]
