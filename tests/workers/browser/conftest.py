"""What the browser server's test modules share: asyncio only, and the local site."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _browser_pages import PageServer, serving


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # One Chromium per module is the budget, and the server itself runs on asyncio in
    # its worker whatever the caller runs; the pool's two backends are tested elsewhere.
    return "asyncio"


@pytest.fixture(scope="module")
def site() -> Iterator[PageServer]:
    """The test pages over HTTP on loopback, for the module."""
    with serving() as server:
        yield server
