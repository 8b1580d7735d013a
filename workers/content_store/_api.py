"""`ContentStoreAPI`: the content store's tools as a typed interface for `WorkerPool.server`.

```python
store = pool.server(ContentStoreAPI)
info = await store.create_store(name="notes")  # -> StoreInfo, for the type checker too
```

Each method mirrors one tool of `create_server` (same argument names, types and
defaults; the ``Context`` argument left out) and returns the tool's value type.
``tests/workers/test_builtin_interfaces.py`` checks the two stay the same.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

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

__all__ = ["ContentStoreAPI"]


class ContentStoreAPI(Protocol):
    """The ``content-store`` server as a typed proxy: ``pool.server(ContentStoreAPI)``."""

    server_name: ClassVar[str] = "content-store"

    async def create_store(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        session_id: str | None = None,
    ) -> StoreInfo:
        """Create an empty content store."""

    async def add_content(
        self,
        *,
        store_id: str,
        content: str | None = None,
        path: str | None = None,
        filename: str | None = None,
        mime_type: str | None = None,
    ) -> AddContentResult:
        """Add a file (``path``) or text (``content``) to a store."""

    async def list_content(
        self, *, store_id: str, offset: int = 0, limit: int = 50
    ) -> ListContentResult:
        """List a store's files, oldest first, a page at a time."""

    async def read_content(
        self, *, store_id: str, content_id: str, from_line: int = 1, to_line: int | None = None
    ) -> ReadContentResult:
        """Read lines ``from_line..to_line`` (1-based, inclusive) of a stored file."""

    async def keyword_similarity_search(
        self, *, store_id: str, query: str, top_n: int = 5, threshold: float | None = None
    ) -> SearchResult:
        """Full-text (BM25) search over a store's chunks."""

    async def delete_content(self, *, store_id: str, content_id: str) -> DeleteContentResult:
        """Remove a file and its search index entries from a store."""

    async def list_stores(self) -> ListStoresResult:
        """List every store."""

    async def delete_store(self, *, store_id: str) -> DeleteStoreResult:
        """Remove a store and everything in it."""
