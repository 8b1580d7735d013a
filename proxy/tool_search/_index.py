"""BM25 over a catalog's tools: the content store's tokens and FTS5's formula, in memory.

Each tool is one document (`tool_text`). Its tokens are the ones SQLite's FTS5 index
would hold for that text (`chunk_tokens`: any language, CJK runs as bigrams), and a
query's are its plain terms as the content store reads them (`phrases`), each token a
term of its own: a search for ``파일을 읽기`` finds ``파일의 내용을 읽습니다`` through
``파일``, whatever particle is glued to it. On both sides an English word is stemmed
(``_stem``: ``notes`` and ``note`` are one term, ``reading`` and ``read``). A lone CJK
character matches as a prefix, as in the content store. The score is FTS5's ``bm25()``
for the OR of those terms over those tokens, exactly (a test compares it with
SQLite's), so the same words rank the same tools in any process.

The index is built once per catalog version (a server started, restarted with other
tools, or re-listed them) and is read-only after: a search is a few dictionary reads
per query term. With ``embed=True`` (the ``search-embed`` extra) it also embeds each
tool and fuses the two rankings (``_embedding``), and a query's words also search for
the catalog's words nearest in meaning (``_expansion``: ``website`` finds ``url``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import msgspec

from nativemcp.protocol import Tool

from ._documents import one_line, split_name, tool_text
from ._embedding import ToolEmbeddings, embedding_text, fuse
from ._expansion import QueryExpansion, widened
from ._stem import stem

__all__ = ["MAX_LIMIT", "IndexedTool", "ToolIndex", "ToolMatch"]

MAX_LIMIT: Final = 50
"""The most matches one search returns."""


class IndexedTool(NamedTuple):
    """One catalog tool to index: its full name, its server's name as written, its
    definition (as the catalog lists it)."""

    full_name: str
    server: str
    tool: Tool


class ToolMatch(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One tool found by `WorkerPool.search_tools`.

    ``name`` is the full name to call (``pool.call_tool(name, ...)``, or the
    ``call_tool`` meta-tool); ``score`` its BM25 score for the query (higher is
    better, always above 0; with embedding fusion, its fused reciprocal-rank score);
    ``description`` one line of what it does (the first
    sentence of its description); ``input_schema`` the JSON Schema of its arguments,
    as ``tools/list`` gives it; ``server`` its server's name as written.
    """

    name: str
    score: float
    description: str
    input_schema: dict[str, Any]
    server: str
    title: str | None = None


class _Term(NamedTuple):
    token: str
    prefix: bool


class ToolIndex:
    """The BM25 index of some tools; `search` ranks them for a query.

    Args:
        tools: the tools to index, in catalog order (ties keep it).
        embed: also rank by the ``search-embed`` extra's embedding model and fuse
            the two rankings (see ``_embedding``), and widen the query's words to the
            catalog's nearest ones (``_expansion``); the model is loaded on the first
            such index of the process.

    Raises:
        ImportError: ``embed`` without the ``search-embed`` extra installed.
    """

    def __init__(self, tools: Sequence[IndexedTool], *, embed: bool = False) -> None:
        # Imported on first index: the content store's package is the worker side's,
        # and a pool that never searches should not load it (workers re-import the
        # script that opened the pool, and with it this package).
        from nativemcp.workers.content_store import chunk_tokens

        self._tools = list(tools)
        self._lengths: dict[int, int] = {}
        # token -> {document: how often it occurs there}
        self._postings: dict[str, dict[int, int]] = {}
        # stem -> the words it stands for as written (for the query expansion)
        written: dict[str, set[str]] = {}
        for number, item in enumerate(self._tools):
            words = chunk_tokens(tool_text(item.full_name, item.server, item.tool))
            tokens = [stem(word) for word in words]
            self._lengths[number] = len(tokens)
            for token, count in Counter(tokens).items():
                self._postings.setdefault(token, {})[number] = count
            if embed:
                for word, token in zip(words, tokens, strict=True):
                    if widened(word):
                        written.setdefault(token, set()).add(word)
        total = sum(self._lengths.values())
        self._average = total / len(self._tools) if self._tools else 0.0
        self._embeddings: ToolEmbeddings | None = None
        self._expansion: QueryExpansion | None = None
        if embed:
            self._embeddings = ToolEmbeddings(
                [embedding_text(t.tool.name, t.tool.title, t.tool.description) for t in tools]
            )
            # Only a word fewer than half the tools hold can make a tool a match.
            telling = {
                token: forms
                for token, forms in written.items()
                if 2 * len(self._postings[token]) < len(self._tools)
            }
            self._expansion = QueryExpansion(telling)

    @property
    def fused(self) -> bool:
        """Whether the search fuses BM25 with the embedding model's ranking."""
        return self._embeddings is not None

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def tools(self) -> list[IndexedTool]:
        """The tools it ranks, in the order it was given them."""
        return list(self._tools)

    @staticmethod
    def index_tokens(text: str) -> list[str]:
        """The tokens the index holds for ``text``: the content store's (as SQLite's
        FTS5 indexes it), each English word stemmed (``files`` → ``file``)."""
        from nativemcp.workers.content_store import chunk_tokens

        return [stem(token) for token in chunk_tokens(text)]

    @staticmethod
    def query_terms(query: str) -> list[tuple[str, bool]]:
        """The terms ``query`` is scored by: each token, and whether it matches as a
        prefix (a lone CJK character). As an FTS5 query they are ``"token"`` (or
        ``"token" *``) joined with ``OR``."""
        return [tuple(term) for term in ToolIndex._terms(query)]  # type: ignore[misc]

    @staticmethod
    def _terms(query: str) -> list[_Term]:
        from nativemcp.workers.content_store import phrases

        terms: dict[_Term, None] = {}
        for phrase in phrases(split_name(query)):
            *whole, last = phrase.tokens
            for token in whole:
                terms.setdefault(_Term(stem(token), False), None)
            # A prefix (a lone CJK character) is never stemmed: `stem` keeps non-ASCII.
            terms.setdefault(_Term(stem(last), phrase.prefix), None)
        return list(terms)

    def _frequencies(self, term: _Term) -> dict[int, int]:
        if not term.prefix:
            return self._postings.get(term.token, {})
        # A lone CJK character: every token it starts counts, as FTS5's prefix query.
        merged: Counter[int] = Counter()
        for token, per_tool in self._postings.items():
            if token.startswith(term.token):
                merged.update(per_tool)
        return dict(merged)

    def widened_terms(self, query: str) -> dict[str, float]:
        """The catalog's words (index tokens, stemmed) that ``query`` also searches
        for, each with its similarity to the nearest word of the query (``_expansion``);
        none that is a term of the query itself. Empty unless the index is `fused`."""
        from nativemcp.workers.content_store import phrases

        if self._expansion is None:
            return {}
        own = {term.token for term in self._terms(query)}
        tokens = [token for phrase in phrases(split_name(query)) for token in phrase.tokens]
        return {
            token: similarity
            for token, similarity in self._expansion.similar(tokens).items()
            if token not in own
        }

    def _weighted(self, query: str) -> list[tuple[float, dict[int, int]]]:
        from nativemcp.workers.content_store import bm25_idf

        count = len(self._tools)
        weighted = []
        for term in self._terms(query):
            found = self._frequencies(term)
            if found:
                weighted.append((bm25_idf(count, len(found)), found))
        # A widened term counts as much as its similarity: a word 0.5 near the
        # query's counts half as much as the query's own would.
        for token, similarity in self.widened_terms(query).items():
            found = self._postings[token]
            weighted.append((similarity * bm25_idf(count, len(found)), found))
        return weighted

    def scores(self, query: str) -> dict[int, float]:
        """BM25 per indexed tool (by position) that holds a term of ``query``: FTS5's
        ``bm25()`` for the OR of the query's terms, with the sign turned (higher is
        better). On a `fused` index the `widened_terms` are terms too, each weighed
        by its similarity (its idf times it), as FTS5 has no such weight."""
        from nativemcp.workers.content_store import bm25

        weighted = self._weighted(query)
        return bm25(weighted, self._lengths, self._average) if weighted else {}

    def search(
        self, query: str, limit: int = 5, *, where: Callable[[str], bool] | None = None
    ) -> list[ToolMatch]:
        """The ``limit`` best tools for ``query``, best first (ties in catalog order).

        A tool is returned only when it holds a term of the query that fewer than half
        the tools hold (or that it alone holds): one that matched only ``the`` or ``a``
        (which FTS5 weighs at almost nothing) is no match. A `fused` index also scores
        the catalog's words nearest to the query's (``_expansion``), ranks those
        matches and every tool by its embedding, and returns the best of both
        (reciprocal-rank fusion): a tool that shares no word with the query can be
        found, and a search finds ``limit`` tools whenever the index holds as many.
        ``where`` keeps only the full names it accepts (a profile, the servers one MCP
        route serves); the scores stay those of the whole index.

        Raises:
            ValueError: ``limit`` is not between 1 and `MAX_LIMIT`.
        """
        from nativemcp.workers.content_store import bm25

        check_limit(limit)
        weighted = self._weighted(query)
        count = len(self._tools)
        # FTS5 floors the idf of a term in half the rows or more: such a term is no
        # evidence that a tool fits, unless one tool alone holds it (a catalog of one or
        # two tools).
        telling = {
            number
            for _, found in weighted
            if 2 * len(found) < count or len(found) == 1
            for number in found
        }
        scores = bm25(weighted, self._lengths, self._average) if weighted else {}
        ranked = sorted(
            ((n, score) for n, score in scores.items() if n in telling),
            key=lambda item: (-item[1], item[0]),
        )
        if self._embeddings is not None:
            ranked = fuse([n for n, _ in ranked], self._embeddings.ranking(query))
        matches: list[ToolMatch] = []
        for number, score in ranked:
            item = self._tools[number]
            if where is not None and not where(item.full_name):
                continue
            matches.append(
                ToolMatch(
                    name=item.full_name,
                    score=score,
                    description=one_line(item.tool),
                    input_schema=dict(item.tool.input_schema or {}),
                    server=item.server,
                    title=item.tool.title,
                )
            )
            if len(matches) == limit:
                break
        return matches


def check_limit(limit: object) -> int:
    """``limit`` as a count of matches.

    Raises:
        ValueError: not a whole number between 1 and `MAX_LIMIT`.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")
    return limit
