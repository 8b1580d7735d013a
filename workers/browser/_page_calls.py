"""How a browser tool's work runs on a session's page (`PageCalls`).

Every tool's body runs through `PageCalls.run`: on the session's lock, with
Playwright's timeouts, errors and a crashed browser turned into tool errors that say
what happened. The page operations more than one tool needs live here too: checking a
URL against the policy, finding a ref's element (`locate`), what an action changed
(`after`), and navigation, history and tabs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar

from nativemcp.protocol import NativeMCPResponse, ToolError, structured_response
from nativemcp.workers import Context

from ._aria import count_interactive, describe, diff_lines, find
from ._models import ActionResult, NavigateResult
from ._render import render_action
from ._sessions import BrowserHost, Session, SessionKey

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

__all__ = ["DEFAULT_SESSION", "PageCalls"]

DEFAULT_SESSION: Final = "default"
"""The session a call without ``session_id`` uses (within the caller's scope)."""
_LOAD_GRACE_MS: Final = 2_000
"""After the document is parsed, how long navigate waits for images and scripts."""

T = TypeVar("T")


def _first_line(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return message.strip().splitlines()[0] if message.strip() else type(exc).__name__


class PageCalls:
    """What the tools share: the host, the options, and the calls' plumbing (a session's
    lock, Playwright's errors as tool errors, refs checked against the snapshot)."""

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
