"""The agent loop's tool index: the catalog's tools the model may see, ranked for a query.

`LoopIndex` is a part `AgentLoop` holds. It keeps one `ToolIndex`, rebuilt when a
source's tools changed or, with ``search_learn``, when the words users found tools by
changed (`QueryLearning`, kept in the data folder or PostgreSQL). A rebuild that loads
the embedding model or ranks many tools runs in a worker thread (`fresh`), so the event
loop serves other requests meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence

import anyio

from ._catalog import Catalog
from ._config import PoolConfig
from .tool_search import (
    IndexedTool,
    QueryLearning,
    ToolIndex,
    embedding_loaded,
    load_embedding,
    query_learning,
)

__all__ = ["LoopIndex"]


class LoopIndex:
    """The tool index of ``catalog``'s tools that ``indexed`` gives (those the model
    may see), ranked as ``config`` says (``search_embed``, ``search_learn``)."""

    def __init__(
        self, catalog: Catalog, config: PoolConfig, indexed: Callable[[], list[IndexedTool]]
    ) -> None:
        self._catalog = catalog
        self._embed = config.search_embed
        self._indexed = indexed
        self._kept: tuple[tuple[int, int], ToolIndex] | None = None
        self._learning: QueryLearning | None = (
            query_learning(config.data_dir, config.database_url) if config.search_learn else None
        )

    def close(self) -> None:
        """Close the learned queries' database connection, if any."""
        if self._learning is not None:
            self._learning.close()

    def _version(self) -> tuple[int, int]:
        """The catalog's version and the learned words' (an index of older is stale)."""
        learned = self._learning.version if self._learning is not None else 0
        return self._catalog.version, learned

    def _learned(self) -> Mapping[str, Sequence[str]] | None:
        return self._learning.words if self._learning is not None else None

    def now(self) -> ToolIndex:
        """The index as the catalog is now (built here, on the calling thread)."""
        version = self._version()
        if self._kept is None or self._kept[0] != version:
            index = ToolIndex(self._indexed(), embed=self._embed, learned=self._learned())
            self._kept = (version, index)
        return self._kept[1]

    async def fresh(self) -> ToolIndex:
        """`now`, rebuilt (where the catalog or the learned words changed) in a worker
        thread."""
        if self._learning is not None:
            await self._learning.refresh()  # what other replicas learned, now and then
        version = self._version()
        if self._kept is not None and self._kept[0] == version:
            return self._kept[1]
        if self._embed and not embedding_loaded():
            # The first load reads the model's 16 MB (about 0.7 s here).
            await anyio.to_thread.run_sync(load_embedding)
        tools = self._indexed()  # read here: the catalog belongs to the event loop
        build = functools.partial(ToolIndex, tools, embed=self._embed, learned=self._learned())
        index = await anyio.to_thread.run_sync(build)
        if self._version() == version:  # else a newer one is built on the next read
            self._kept = (version, index)
        return index

    def searched(self, session: Hashable, query: str) -> None:
        """``session`` searched for ``query`` (kept for its next call, when learning)."""
        if self._learning is not None:
            self._learning.searched(session, query)

    async def learn_call(self, session: Hashable, full_name: str) -> bool:
        """``session`` calls ``full_name``: its last query becomes words of that tool,
        when learning; False where nothing was kept."""
        if self._learning is None:
            return False
        return await self._learning.learn_call(session, full_name)
