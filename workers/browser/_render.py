"""The text the model reads from each browser tool: short, and enough to act next."""

from __future__ import annotations

import json

from ._models import (
    ActionResult,
    CloseSessionResult,
    ListSessionsResult,
    NavigateResult,
    ReadTextResult,
    ScreenshotResult,
    SnapshotResult,
    TabInfo,
)

__all__ = [
    "render_action",
    "render_close_session",
    "render_navigate",
    "render_read_text",
    "render_screenshot",
    "render_sessions",
    "render_snapshot",
]


def _page(title: str, url: str) -> str:
    return f"Page: {json.dumps(title, ensure_ascii=False)} {url}"


def _tab_line(tab: TabInfo) -> str:
    mark = " (active)" if tab.active else ""
    return f"  {tab.index}: {json.dumps(tab.title, ensure_ascii=False)} {tab.url}{mark}"


def _refused(lines: list[str]) -> list[str]:
    return [f"Refused by the URL policy: {line}" for line in lines]


def render_navigate(result: NavigateResult) -> str:
    """``Navigated to "Title" URL (HTTP 200)`` and what the page offers."""
    status = f" (HTTP {result.status})" if result.status is not None else ""
    if result.downloads:  # the URL was a file: saved, and the tab did not move
        lines = [f"Downloaded to the workspace: {path}" for path in result.downloads]
        title = json.dumps(result.title, ensure_ascii=False)
        lines.append(f"The URL is a file, not a page: the tab stays on {title} {result.url}.")
        lines.extend(_refused(result.refused))
        return "\n".join(lines)
    lines = [f"Navigated to {json.dumps(result.title, ensure_ascii=False)} {result.url}{status}"]
    if result.loading:
        lines.append("The page had not finished loading; what has loaded is usable.")
    if result.interactive:
        counts = ", ".join(f"{role} {count}" for role, count in result.interactive.items())
        lines.append(f"Interactive: {counts}. Call snapshot for their refs.")
    else:
        lines.append("No interactive elements. Call snapshot or read_text to read it.")
    lines.extend(_refused(result.refused))
    return "\n".join(lines)


def render_snapshot(result: SnapshotResult, lines: list[str]) -> str:
    """The page line, then the tree."""
    header = _page(result.title, result.url)
    if result.tabs > 1:
        header += f" (tab of {result.tabs}; see tabs)"
    return "\n".join([header, *lines])


def render_action(result: ActionResult, lines: list[str], max_changes: int) -> str:
    """What the action did, then the new page (after a navigation) or the changed lines."""
    out = [result.action]
    out.extend(_refused(result.refused))
    out.extend(f"Downloaded to the workspace: {path}" for path in result.downloads)
    if result.tabs is not None:
        out.append("Tabs:")
        out.extend(_tab_line(tab) for tab in result.tabs)
    out.append(_page(result.title, result.url))
    if result.navigated:
        out.extend(lines)
        return "\n".join(out)
    changes = [f"- {line}" for line in result.removed] + [f"+ {line}" for line in result.added]
    if not changes:
        out.append("No change in the page's tree.")
    elif len(changes) > max_changes:
        out.extend(changes[:max_changes])
        out.append(f"... {len(changes) - max_changes} more changed lines: call snapshot.")
    else:
        out.append("Changes (- gone, + new):")
        out.extend(changes)
    return "\n".join(out)


def render_read_text(result: ReadTextResult) -> str:
    """The text, with a note when it was cut."""
    if result.truncated:
        return f"{result.text}\n[text cut at {len(result.text):,} characters]"
    return result.text or "(no visible text)"


def render_screenshot(result: ScreenshotResult) -> str:
    """What the image shows."""
    what = "full page" if result.full_page else "viewport"
    return (
        f"Screenshot ({what}, {result.width}x{result.height} px, {result.size:,} bytes) of "
        f"{json.dumps(result.title, ensure_ascii=False)} {result.url}"
    )


def render_close_session(result: CloseSessionResult) -> str:
    """Whether the session was open."""
    if result.closed:
        return f"Closed browser session {result.session_id!r}."
    return f"No open browser session {result.session_id!r}; nothing to close."


def render_sessions(result: ListSessionsResult) -> str:
    """Each session with its tabs."""
    if not result.sessions:
        return f"No open browser sessions (at most {result.max_sessions})."
    out = [f"{len(result.sessions)} open browser session(s) (at most {result.max_sessions}):"]
    for session in result.sessions:
        out.append(f"{session.session_id} (idle {session.idle_seconds:g} s):")
        out.extend(_tab_line(tab) for tab in session.tabs)
    return "\n".join(out)
