"""The browser server's values as code sees them: typed, camelCase on the wire."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "ActionResult",
    "CloseSessionResult",
    "ListSessionsResult",
    "NavigateResult",
    "ReadTextResult",
    "ScreenshotResult",
    "ScriptResult",
    "SessionInfo",
    "SnapshotNode",
    "SnapshotResult",
    "TabInfo",
]


class SnapshotNode(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, rename="camel"):
    """One node of a page's accessibility tree (the snapshot the model reads, as data)."""

    role: str
    """The ARIA role (``button``, ``link``, ``heading``...); ``text`` for plain text."""
    name: str = ""
    """The accessible name (a button's label, a link's text); for ``text``, the text."""
    ref: str | None = None
    """The handle actions take (``click(ref=...)``); set on interactive elements only."""
    states: list[str] = msgspec.field(default_factory=list)
    """``checked``, ``disabled``, ``expanded``, ``selected``, ``pressed``, ``level=2``..."""
    text: str | None = None
    """The element's own text when it has no child elements (a paragraph's words)."""
    url: str | None = None
    """A link's target."""
    placeholder: str | None = None
    """A text field's placeholder, when it differs from its name."""
    children: list[SnapshotNode] = msgspec.field(default_factory=list)


class TabInfo(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """One tab (page) of a session."""

    index: int
    url: str
    title: str
    active: bool


class NavigateResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """Where `navigate` (or a history step) landed."""

    session_id: str
    url: str
    title: str
    status: int | None = None
    """The main document's HTTP status (None when it did not answer yet)."""
    loading: bool = False
    """True: the page had not finished loading within the page timeout."""
    interactive: dict[str, int] = msgspec.field(default_factory=dict)
    """How many interactive elements of each role the page has (``{"link": 12}``)."""
    refused: list[str] = msgspec.field(default_factory=list)
    """Requests of the page the URL policy refused (``URL: why``)."""
    downloads: list[str] = msgspec.field(default_factory=list)
    """Files the URL saved instead of opening a page (workspace paths); the tab stays
    where it was."""


class SnapshotResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """The page as an accessibility tree; refs are valid until the page navigates."""

    session_id: str
    url: str
    title: str
    tree: list[SnapshotNode]
    refs: list[str]
    """Every ref in the tree, in document order."""
    tabs: int = 1


class ActionResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """What an action did and what changed on the page because of it."""

    session_id: str
    action: str
    """The action in words (``clicked button "Send"``)."""
    url: str
    title: str
    navigated: bool = False
    """The page's URL changed: `tree` then holds the whole new page."""
    added: list[str] = msgspec.field(default_factory=list)
    """Snapshot lines that appeared (when the page did not navigate)."""
    removed: list[str] = msgspec.field(default_factory=list)
    """Snapshot lines that disappeared."""
    tree: list[SnapshotNode] | None = None
    """The new page's tree after a navigation (None otherwise)."""
    tabs: list[TabInfo] | None = None
    """The session's tabs, when the action opened, closed or switched one."""
    refused: list[str] = msgspec.field(default_factory=list)
    """Requests the URL policy refused during the action (``URL: why``)."""
    downloads: list[str] = msgspec.field(default_factory=list)
    """Files the action downloaded, as workspace paths (``exports/downloads/...``)."""


class ReadTextResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """The text of one element (``ref``) or of the whole page (``ref`` None)."""

    session_id: str
    ref: str | None
    text: str
    truncated: bool = False


class ScreenshotResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """A PNG of the page; the image itself travels as an MCP image block."""

    session_id: str
    url: str
    title: str
    width: int
    height: int
    size: int
    """The PNG's size in bytes."""
    full_page: bool = False


class ScriptResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """What `execute_script` returned (JSON-able; None for undefined)."""

    session_id: str
    value: Any = None


class SessionInfo(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """One open browser session (its own cookies and storage)."""

    session_id: str
    tabs: list[TabInfo]
    idle_seconds: float


class ListSessionsResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """The caller's open sessions."""

    sessions: list[SessionInfo]
    max_sessions: int


class CloseSessionResult(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """Whether `close_session` found the session open."""

    session_id: str
    closed: bool
