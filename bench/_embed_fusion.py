"""What fusing the tool search's BM25 with a small word-embedding model would give.

Measured, not shipped: ``wordllama`` (0.4.0.post1, a 16 MB model inside its wheel,
loaded with ``disable_download=True`` so nothing is fetched) embeds each tool's name,
title and description and each query; the two rankings are fused by reciprocal rank
(each tool's ``1 / (K + rank)`` summed). ``K`` was chosen on the tuning half of the
queries alone (10 and 30 tied there; the smaller was taken). Left out (None) where
wordllama is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Final

from nativemcp.proxy.tool_search import IndexedTool, ToolIndex
from nativemcp.proxy.tool_search._documents import split_name

RRF_K: Final = 10
"""The reciprocal-rank constant (chosen on the tuning half)."""
BM25_DEPTH: Final = 50
"""How many BM25 matches take part in the fusion."""

Ranker = Callable[[str, int], list[str]]


def _text(item: IndexedTool) -> str:
    tool = item.tool
    return f"{split_name(tool.name).replace('_', ' ')}: {tool.title or ''} {tool.description or ''}"


def rankers(tools: Sequence[IndexedTool]) -> tuple[Ranker, Ranker] | None:
    """The embedding's ranking alone and fused with BM25 (None: wordllama is absent)."""
    try:
        import numpy as np
        import wordllama
    except ImportError:
        return None
    model: Any = wordllama.WordLlama.load(
        cache_dir=os.path.dirname(wordllama.__file__), disable_download=True
    )
    vectors = model.embed([_text(item) for item in tools], norm=True)
    index = ToolIndex(tools)

    def embedded(query: str, k: int) -> list[str]:
        scores = vectors @ model.embed([query], norm=True)[0]
        return [tools[int(i)].full_name for i in np.argsort(-scores, kind="stable")[:k]]

    def fused(query: str, k: int) -> list[str]:
        total: dict[str, float] = {}
        bm25 = [match.name for match in index.search(query, BM25_DEPTH)]
        for ranking in (bm25, embedded(query, len(tools))):
            for rank, name in enumerate(ranking):
                total[name] = total.get(name, 0.0) + 1 / (RRF_K + rank + 1)
        return sorted(total, key=lambda name: -total[name])[:k]

    return embedded, fused
