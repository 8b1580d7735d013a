"""The built-in content store: files and text in SQLite, with BM25 full-text search.

Reached as ``pool.server("content-store")``; built in its worker by `create_server`.
`render_text` writes a result's text as the model reads it, or with the next steps in
another reader's words (`NextSteps`, as the command line does).
"""

from ._api import ContentStoreAPI as ContentStoreAPI
from ._models import AddContentResult as AddContentResult
from ._models import ContentSummary as ContentSummary
from ._models import DeleteContentResult as DeleteContentResult
from ._models import DeleteStoreResult as DeleteStoreResult
from ._models import ListContentResult as ListContentResult
from ._models import ListStoresResult as ListStoresResult
from ._models import ReadContentResult as ReadContentResult
from ._models import RelevanceType as RelevanceType
from ._models import SearchHit as SearchHit
from ._models import SearchResult as SearchResult
from ._models import StoreInfo as StoreInfo
from ._render import NextSteps as NextSteps
from ._render import render_text as render_text
from ._server import MAX_OFFSET as MAX_OFFSET
from ._server import ContentStoreOptions as ContentStoreOptions
from ._server import create_server as create_server

__all__ = [
    "MAX_OFFSET",
    "AddContentResult",
    "ContentStoreAPI",
    "ContentStoreOptions",
    "ContentSummary",
    "DeleteContentResult",
    "DeleteStoreResult",
    "ListContentResult",
    "ListStoresResult",
    "NextSteps",
    "ReadContentResult",
    "RelevanceType",
    "SearchHit",
    "SearchResult",
    "StoreInfo",
    "create_server",
    "render_text",
]
