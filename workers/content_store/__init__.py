"""The built-in content store: files and text in SQLite, with BM25 full-text search.

Reached as ``pool.server("content-store")``; built in its worker by `create_server`.
`render_text` writes a result's text as the model reads it, or with the next steps in
another reader's words (`NextSteps`, as the command line does).
"""

from . import _models
from ._api import ContentStoreAPI as ContentStoreAPI

# Every typed result is public: the list is `_models.__all__`, kept in one place.
from ._models import *  # noqa: F403
from ._render import NextSteps as NextSteps
from ._render import render_text as render_text
from ._server import MAX_OFFSET as MAX_OFFSET
from ._server import create_server as create_server
from ._state import ContentStoreOptions as ContentStoreOptions

__all__ = [
    "MAX_OFFSET",
    "ContentStoreAPI",
    "ContentStoreOptions",
    "NextSteps",
    "create_server",
    "render_text",
]
__all__ += _models.__all__
