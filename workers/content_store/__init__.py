"""The built-in content store: files and text in SQLite, with BM25 full-text search.

Reached as ``pool.server("content-store")``; built in its worker by `create_server`.
`render_text` writes a result's text as the model reads it, or with the next steps in
another reader's words (`NextSteps`, as the command line does).

Its text search is public for other rankers of short texts (the proxy's tool search):
`chunk_tokens` gives the tokens FTS5 indexes for a text (any language: CJK runs as
bigrams), `phrases` a plain-terms query as those tokens, and `bm25_idf` / `bm25`
FTS5's own BM25 (``BM25_K1``, ``BM25_B``), so a ranking computed elsewhere equals
SQLite's.
"""

from . import _models
from ._api import ContentStoreAPI as ContentStoreAPI

# Every typed result is public: the list is `_models.__all__`, kept in one place.
from ._models import *  # noqa: F403
from ._postings import BM25_B as BM25_B
from ._postings import BM25_K1 as BM25_K1
from ._postings import Phrase as Phrase
from ._postings import bm25 as bm25
from ._postings import chunk_tokens as chunk_tokens
from ._postings import idf as bm25_idf
from ._postings import phrases as phrases
from ._render import NextSteps as NextSteps
from ._render import render_text as render_text
from ._server import MAX_OFFSET as MAX_OFFSET
from ._server import create_server as create_server
from ._state import ContentStoreOptions as ContentStoreOptions

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_OFFSET",
    "ContentStoreAPI",
    "ContentStoreOptions",
    "NextSteps",
    "Phrase",
    "bm25",
    "bm25_idf",
    "chunk_tokens",
    "create_server",
    "phrases",
    "render_text",
]
__all__ += _models.__all__
