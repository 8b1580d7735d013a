"""One Chromium per worker, one browser context per session, tabs and their snapshots.

`BrowserHost` starts Playwright and Chromium on the first call that needs a page (with
the reaper of `_reaper` armed first), gives each session key its own context (no shared
cookies or storage), closes sessions left idle, and after a crash (Chromium killed, the
driver gone) drops every session so the next call starts a fresh browser.

A session key is ``(caller scope, name)``: the caller scope is the call's
``ctx.session_id`` (one per MCP client under ``serve``), so two clients asking for the
same session name still get two contexts and never see each other's pages. The same
scope is the caller whose sessions `BrowserOptions.max_sessions` counts (calls with no
scope, such as sessionless HTTP clients', count as one caller).

Everything here runs on the worker's asyncio event loop (Playwright's async API needs
asyncio); each session's calls take its lock, so one session's actions never
interleave.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from nativemcp.protocol import ToolError
from nativemcp.workers.telemetry import setup_span

from ._aria import clickable_refs, compact, parse_snapshot, refs_of, render
from ._egress import EgressProxy
from ._guard import UrlPolicy
from ._models import SnapshotNode, TabInfo
from ._options import BrowserOptions

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Download,
        Frame,
        Page,
        Playwright,
    )

__all__ = ["LONGEST_TMPDIR", "BrowserHost", "PageState", "Session", "SessionKey"]

SessionKey = tuple[str | None, str]
"""``(the call's ctx.session_id, the session's name)``."""

LONGEST_TMPDIR: Final = 107 - len("/org.chromium.Chromium.XXXXXX/SingletonSocket")
"""The longest TMPDIR (bytes) Chromium starts under: it makes its singleton socket in a
folder there, and a Unix socket's path holds at most 107 bytes (it aborts with "Socket
path too long" otherwise)."""

CHROMIUM_FLAGS: Final = (
    # Root in a container has no user namespaces for Chromium's sandbox.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--mute-audio",
    # WebRTC opens its own sockets, around any proxy: STUN and TURN over UDP, host
    # candidates, mDNS. With this policy it sends no UDP at all and its TCP (TURN over
    # TCP and TLS) goes through the session's proxy as a CONNECT, which the URL policy
    # judges like any tunnel. (--force-webrtc-ip-handling-policy, tried alone, left
    # every STUN packet going out in this Chromium; tests/workers/browser/
    # test_browser_side_channels.py counts the packets.)
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # The next two are belts to the proxy's braces (the test passes without them):
    # HTTP/3 and WebTransport are QUIC over UDP, which Chromium does not speak through
    # an HTTP proxy; now it never tries. And Chromium resolves no name itself (DNS
    # prefetch, anything that would look a name up around the proxy); the proxy,
    # reached by its IP, resolves and checks.
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
"""Chromium's command-line flags: headless on a server, nothing phoning home, nothing
leaving the browser except through the session's egress proxy."""
_SWEEP_EVERY: Final = 30.0
"""The longest pause between two looks for idle sessions, in seconds."""
_SAFE_NAME: Final = re.compile(r"[^A-Za-z0-9._ -]+")


@dataclass
class PageState:
    """The latest snapshot of one tab: its rendering, its tree and the refs it holds."""

    tree: list[SnapshotNode] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    refs: set[str] = field(default_factory=set)
    navigated: bool = False
    """The tab loaded another document since the snapshot (its refs are gone)."""


class Session:
    """One browser context (cookies, storage, tabs) under one session key."""

    def __init__(
        self,
        key: SessionKey,
        context: BrowserContext,
        host: BrowserHost,
        egress: EgressProxy,
        refused: list[str],
    ) -> None:
        self.key = key
        self.context = context
        self.egress = egress
        self.browser = context.browser
        self.pages: list[Page] = []
        self.states: dict[Page, PageState] = {}
        self.active = 0
        self.lock = asyncio.Lock()
        self.last_used = time.monotonic()
        self.refused = refused
        """Requests refused since the last call looked (``URL: why``; the egress proxy
        appends to it)."""
        self.downloads: list[str] = []
        """Files saved since the last call looked (paths in the workspace)."""
        self.saving: set[asyncio.Future[None]] = set()
        """Downloads being written."""
        self._host = host

    @property
    def name(self) -> str:
        return self.key[1]

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def adopt(self, page: Page) -> None:
        """Track a new tab (opened by us or by the page); over the limit, close it."""
        if page in self.states:
            return
        if len(self.pages) >= self._host.options.max_tabs:
            self.refused.append(
                f"{page.url or 'a new tab'}: over the limit of "
                f"{self._host.options.max_tabs} tabs (closed)"
            )
            asyncio.get_running_loop().create_task(page.close())
            return
        self.pages.append(page)
        self.states[page] = PageState()
        self.active = len(self.pages) - 1
        page.on("close", lambda _: self._forget(page))
        page.on("framenavigated", lambda frame: self._navigated(page, frame))
        save = self._host.save_download(self)
        page.on("download", lambda download: self.saving.add(asyncio.ensure_future(save(download))))

    def _forget(self, page: Page) -> None:
        if page in self.states:
            index = self.pages.index(page)
            self.pages.remove(page)
            del self.states[page]
            if self.active >= index and self.active > 0:
                self.active -= 1

    def _navigated(self, page: Page, frame: Frame) -> None:
        state = self.states.get(page)
        if state is not None and frame == page.main_frame:
            state.refs.clear()
            state.navigated = True

    async def page(self) -> Page:
        """The active tab (a fresh one when every tab was closed)."""
        if not self.pages:
            self.adopt(await self.context.new_page())
        return self.pages[self.active]

    def state(self, page: Page) -> PageState:
        return self.states.setdefault(page, PageState())

    async def capture(self, page: Page) -> PageState:
        """Snapshot ``page`` now; its refs are the ones actions accept from here on."""
        yaml = await page.aria_snapshot(mode="ai")
        tree = compact(parse_snapshot(yaml), clickable_refs(yaml))
        state = self.state(page)
        state.tree = tree
        state.lines = render(tree)
        state.refs = set(refs_of(tree))
        state.navigated = False
        return state

    async def tabs(self) -> list[TabInfo]:
        """Every tab with its URL and title."""
        infos: list[TabInfo] = []
        for index, page in enumerate(self.pages):
            title = ""
            with contextlib.suppress(Exception):  # a tab closing under us has no title
                title = await page.title()
            infos.append(
                TabInfo(index=index, url=page.url, title=title, active=index == self.active)
            )
        return infos

    def take_refused(self) -> list[str]:
        refused = list(self.refused)
        self.refused.clear()
        return refused

    async def take_downloads(self, timeout: float) -> list[str]:
        """The files saved since the last look, once the ones being written are done."""
        if self.saving:
            pending, self.saving = self.saving, set()
            await asyncio.wait(pending, timeout=timeout)
        saved, self.downloads = self.downloads, []
        return saved


class BrowserHost:
    """Chromium for one worker: started on first use, sessions by key, crash recovery."""

    def __init__(self, options: BrowserOptions, downloads: Path | None) -> None:
        self.options = options
        self.policy = UrlPolicy.build(options.allowed_origins, options.allow_private_network)
        self.downloads = downloads
        self.sessions: dict[SessionKey, Session] = {}
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self._scratch: Path | None = None
        self._start_lock = asyncio.Lock()
        self._sweeper: asyncio.Task[None] | None = None
        self._closing_proxies: set[asyncio.Future[None]] = set()
        """Egress proxies of a lost browser, closing (see `_lost`)."""
        self._closing = False

    # -- the browser ------------------------------------------------------------------

    def _arm_reaper(self) -> Path:
        """The reaper, started if none runs; the scratch folder it removes at the end."""
        from ._reaper import MARKER_VARIABLE, start_reaper

        if self._reaper is not None and self._reaper.poll() is None and self._scratch:
            return self._scratch
        value = f"{os.getpid()}-{secrets.token_hex(6)}"
        # Inherited by the driver and every Chromium process started from now on.
        os.environ[MARKER_VARIABLE] = value
        self._scratch = Path(tempfile.mkdtemp(prefix="nativemcp-browser-"))
        self._reaper = start_reaper(value, self._scratch)
        return self._scratch

    def _check_executable(self) -> None:
        # A stat: too quick to hand to a thread.
        if not os.path.exists(self.options.executable_path):
            raise ToolError(
                f"Error: no Chromium at {self.options.executable_path} (install Debian's "
                "chromium package, or set NATIVEMCP_CHROMIUM / the executable_path option)",
                structured_content={"error": "no_browser"},
            )

    async def _ready(self) -> Browser:
        async with self._start_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            await self._stop_browser()
            self._check_executable()
            scratch = self._arm_reaper()
            from playwright.async_api import async_playwright

            # The driver makes Chromium's profile and its artifacts under its TMPDIR,
            # read from the environment as it starts (as is the marker): in the scratch
            # folder, the reaper removes them even when a SIGKILL left them behind. Not
            # where Chromium could not start: it makes its singleton socket under
            # TMPDIR, and a socket's path is short.
            fits = len(os.fsencode(scratch)) <= LONGEST_TMPDIR
            with setup_span("browser launch"):  # the first call's trace shows its time
                with _environment("TMPDIR", str(scratch)) if fits else contextlib.nullcontext():
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self.options.executable_path,
                    headless=self.options.headless,
                    args=list(CHROMIUM_FLAGS),
                    timeout=self.options.page_timeout * 1000,
                )
            browser = self._browser
            browser.on("disconnected", lambda _: self._lost(browser))
            if self._sweeper is None:
                self._sweeper = asyncio.get_running_loop().create_task(self._sweep_idle())
            return browser

    def _lost(self, browser: Browser) -> None:
        """Chromium went away: its sessions are gone; the next call starts a new one."""
        if browser is not self._browser:
            return
        self._browser = None
        for key in [k for k, s in self.sessions.items() if s.browser is browser]:
            # A Playwright event handler cannot wait: the closing is a task of its own,
            # which aclose waits for.
            closing = asyncio.ensure_future(self.sessions.pop(key).egress.aclose())
            self._closing_proxies.add(closing)
            closing.add_done_callback(self._closing_proxies.discard)

    def crashed(self, session: Session) -> bool:
        """Whether ``session``'s browser is gone (a crash, not a close of ours)."""
        browser = session.browser
        return not self._closing and (browser is None or not browser.is_connected())

    async def _stop_browser(self) -> None:
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        if browser is not None:
            with contextlib.suppress(Exception):  # it may have crashed already
                await browser.close()
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()

    async def aclose(self) -> None:
        """Close every session, Chromium and the driver; the reaper sweeps and exits."""
        self._closing = True
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            await asyncio.wait([sweeper])
        sessions = list(self.sessions.values())
        self.sessions.clear()
        for session in sessions:
            await session.egress.aclose()
        if self._closing_proxies:
            await asyncio.wait(self._closing_proxies)
        await self._stop_browser()
        reaper, self._reaper = self._reaper, None
        if reaper is not None and reaper.stdin is not None:
            reaper.stdin.close()  # end-of-file: the reaper kills what is left and exits

    # -- sessions ---------------------------------------------------------------------

    async def session(self, key: SessionKey, *, create: bool = True) -> Session:
        """The open session ``key``, or (with ``create``) a new one.

        Raises:
            ToolError: no session ``key`` is open and ``create`` is False (a read never
                opens one); the caller (``key[0]``) has `BrowserOptions.max_sessions`
                open already; or all callers together have
                `BrowserOptions.max_total_sessions`.
        """
        found = self.sessions.get(key)
        if found is not None and not self.crashed(found):
            return found
        if not create:
            raise ToolError(
                f"Error: no browser session {key[1]!r} is open; navigate opens one "
                "(list_sessions shows yours).",
                structured_content={"error": "no_session", "session_id": key[1]},
            )
        # Counted per caller, so that one caller cannot fill the limit for everyone.
        mine = sum(1 for scope, _ in self.sessions if scope == key[0])
        if mine >= self.options.max_sessions:
            raise ToolError(
                f"Error: you have {mine} browser sessions open, the limit per caller is "
                f"{self.options.max_sessions}; close one with close_session first.",
                structured_content={"error": "too_many_sessions"},
            )
        if len(self.sessions) >= self.options.max_total_sessions:
            raise ToolError(
                f"Error: the browser server has {len(self.sessions)} sessions open for all "
                f"its callers, its limit (max_total_sessions); try again when one closes.",
                structured_content={"error": "server_full"},
            )
        browser = await self._ready()
        refused: list[str] = []
        egress = EgressProxy(self.policy, refused.append)
        proxy = await egress.start()
        try:
            context = await browser.new_context(
                viewport={
                    "width": self.options.viewport_width,
                    "height": self.options.viewport_height,
                },
                accept_downloads=self.downloads is not None,
                # Every request leaves through the checking proxy (Playwright sends
                # loopback through it too); service workers' requests included.
                proxy={"server": proxy},
                service_workers="block",
            )
        except BaseException:
            await egress.aclose()
            raise
        context.set_default_timeout(self.options.action_timeout * 1000)
        context.set_default_navigation_timeout(self.options.page_timeout * 1000)
        session = Session(key, context, self, egress, refused)
        context.on("page", session.adopt)
        self.sessions[key] = session
        return session

    async def close_session(self, key: SessionKey) -> bool:
        """Close session ``key``; False when it was not open."""
        session = self.sessions.pop(key, None)
        if session is None:
            return False
        with contextlib.suppress(Exception):  # already gone with a crashed browser
            await session.context.close()
        await session.egress.aclose()
        return True

    async def _sweep_idle(self) -> None:
        interval = min(_SWEEP_EVERY, self.options.idle_timeout / 2)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for key, session in list(self.sessions.items()):
                idle = now - session.last_used > self.options.idle_timeout
                if idle and not session.lock.locked():
                    await self.close_session(key)

    # -- downloads --------------------------------------------------------------------

    def save_download(self, session: Session) -> Callable[[Download], Awaitable[None]]:
        """A ``download`` handler: into ``exports/downloads/`` of the workspace, or refused."""

        async def save(download: Download) -> None:
            if self.downloads is None:
                session.refused.append(f"{download.url}: downloads need a workspace")
                with contextlib.suppress(Exception):
                    await download.cancel()
                return
            name = _SAFE_NAME.sub("_", Path(download.suggested_filename).name).strip(" .")
            stem, dot, suffix = (name or "download").partition(".")
            self.downloads.mkdir(parents=True, exist_ok=True)
            target = self.downloads / (name or "download")
            counter = 1
            while target.exists():
                target = self.downloads / f"{stem}-{counter}{dot}{suffix}"
                counter += 1
            await download.save_as(target)
            session.downloads.append(f"exports/downloads/{target.name}")

        return save


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``os.environ[name]`` set to ``value`` inside the block, as it was after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
