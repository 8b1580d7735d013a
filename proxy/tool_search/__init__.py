"""Tool search: the catalog ranked for a query, the two meta-tools, and tool profiles.

What lives here: `ToolIndex` (BM25 over every tool's names, description and parameters,
with the content store's tokenizer, any language), `ToolMatch` (one tool found),
`ToolProfile` (which tools one client is offered: globs on full names, and whether
through search), and the meta-tools ``search_tools`` / ``call_tool`` that stand in for
every definition (`META_TOOLS`, `read_search`, `read_call`, `search_response`).
`tool_text` is the text a tool is indexed by (a bench ranks the same texts with bm25s).
With the ``search-embed`` extra, an index made with ``embed=True`` fuses BM25 with a
small embedding model's ranking (`ToolEmbeddings`, `fuse`, `embedding_available`), and
its BM25 also scores the catalog's words nearest to the query's
(`ToolIndex.widened_terms`: ``website`` finds ``url``). `lint_tools` names the
descriptions too short to be found or too alike to be told apart (``tools --lint``).
`QueryLearning` keeps, opt-in, the queries that led to each tool's call as more of its
text (``search_learn``: a catalog that learns its users' words).

This room imports `nativemcp.protocol` and the content store's public text search
(`nativemcp.workers.content_store`, on first index only: a pool that never searches
does not load it); nothing of the pool core, which imports it (for
`WorkerPool.search_tools` and the agent loop's meta-tools), as `serve/` does (for
``serve --tool-search``, ``--tools``, ``--exclude-tools``).
"""

from ._documents import tool_text as tool_text
from ._embedding import EMBED_EXTRA as EMBED_EXTRA
from ._embedding import RRF_K as RRF_K
from ._embedding import ToolEmbeddings as ToolEmbeddings
from ._embedding import check_embedding as check_embedding
from ._embedding import embedding_available as embedding_available
from ._embedding import embedding_loaded as embedding_loaded
from ._embedding import embedding_text as embedding_text
from ._embedding import fuse as fuse
from ._embedding import load_embedding as load_embedding
from ._index import MAX_LIMIT as MAX_LIMIT
from ._index import IndexedTool as IndexedTool
from ._index import ToolIndex as ToolIndex
from ._index import ToolMatch as ToolMatch
from ._index import check_limit as check_limit
from ._learning import LEARNED_FILE as LEARNED_FILE
from ._learning import LEARNED_TABLE as LEARNED_TABLE
from ._learning import QueryLearning as QueryLearning
from ._learning import query_learning as query_learning
from ._lint import MAX_SIMILARITY as MAX_SIMILARITY
from ._lint import MIN_TERMS as MIN_TERMS
from ._lint import LintFinding as LintFinding
from ._lint import lint_tools as lint_tools
from ._meta_tools import ANTHROPIC_TOOL_SEARCH as ANTHROPIC_TOOL_SEARCH
from ._meta_tools import CALL_TOOL as CALL_TOOL
from ._meta_tools import META_TOOLS as META_TOOLS
from ._meta_tools import SEARCH_TOOLS as SEARCH_TOOLS
from ._meta_tools import SearchAnswer as SearchAnswer
from ._meta_tools import deferred_for_anthropic as deferred_for_anthropic
from ._meta_tools import parameters_line as parameters_line
from ._meta_tools import read_call as read_call
from ._meta_tools import read_search as read_search
from ._meta_tools import search_response as search_response
from ._profile import ToolProfile as ToolProfile

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "CALL_TOOL",
    "EMBED_EXTRA",
    "LEARNED_FILE",
    "LEARNED_TABLE",
    "MAX_LIMIT",
    "MAX_SIMILARITY",
    "META_TOOLS",
    "MIN_TERMS",
    "RRF_K",
    "SEARCH_TOOLS",
    "IndexedTool",
    "LintFinding",
    "QueryLearning",
    "SearchAnswer",
    "ToolEmbeddings",
    "ToolIndex",
    "ToolMatch",
    "ToolProfile",
    "check_embedding",
    "check_limit",
    "deferred_for_anthropic",
    "embedding_available",
    "embedding_loaded",
    "embedding_text",
    "fuse",
    "lint_tools",
    "load_embedding",
    "parameters_line",
    "query_learning",
    "read_call",
    "read_search",
    "search_response",
    "tool_text",
]
