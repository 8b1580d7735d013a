"""The content store's typed results.

Python attributes are snake_case; the JSON structured content uses MCP's
camelCase keys (``contentId``, ``lineCount``, ``hasMore``...), as JSON readers expect.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

__all__ = [
    "AddContentResult",
    "ContentSummary",
    "DeleteContentResult",
    "DeleteStoreResult",
    "ListContentResult",
    "ListStoresResult",
    "ReadContentResult",
    "RelevanceType",
    "SearchHit",
    "SearchResult",
    "StoreInfo",
]

RelevanceType = Literal["exact_phrase", "all_terms", "some_terms"]
"""How a chunk matched: the whole query as written, every term, or only some terms."""


class StoreInfo(msgspec.Struct, rename="camel", kw_only=True):
    """A content store: a named collection of contents searched together."""

    store_id: str
    name: str
    description: str | None = None
    session_id: str | None = None
    created_at: datetime
    updated_at: datetime
    content_count: int = 0


class ContentSummary(msgspec.Struct, rename="camel", kw_only=True):
    """One content item of a store, without its text."""

    store_id: str
    content_id: str
    filename: str
    mime_type: str
    size: int
    """Bytes of the stored text (UTF-8)."""
    line_count: int
    chunk_count: int
    preview: str
    uploaded_at: datetime
    content_hash: str
    """SHA-256 of the stored text, hex."""


class AddContentResult(ContentSummary, kw_only=True):
    """What `add_content` stored, or the existing item when the text was already there."""

    duplicate: bool = False
    """True: the same text was already in the store; nothing was added."""


class ListContentResult(msgspec.Struct, rename="camel", kw_only=True):
    """One page of a store's contents, oldest first."""

    store_id: str
    contents: list[ContentSummary]
    total: int
    offset: int
    limit: int
    has_more: bool


class ReadContentResult(msgspec.Struct, rename="camel", kw_only=True):
    """Lines ``line_range[0]``..``line_range[1]`` (1-based, inclusive) of a content item."""

    store_id: str
    content_id: str
    filename: str
    content: str
    line_range: tuple[int, int]
    total_lines: int


class SearchHit(msgspec.Struct, rename="camel", kw_only=True):
    """One matching chunk."""

    content_id: str
    chunk_id: str
    filename: str
    line_range: tuple[int, int]
    score: float
    """Relevance in 0..1: the share of the query's terms the chunk holds, weighted by
    its BM25 against the search's best (``_relevance``); 1.0 only for a chunk with every
    term that is also the best by BM25."""
    raw_score: float
    """The BM25 score (higher is better; unbounded)."""
    relevance_type: RelevanceType
    matched_terms: list[str]
    context: str
    """A snippet of the chunk around the first matched term."""


class SearchResult(msgspec.Struct, rename="camel", kw_only=True):
    """The best chunks for a query, best first."""

    store_id: str
    query: str
    results: list[SearchHit]
    threshold: float | None = None


class DeleteContentResult(msgspec.Struct, rename="camel", kw_only=True):
    """A removed content item."""

    store_id: str
    content_id: str
    filename: str
    deleted_chunks: int


class DeleteStoreResult(msgspec.Struct, rename="camel", kw_only=True):
    """A removed store, with everything it held."""

    store_id: str
    name: str
    deleted_contents: int


class ListStoresResult(msgspec.Struct, rename="camel", kw_only=True):
    """Every store, oldest first."""

    stores: list[StoreInfo]
    total: int
