"""The one interface behind the content store's tools, and how a backend is chosen.

Two implementations: `ContentDB` (SQLite + FTS5, one file in the data folder: the
embedded default) and `PostgresContentDB` (a PostgreSQL database many workers on many
machines share). Both are synchronous: the server calls them from worker threads or
briefly on the event loop, as it did before there were two.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol

from ._models import ContentSummary, SearchHit, StoreInfo
from ._records import NewContent

__all__ = ["DB_FILENAME", "ContentStorage", "open_storage"]

DB_FILENAME: Final = "content.sqlite3"
"""The SQLite file inside the server's data folder."""


class ContentStorage(Protocol):
    """Stores, their contents (text, line chunks) and BM25 search over the chunks.

    Every change is one transaction: a process killed mid-way leaves it wholly applied
    or wholly absent. A PostgreSQL backend raises `DatabaseUnavailable` from any method
    while its database cannot be reached.
    """

    def close(self) -> None:
        """Release connections (idempotent)."""

    def create_store(self, name: str, description: str | None, session_id: str | None) -> StoreInfo:
        """Add an empty store."""

    def get_store(self, store_id: str) -> StoreInfo | None:
        """The store, or None."""

    def list_stores(self, session_id: str | None = None) -> list[StoreInfo]:
        """Every store (or a session's), oldest first."""

    def delete_store(self, store_id: str) -> int:
        """Remove a store and its contents; the number of contents removed."""

    def find_duplicate(self, store_id: str, sha256: str) -> ContentSummary | None:
        """The store's content with this text hash, or None."""

    def add_content(
        self,
        store_id: str,
        item: NewContent,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[ContentSummary, bool]:
        """Insert and index a content item; the summary and whether it was a duplicate
        (then nothing was written and the summary is the existing item's).

        Raises:
            LookupError: the store is gone.
        """

    def get_content(self, store_id: str, content_id: str) -> ContentSummary | None:
        """A content item's summary, or None."""

    def content_text(self, content_id: str) -> str:
        """The stored text of a content item ('' if it is gone)."""

    def count_contents(self, store_id: str) -> int:
        """How many contents the store holds."""

    def list_contents(self, store_id: str, offset: int, limit: int) -> list[ContentSummary]:
        """A page of the store's contents, oldest first."""

    def delete_content(self, store_id: str, content_id: str) -> int:
        """Remove a content item and its chunks; the number of chunks removed."""

    def search(
        self, store_id: str, query: str, top_n: int, threshold: float | None
    ) -> list[SearchHit] | None:
        """The best ``top_n`` chunks for a plain-terms query, best first (`rank_hits` over
        the BM25-ranked candidates), no zero-score hit; None when the store does not exist."""


def open_storage(
    folder: Path, database_url: str | None, *, pool_size: int | None = None
) -> ContentStorage:
    """The backend for a data folder: PostgreSQL when ``database_url`` is given (with at
    most ``pool_size`` connections, or the default), else the SQLite file `DB_FILENAME`
    in ``folder``.

    Raises:
        ValueError: ``database_url`` is not a PostgreSQL URL, or ``pool_size`` is below 1.
    """
    if database_url:
        from ._pg import PostgresContentDB

        if pool_size is None:
            return PostgresContentDB(database_url)
        return PostgresContentDB(database_url, pool_size=pool_size)
    from ._db import ContentDB

    return ContentDB(folder / DB_FILENAME)
