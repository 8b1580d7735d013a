"""The browser server's tools: navigate, read the page as a tree, act on refs, screenshots.

Every tool answers twice: rich text for the model (the page as an indented tree with a
``[ref=eN]`` on each interactive element; after an action, what changed) and a typed
value for code. An action takes a ref from the latest snapshot of the active tab; a
ref the page no longer has is an error that says to take a new snapshot, never a click
somewhere else.
"""

from __future__ import annotations

import base64
import contextlib
import json
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal, TypeVar

import msgspec

from nativemcp.protocol import (
    ImageContent,
    NativeMCPResponse,
    ToolAnnotations,
    ToolError,
    structured_response,
)
from nativemcp.workers import Context, Server, ServerConfig

from ._aria import count_interactive, describe, diff_lines, find, refs_of
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
from ._render import (
    render_action,
    render_close_session,
    render_navigate,
    render_read_text,
    render_screenshot,
    render_sessions,
    render_snapshot,
)
from ._sessions import BrowserHost, Session, SessionKey

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

__all__ = ["DEFAULT_SESSION", "SERVER_NAME", "create_server"]

SERVER_NAME: Final = "browser"
"""The built-in server's name (``pool.server("browser")``)."""
DEFAULT_SESSION: Final = "default"
"""The session a call without ``session_id`` uses (within the caller's scope)."""
_LOAD_GRACE_MS: Final = 2_000
"""After the document is parsed, how long navigate waits for images and scripts."""

_OPENS_TAB: Final = """e => {
  const target = e.closest('a[href]')?.target ?? '';
  return target !== '' && !['_self', '_parent', '_top'].includes(target.toLowerCase());
}"""
"""Whether clicking the element opens a link in another tab."""

T = TypeVar("T")
_Ref = Annotated[
    str, msgspec.Meta(description="An element's ref from the latest snapshot, like e12.")
]
_SessionId = Annotated[
    str | None,
    msgspec.Meta(description="A named browser session (own cookies and tabs); omit for yours."),
]
_READS: Final = ToolAnnotations(read_only_hint=True, open_world_hint=True)
_ACTS: Final = ToolAnnotations(destructive_hint=False, open_world_hint=True)


def _first_line(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return message.strip().splitlines()[0] if message.strip() else type(exc).__name__


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


class _Tools:
    """The state the tools share: the host, the options, and the calls' plumbing."""

    def __init__(self, host: BrowserHost) -> None:
        self.host = host
        self.options = host.options

    async def check_url(self, url: str) -> None:
        """Refuse ``url`` before any page opens it, when the URL policy would."""
        reason = await self.host.policy.refusal(url)
        if reason is not None:
            hint = self.host.policy.how_to_allow(url, reason)
            raise ToolError(
                f"Error: refused to open {url}: {reason}." + (f" {hint}." if hint else ""),
                structured_content={"error": "url_refused", "url": url, "reason": reason},
            )

    async def refused_to_load(self, document: str, refused: list[str]) -> ToolError:
        """The error for a page whose ``document`` (``URL: why``, one of ``refused``)
        the proxy refused, with how to allow that URL."""
        url, _, reason = document.partition(": ")
        hint = self.host.policy.how_to_allow(url, reason)
        return ToolError(
            f"Error: refused to load {document}." + (f" {hint}." if hint else ""),
            structured_content={"error": "url_refused", "refused": refused},
        )

    def key(self, ctx: Context, session_id: str | None) -> SessionKey:
        return (ctx.session_id, session_id or DEFAULT_SESSION)

    async def run(
        self,
        ctx: Context,
        session_id: str | None,
        body: Callable[[Session], Awaitable[T]],
        *,
        create: bool = True,
    ) -> T:
        """``body`` on the session's lock, Playwright's failures turned into tool errors;
        without ``create`` (a read), a session that is not open is an error."""
        try:
            from playwright.async_api import Error, TimeoutError
        except ImportError:
            raise ToolError(
                "Error: the browser server needs Playwright for Python: "
                "pip install 'nativemcp[browser]'.",
                structured_content={"error": "no_playwright"},
            ) from None

        session = await self.host.session(self.key(ctx, session_id), create=create)
        async with session.lock:
            session.touch()
            try:
                return await body(session)
            except TimeoutError as exc:
                raise ToolError(
                    f"Error: timed out: {_first_line(exc)}",
                    structured_content={"error": "timeout"},
                ) from None
            except Error as exc:
                if self.host.crashed(session):
                    raise ToolError(
                        "Error: the browser closed unexpectedly (it crashed or was killed); "
                        f"session {session.name!r} and its pages are gone. The next call "
                        "starts a fresh browser.",
                        structured_content={"error": "browser_crashed"},
                    ) from None
                raise ToolError(
                    f"Error: {_first_line(exc)}", structured_content={"error": "browser_error"}
                ) from None
            finally:
                session.touch()

    async def locate(self, session: Session, ref: str) -> tuple[Page, Locator, str]:
        """The element ``ref`` names on the active tab, checked against the snapshot."""
        page = await session.page()
        state = session.state(page)
        node = find(state.tree, ref) if ref in state.refs else None
        if node is None:
            why = (
                "the page has navigated since the snapshot that showed it"
                if state.navigated
                else "it is not in the latest snapshot of this tab"
            )
            raise ToolError(
                f"Error: unknown ref {ref!r}: {why}. Take a new snapshot and use its refs.",
                structured_content={"error": "unknown_ref", "ref": ref},
            )
        locator = page.locator(f"aria-ref={ref}")
        if await locator.count() == 0:
            raise ToolError(
                f"Error: {describe(node)} [ref={ref}] is no longer on the page. "
                "Take a new snapshot and use its refs.",
                structured_content={"error": "stale_ref", "ref": ref},
            )
        return page, locator, f"{describe(node)} [ref={ref}]"

    async def settle(self, page: Page) -> None:
        """Let a navigation an action started reach a parsed document."""
        from playwright.async_api import Error

        with contextlib.suppress(Error):
            await page.wait_for_load_state(
                "domcontentloaded", timeout=self.options.page_timeout * 1000
            )

    async def after(
        self, session: Session, action: str, *, tabs_changed: bool = False
    ) -> NativeMCPResponse[ActionResult]:
        """The answer to an action: what it did, and how the page changed."""
        page = await session.page()
        await self.settle(page)
        before = session.state(page)
        old_lines, navigated = list(before.lines), before.navigated
        state = await session.capture(page)
        added, removed = ([], []) if navigated else diff_lines(old_lines, state.lines)
        result = ActionResult(
            session_id=session.name,
            action=action,
            url=page.url,
            title=await page.title(),
            navigated=navigated,
            added=added,
            removed=removed,
            tree=state.tree if navigated else None,
            tabs=await session.tabs() if tabs_changed else None,
            refused=session.take_refused(),
            downloads=await session.take_downloads(self.options.action_timeout),
        )
        text = render_action(result, state.lines, self.options.max_changes)
        return structured_response(text, result)

    async def navigate(self, session: Session, url: str) -> NavigateResult:
        """Open ``url`` in the active tab; a page still loading at the timeout answers too."""
        from playwright.async_api import Error, TimeoutError

        page = await session.page()
        session.take_refused()
        status: int | None = None
        loading = False
        try:
            response = await page.goto(url, wait_until="domcontentloaded")
            status = response.status if response is not None else None
        except TimeoutError:
            if page.url in ("", "about:blank"):
                raise ToolError(
                    f"Error: {url} did not answer within {self.options.page_timeout:g} s.",
                    structured_content={"error": "timeout", "url": url},
                ) from None
            loading = True  # the document arrived but never finished: show what is there
        except Error as exc:
            # A URL that is a file fails the navigation ("Download is starting", the
            # download event comes after it) while the download handler saves it: that
            # is an answer, not a failure.
            if "Download is starting" in str(exc) and not session.saving:
                with contextlib.suppress(Error):
                    await page.wait_for_event(
                        "download", timeout=self.options.action_timeout * 1000
                    )
            downloads = await session.take_downloads(self.options.action_timeout)
            refused = session.take_refused()
            if downloads:
                return NavigateResult(
                    session_id=session.name,
                    url=page.url,
                    title=await page.title(),
                    refused=refused,
                    downloads=downloads,
                )
            if refused:
                raise await self.refused_to_load(refused[0], refused) from None
            raise ToolError(
                f"Error: could not open {url}: {_first_line(exc)}",
                structured_content={"error": "navigation_failed", "url": url},
            ) from None
        document = next((r for r in session.refused if r.startswith(f"{page.url}: ")), None)
        if document is not None:  # the proxy's 403 stands where the page would be
            await page.goto("about:blank")
            raise await self.refused_to_load(document, session.take_refused())
        if not loading:
            with contextlib.suppress(Error):
                await page.wait_for_load_state("load", timeout=_LOAD_GRACE_MS)
        state = await session.capture(page)
        # The model has not seen this page's refs yet, and a new document numbers its
        # refs afresh: an old ref must not reach an element of this page by its number.
        state.refs.clear()
        state.navigated = True
        return NavigateResult(
            session_id=session.name,
            url=page.url,
            title=await page.title(),
            status=status,
            loading=loading,
            interactive=count_interactive(state.tree),
            refused=session.take_refused(),
        )

    async def history(self, session: Session, *, back: bool) -> NativeMCPResponse[ActionResult]:
        """One step back or forward in the active tab's history."""
        page = await session.page()
        step = page.go_back if back else page.go_forward
        if await step(wait_until="domcontentloaded") is None:
            where = "previous" if back else "next"
            raise ToolError(
                f"Error: there is no {where} page in this tab's history.",
                structured_content={"error": "no_history"},
            )
        return await self.after(session, f"Went {'back' if back else 'forward'} to {page.url}.")

    async def tabs(
        self, session: Session, action: str, index: int | None, url: str | None
    ) -> NativeMCPResponse[ActionResult]:
        """List, open, select or close a tab of the session."""
        if action == "new":
            if len(session.pages) >= self.options.max_tabs:
                raise ToolError(
                    f"Error: this session has {len(session.pages)} tabs, the limit; "
                    "close one first.",
                    structured_content={"error": "too_many_tabs"},
                )
            session.adopt(await session.context.new_page())
            if url is not None:
                await self.navigate(session, url)
            return await self.after(session, "Opened a new tab.", tabs_changed=True)
        if action in ("select", "close"):
            chosen = session.active if index is None else index
            if action == "select" and index is None:
                raise ToolError("Error: select needs the tab's index (see tabs list).")
            if not 0 <= chosen < len(session.pages):
                raise ToolError(
                    f"Error: no tab {chosen}; this session has tabs 0 to {len(session.pages) - 1}.",
                    structured_content={"error": "unknown_tab", "index": chosen},
                )
            if action == "select":
                session.active = chosen
                await session.pages[chosen].bring_to_front()
            else:
                await session.pages[chosen].close()
            done = "Selected" if action == "select" else "Closed"
            return await self.after(session, f"{done} tab {chosen}.", tabs_changed=True)
        return await self.after(session, "Listed the tabs.", tabs_changed=True)


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
    tools = _Tools(host)
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

    for register in (_navigation_tools, _reading_tools, _action_tools, _session_tools):
        register(server, tools)
    return server


def _navigation_tools(server: Server, tools: _Tools) -> None:
    """Open pages; move through a tab's history and the session's tabs."""

    @server.tool(render=render_navigate, annotations=_ACTS)
    async def navigate(ctx: Context, url: str, session_id: _SessionId = None) -> NavigateResult:
        """Open an http(s) URL in the session's active tab; answers with the page's title,
        URL and how many interactive elements it has (snapshot shows them with refs)."""
        await tools.check_url(url)
        return await tools.run(ctx, session_id, lambda s: tools.navigate(s, url))

    @server.tool(annotations=_ACTS)
    async def go_back(
        ctx: Context, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Go back one page in the active tab's history."""
        return await tools.run(ctx, session_id, lambda s: tools.history(s, back=True))

    @server.tool(annotations=_ACTS)
    async def go_forward(
        ctx: Context, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Go forward one page in the active tab's history."""
        return await tools.run(ctx, session_id, lambda s: tools.history(s, back=False))

    @server.tool(annotations=_ACTS)
    async def tabs(
        ctx: Context,
        action: Literal["list", "new", "select", "close"] = "list",
        index: Annotated[int, msgspec.Meta(ge=0)] | None = None,
        url: str | None = None,
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """List the session's tabs, open a new one (at url), select one or close one (by
        index; close without index closes the active tab)."""
        if url is not None:
            await tools.check_url(url)
        return await tools.run(ctx, session_id, lambda s: tools.tabs(s, action, index, url))


def _reading_tools(server: Server, tools: _Tools) -> None:
    """Read the active tab; a read never opens a session."""
    options = tools.options

    @server.tool(annotations=_READS)
    async def snapshot(
        ctx: Context, session_id: _SessionId = None
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

        return await tools.run(ctx, session_id, body, create=False)

    @server.tool(render=render_read_text, annotations=_READS)
    async def read_text(
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
                _, locator, _ = await tools.locate(session, ref)
                text = await locator.inner_text()
            limit = options.max_text_chars
            return ReadTextResult(
                session_id=session.name, ref=ref, text=text[:limit], truncated=len(text) > limit
            )

        return await tools.run(ctx, session_id, body, create=False)

    @server.tool(annotations=_READS)
    async def screenshot(
        ctx: Context, session_id: _SessionId = None, full_page: bool = False
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

        return await tools.run(ctx, session_id, body, create=False)

    @server.tool(annotations=_READS)
    async def wait_for_text(
        ctx: Context,
        text: str,
        gone: Annotated[
            bool, msgspec.Meta(description="Wait for the text to disappear instead.")
        ] = False,
        timeout: Annotated[float, msgspec.Meta(gt=0, description="Seconds.")] | None = None,
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """Wait until ``text`` shows on the page (or, with gone, until it is gone)."""
        seconds = min(timeout or options.action_timeout, options.page_timeout)

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            page = await session.page()
            target = page.get_by_text(text).first
            await target.wait_for(state="hidden" if gone else "visible", timeout=seconds * 1000)
            quoted = json.dumps(text, ensure_ascii=False)
            return await tools.after(session, f"Text {quoted} is {'gone' if gone else 'shown'}.")

        return await tools.run(ctx, session_id, body, create=False)


def _action_tools(server: Server, tools: _Tools) -> None:
    """Act on the elements of the latest snapshot, or run a script."""
    options = tools.options

    @server.tool(annotations=_ACTS)
    async def click(
        ctx: Context, ref: _Ref, session_id: _SessionId = None
    ) -> NativeMCPResponse[ActionResult]:
        """Click the element with this ref; answers with what changed on the page."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            _, locator, what = await tools.locate(session, ref)
            tabs_before = len(session.pages)
            if await locator.evaluate(_OPENS_TAB):
                # The new tab's page event comes after the click returns: wait for it.
                async with session.context.expect_page():
                    await locator.click()
            else:
                await locator.click()
            return await tools.after(
                session, f"Clicked {what}.", tabs_changed=len(session.pages) != tabs_before
            )

        return await tools.run(ctx, session_id, body)

    @server.tool(annotations=_ACTS)
    async def type_text(
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
            _, locator, what = await tools.locate(session, ref)
            await locator.fill(text)
            if submit:
                await locator.press("Enter")
            done = f"Typed {len(text)} characters into {what}" + (
                " and pressed Enter." if submit else "."
            )
            return await tools.after(session, done)

        return await tools.run(ctx, session_id, body)

    @server.tool(annotations=_ACTS)
    async def select_option(
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
            _, locator, what = await tools.locate(session, ref)
            chosen = await locator.select_option(values)
            return await tools.after(session, f"Selected {', '.join(chosen)} in {what}.")

        return await tools.run(ctx, session_id, body)

    @server.tool(annotations=_ACTS)
    async def press_key(
        ctx: Context,
        key: Annotated[
            str, msgspec.Meta(description="A key or chord: Enter, Escape, ArrowDown, Control+A.")
        ],
        session_id: _SessionId = None,
    ) -> NativeMCPResponse[ActionResult]:
        """Press a key in the active tab (on the focused element); answers with what changed."""

        async def body(session: Session) -> NativeMCPResponse[ActionResult]:
            page = await session.page()
            await page.keyboard.press(key)
            return await tools.after(session, f"Pressed {key}.")

        return await tools.run(ctx, session_id, body)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True))
    async def execute_script(
        ctx: Context,
        script: Annotated[
            str,
            msgspec.Meta(description="A JavaScript expression or function, run in the page."),
        ],
        session_id: _SessionId = None,
    ) -> ScriptResult:
        """Run JavaScript in the active tab and return its (JSON) value. Off unless the
        server's execute_script option enables it."""
        if not options.execute_script:
            raise ToolError(
                "Error: execute_script is disabled on this server (the pool enables it with "
                "options={'browser': {'execute_script': True}}).",
                structured_content={"error": "script_disabled"},
            )

        async def body(session: Session) -> ScriptResult:
            page = await session.page()
            value = await page.evaluate(script)
            return ScriptResult(session_id=session.name, value=value)

        return await tools.run(ctx, session_id, body)


def _session_tools(server: Server, tools: _Tools) -> None:
    """Close a session; list the caller's."""
    options = tools.options
    host = tools.host

    @server.tool(
        render=render_close_session,
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    )
    async def close_session(ctx: Context, session_id: str) -> CloseSessionResult:
        """Close a browser session: its tabs, cookies and storage are gone."""
        closed = await host.close_session(tools.key(ctx, session_id))
        return CloseSessionResult(session_id=session_id, closed=closed)

    @server.tool(render=render_sessions, annotations=_READS)
    async def list_sessions(ctx: Context) -> ListSessionsResult:
        """Your open browser sessions with their tabs."""
        found: list[SessionInfo] = []
        now = time.monotonic()
        for (scope, name), session in list(host.sessions.items()):
            if scope == ctx.session_id:
                found.append(
                    SessionInfo(
                        session_id=name,
                        tabs=await session.tabs(),
                        idle_seconds=round(now - session.last_used, 1),
                    )
                )
        return ListSessionsResult(sessions=found, max_sessions=options.max_sessions)
