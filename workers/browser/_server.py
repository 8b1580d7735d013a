"""The browser server's tools: navigate, read the page as a tree, act on refs, screenshots.

Every tool answers twice: rich text for the model (the page as an indented tree with a
``[ref=eN]`` on each interactive element; after an action, what changed) and a typed
value for code. An action takes a ref from the latest snapshot of the active tab; a
ref the page no longer has is an error that says to take a new snapshot, never a click
somewhere else.
"""

from __future__ import annotations

import base64
import json
import struct
import time
from pathlib import Path
from typing import Annotated, Final, Literal

import msgspec

from nativemcp.protocol import (
    ImageContent,
    NativeMCPResponse,
    ToolAnnotations,
    ToolError,
    structured_response,
)
from nativemcp.workers import Context, Server, ServerConfig

from ._aria import refs_of
from ._models import (
    ActionResult,
    CloseSessionResult,
    ListSessionsResult,
    NavigateResult,
    ReadTextResult,
    ScreenshotResult,
    ScriptResult,
    SessionInfo,
    SnapshotResult,
)
from ._options import parse_options
from ._page_calls import DEFAULT_SESSION, PageCalls
from ._render import (
    render_close_session,
    render_navigate,
    render_read_text,
    render_screenshot,
    render_sessions,
    render_snapshot,
)
from ._sessions import BrowserHost, Session

__all__ = ["DEFAULT_SESSION", "SERVER_NAME", "create_server"]

SERVER_NAME: Final = "browser"
"""The built-in server's name (``pool.server("browser")``)."""
_OPENS_TAB: Final = """e => {
  const target = e.closest('a[href]')?.target ?? '';
  return target !== '' && !['_self', '_parent', '_top'].includes(target.toLowerCase());
}"""
"""Whether clicking the element opens a link in another tab."""

_Ref = Annotated[
    str, msgspec.Meta(description="An element's ref from the latest snapshot, like e12.")
]
_SessionId = Annotated[
    str | None,
    msgspec.Meta(description="A named browser session (own cookies and tabs); omit for yours."),
]
_Gone = Annotated[bool, msgspec.Meta(description="Wait for the text to disappear instead.")]
_Key = Annotated[
    str, msgspec.Meta(description="A key or chord: Enter, Escape, ArrowDown, Control+A.")
]
_Script = Annotated[
    str, msgspec.Meta(description="A JavaScript expression or function, run in the page.")
]
_READS: Final = ToolAnnotations(read_only_hint=True, open_world_hint=True)
_ACTS: Final = ToolAnnotations(destructive_hint=False, open_world_hint=True)
_RUNS_SCRIPT: Final = ToolAnnotations(destructive_hint=True, open_world_hint=True)
_FORGETS: Final = ToolAnnotations(destructive_hint=True, idempotent_hint=True)


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


class _BrowserTools:
    """The browser server's tools, one method each; `create_server` declares them."""

    def __init__(self, calls: PageCalls) -> None:
        self.calls = calls
        self.host = calls.host
        self.options = calls.options

    # -- open pages; move through a tab's history and the session's tabs --

    async def navigate(
        self, ctx: Context, url: str, session_id: _SessionId = None
    ) -> NavigateResult:
        """Open an http(s) URL in the session's active tab; answers with the page's title,
        URL and how many interactive elements it has (snapshot shows them with refs)."""
        await self.calls.check_url(url)
        return await self.calls.run(ctx, session_id, lambda s: self.calls.navigate(s, url))

    async def go_back(
        self, ctx: Context, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Go back one page in the active tab's history."""
        return await self.calls.run(ctx, session_id, lambda s: self.calls.history(s, back=True))

    async def go_forward(
        self, ctx: Context, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Go forward one page in the active tab's history."""
        return await self.calls.run(ctx, session_id, lambda s: self.calls.history(s, back=False))

    async def tabs(
        self,
        ctx: Context,
        action: Literal["list", "new", "select", "close"] = "list",
        index: Annotated[int, msgspec.Meta(ge=0)] | None = None,
        url: str | None = None,
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """List the session's tabs, open a new one (at url), select one or close one (by
        index; close without index closes the active tab)."""
        if url is not None:
            await self.calls.check_url(url)
        return await self.calls.run(
            ctx, session_id, lambda s: self.calls.tabs(s, action, index, url)
        )

    # -- read the active tab; a read never opens a session --

    async def snapshot(
        self, ctx: Context, session_id: _SessionId = None
    ) -> NativeMCPResponse[SnapshotResult]:
        """The active tab as an accessibility tree: headings, text, and every interactive
        element with its [ref=eN] for click, type_text, select_option and read_text."""

        async def body(session: Session) -> NativeMCPResponse[SnapshotResult]:
            page = await session.page()
            state = await session.capture(page)
            result = SnapshotResult(
                session_id=session.name,
                url=page.url,
                title=await page.title(),
                tree=state.tree,
                refs=refs_of(state.tree),
                tabs=len(session.pages),
            )
            return structured_response(render_snapshot(result, state.lines), result)

        return await self.calls.run(ctx, session_id, body, create=False)

    async def read_text(
        self,
        ctx: Context,
        ref: Annotated[
            str | None, msgspec.Meta(description="An element's ref; omit for the whole page.")
        ] = None,
        session_id: _SessionId = None,
    ) -> ReadTextResult:
        """The visible text of one element (by ref) or of the whole page."""

        async def body(session: Session) -> ReadTextResult:
            page = await session.page()
            if ref is None:
                text = await page.locator("body").inner_text()
            else:
                _, locator, _ = await self.calls.locate(session, ref)
                text = await locator.inner_text()
            limit = self.options.max_text_chars
            return ReadTextResult(
                session_id=session.name, ref=ref, text=text[:limit], truncated=len(text) > limit
            )

        return await self.calls.run(ctx, session_id, body, create=False)

    async def screenshot(
        self, ctx: Context, session_id: _SessionId = None, full_page: bool = False
    ) -> NativeMCPResponse[ScreenshotResult]:
        """A PNG image of the active tab (the viewport, or with full_page the whole page)."""

        async def body(session: Session) -> NativeMCPResponse[ScreenshotResult]:
            page = await session.page()
            data = await page.screenshot(type="png", full_page=full_page)
            width, height = _png_size(data)
            result = ScreenshotResult(
                session_id=session.name,
                url=page.url,
                title=await page.title(),
                width=width,
                height=height,
                size=len(data),
                full_page=full_page,
            )
            image = ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type="image/png")
            return structured_response(render_screenshot(result), result, extra_content=[image])

        return await self.calls.run(ctx, session_id, body, create=False)

    async def wait_for_text(
        self,
        ctx: Context,
        text: str,
        gone: _Gone = False,
        timeout: Annotated[float, msgspec.Meta(gt=0, description="Seconds.")] | None = None,
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """Wait until ``text`` shows on the page (or, with gone, until it is gone)."""
        seconds = min(timeout or self.options.action_timeout, self.options.page_timeout)

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            page = await session.page()
            target = page.get_by_text(text).first
            await target.wait_for(state="hidden" if gone else "visible", timeout=seconds * 1000)
            quoted = json.dumps(text, ensure_ascii=False)
            return await self.calls.after(
                session, f"Text {quoted} is {'gone' if gone else 'shown'}."
            )

        return await self.calls.run(ctx, session_id, body, create=False)

    # -- act on the elements of the latest snapshot, or run a script --

    async def click(
        self, ctx: Context, ref: _Ref, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Click the element with this ref; answers with what changed on the page."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            _, locator, what = await self.calls.locate(session, ref)
            tabs_before = len(session.pages)
            if await locator.evaluate(_OPENS_TAB):
                # The new tab's page event comes after the click returns: wait for it.
                async with session.context.expect_page():
                    await locator.click()
            else:
                await locator.click()
            return await self.calls.after(
                session, f"Clicked {what}.", tabs_changed=len(session.pages) != tabs_before
            )

        return await self.calls.run(ctx, session_id, body)

    async def type_text(
        self,
        ctx: Context,
        ref: _Ref,
        text: str,
        submit: Annotated[
            bool, msgspec.Meta(description="Press Enter afterwards (submits most forms).")
        ] = False,
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """Replace the text of a field (textbox, searchbox...) with ``text``; answers with
        what changed."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            _, locator, what = await self.calls.locate(session, ref)
            await locator.fill(text)
            if submit:
                await locator.press("Enter")
            done = f"Typed {len(text)} characters into {what}" + (
                " and pressed Enter." if submit else "."
            )
            return await self.calls.after(session, done)

        return await self.calls.run(ctx, session_id, body)

    async def select_option(
        self,
        ctx: Context,
        ref: _Ref,
        values: Annotated[
            list[str],
            msgspec.Meta(min_length=1, description="Options to select, by label or value."),
        ],
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """Select options of a drop-down (combobox/listbox) by label or value."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            _, locator, what = await self.calls.locate(session, ref)
            chosen = await locator.select_option(values)
            return await self.calls.after(session, f"Selected {', '.join(chosen)} in {what}.")

        return await self.calls.run(ctx, session_id, body)

    async def press_key(
        self, ctx: Context, key: _Key, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Press a key in the active tab (on the focused element); answers with what changed."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            page = await session.page()
            await page.keyboard.press(key)
            return await self.calls.after(session, f"Pressed {key}.")

        return await self.calls.run(ctx, session_id, body)

    async def execute_script(
        self, ctx: Context, script: _Script, session_id: _SessionId = None
    ) -> ScriptResult:
        """Run JavaScript in the active tab and return its (JSON) value. Off unless the
        server's execute_script option enables it."""
        if not self.options.execute_script:
            raise ToolError(
                "Error: execute_script is disabled on this server (the pool enables it with "
                "options={'browser': {'execute_script': True}}).",
                structured_content={"error": "script_disabled"},
            )

        async def body(session: Session) -> ScriptResult:
            page = await session.page()
            value = await page.evaluate(script)
            return ScriptResult(session_id=session.name, value=value)

        return await self.calls.run(ctx, session_id, body)

    # -- close a session; list the caller's --

    async def close_session(self, ctx: Context, session_id: str) -> CloseSessionResult:
        """Close a browser session: its tabs, cookies and storage are gone."""
        closed = await self.host.close_session(self.calls.key(ctx, session_id))
        return CloseSessionResult(session_id=session_id, closed=closed)

    async def list_sessions(self, ctx: Context) -> ListSessionsResult:
        """Your open browser sessions with their tabs."""
        found: list[SessionInfo] = []
        now = time.monotonic()
        for (scope, name), session in list(self.host.sessions.items()):
            if scope == ctx.session_id:
                found.append(
                    SessionInfo(
                        session_id=name,
                        tabs=await session.tabs(),
                        idle_seconds=round(now - session.last_used, 1),
                    )
                )
        return ListSessionsResult(sessions=found, max_sessions=self.options.max_sessions)


def create_server(config: ServerConfig) -> Server:
    """The browser server; options (``config.options``) are listed on `BrowserOptions`.

    Downloads are saved under ``exports/downloads/`` of ``config.workspace_root`` when
    one is set, and refused otherwise.

    Raises:
        ValueError: the options are invalid.
    """
    options = parse_options(config.options)
    downloads = (
        Path(config.workspace_root) / "exports" / "downloads"
        if config.workspace_root is not None
        else None
    )
    host = BrowserHost(options, downloads)
    tools = _BrowserTools(PageCalls(host))
    server = Server(
        SERVER_NAME,
        description="A real Chromium: open pages, read them as accessibility trees, act on refs",
    )

    @server.on_shutdown
    async def _close() -> None:
        await host.aclose()

    @server.service_context
    def _context() -> str:
        return (
            "You can browse the web with the browser tools. navigate opens a URL; snapshot "
            "shows the page as a tree where each interactive element has a [ref=eN]; click, "
            "type_text, select_option and read_text take that ref. Every action answers with "
            "what changed, so you rarely need a new snapshot. Refs are valid until the page "
            "navigates."
        )

    server.tool(render=render_navigate, annotations=_ACTS)(tools.navigate)
    server.tool(annotations=_ACTS)(tools.go_back)
    server.tool(annotations=_ACTS)(tools.go_forward)
    server.tool(annotations=_ACTS)(tools.tabs)
    server.tool(annotations=_READS)(tools.snapshot)
    server.tool(render=render_read_text, annotations=_READS)(tools.read_text)
    server.tool(annotations=_READS)(tools.screenshot)
    server.tool(annotations=_READS)(tools.wait_for_text)
    server.tool(annotations=_ACTS)(tools.click)
    server.tool(annotations=_ACTS)(tools.type_text)
    server.tool(annotations=_ACTS)(tools.select_option)
    server.tool(annotations=_ACTS)(tools.press_key)
    server.tool(annotations=_RUNS_SCRIPT)(tools.execute_script)
    server.tool(render=render_close_session, annotations=_FORGETS)(tools.close_session)
    server.tool(render=render_sessions, annotations=_READS)(tools.list_sessions)
    return server
