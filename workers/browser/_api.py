"""`BrowserAPI`: the browser server's tools as a typed interface for `WorkerPool.server`.

```python
browser = pool.server(BrowserAPI)
page = await browser.navigate(url="https://example.com")  # -> NavigateResult
```

Each method mirrors one tool of `create_server` (same argument names, types and
defaults) and returns the tool's value type. ``tests/workers/test_builtin_interfaces.py``
checks the two stay the same.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Protocol

from ._models import (
    ActionResult,
    CloseSessionResult,
    ListSessionsResult,
    NavigateResult,
    ReadTextResult,
    ScreenshotResult,
    ScriptResult,
    SnapshotResult,
)

__all__ = ["BrowserAPI"]


class BrowserAPI(Protocol):
    """The ``browser`` server as a typed proxy: ``pool.server(BrowserAPI)``."""

    server_name: ClassVar[str] = "browser"

    async def navigate(self, *, url: str, session_id: str | None = None) -> NavigateResult:
        """Open an http(s) URL in the session's active tab."""

    async def snapshot(self, *, session_id: str | None = None) -> SnapshotResult:
        """The active tab as an accessibility tree with refs."""

    async def click(self, *, ref: str, session_id: str | None = None) -> ActionResult:
        """Click the element with this ref."""

    async def type_text(
        self, *, ref: str, text: str, submit: bool = False, session_id: str | None = None
    ) -> ActionResult:
        """Replace a field's text (and press Enter with ``submit``)."""

    async def select_option(
        self, *, ref: str, values: list[str], session_id: str | None = None
    ) -> ActionResult:
        """Select options of a drop-down by label or value."""

    async def press_key(self, *, key: str, session_id: str | None = None) -> ActionResult:
        """Press a key on the focused element."""

    async def wait_for_text(
        self,
        *,
        text: str,
        gone: bool = False,
        timeout: float | None = None,
        session_id: str | None = None,
    ) -> ActionResult:
        """Wait until ``text`` shows (or, with ``gone``, disappears)."""

    async def go_back(self, *, session_id: str | None = None) -> ActionResult:
        """One page back in the active tab's history."""

    async def go_forward(self, *, session_id: str | None = None) -> ActionResult:
        """One page forward in the active tab's history."""

    async def tabs(
        self,
        *,
        action: Literal["list", "new", "select", "close"] = "list",
        index: int | None = None,
        url: str | None = None,
        session_id: str | None = None,
    ) -> ActionResult:
        """List, open, select or close tabs."""

    async def read_text(
        self, *, ref: str | None = None, session_id: str | None = None
    ) -> ReadTextResult:
        """The visible text of one element or of the whole page."""

    async def screenshot(
        self, *, session_id: str | None = None, full_page: bool = False
    ) -> ScreenshotResult:
        """A PNG of the active tab (the image travels as an MCP image block)."""

    async def execute_script(self, *, script: str, session_id: str | None = None) -> ScriptResult:
        """Run JavaScript in the page (only where the server enables it)."""

    async def close_session(self, *, session_id: str) -> CloseSessionResult:
        """Close a browser session."""

    async def list_sessions(self) -> ListSessionsResult:
        """The caller's open browser sessions."""
