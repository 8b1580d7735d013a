"""The browser server's tools on real Chromium, over local pages served in the test.

One pool (one worker, one Chromium) serves the module; the pages are on loopback, so
the pool lists their origin in ``browser_allowed_origins`` (without it loopback is
refused: see test_browser_safety.py). Sessions are named per test so tests do not see
each other's pages.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _browser_pages import PageServer, require_chromium

from nativemcp.protocol import ImageContent, NativeMCPResponse, TextContent, ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers.browser import (
    ActionResult,
    BrowserAPI,
    NavigateResult,
    SnapshotNode,
    SnapshotResult,
)

require_chromium()

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


@pytest.fixture(scope="module")
async def pool(
    site: PageServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WorkerPool]:
    folder = tmp_path_factory.mktemp("browser")
    async with WorkerPool(
        data_dir=folder / "data",
        workspace_root=folder / "workspace",
        builtins=["browser"],
        browser_allowed_origins=[site.base],
        options={
            "browser": {
                "page_timeout": 4,
                "action_timeout": 4,
                "max_sessions": 4,
                "max_total_sessions": 5,
            }
        },
        timeout=60,
    ) as pool:
        yield pool


@pytest.fixture
async def browser(pool: WorkerPool) -> AsyncIterator[BrowserAPI]:
    api = pool.server(BrowserAPI)
    yield api
    # Each test's sessions close with it: the pool allows a few at a time.
    for session in (await api.list_sessions()).sessions:
        await api.close_session(session_id=session.session_id)


def walk(nodes: list[SnapshotNode]) -> Iterator[SnapshotNode]:
    for node in nodes:
        yield node
        yield from walk(node.children)


def ref_of(snapshot: SnapshotResult, role: str, name: str) -> str:
    for node in walk(snapshot.tree):
        if node.role == role and node.name == name and node.ref is not None:
            return node.ref
    raise AssertionError(f"no {role} {name!r} with a ref in {snapshot.tree}")


def _text(response: NativeMCPResponse[Any]) -> str:
    assert response.result is not None, response.error
    block = response.result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def text_of(pool: WorkerPool, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    response = await pool.server("browser").call_tool(tool, arguments)
    text = _text(response)
    assert response.result is not None
    return text, bool(response.result.is_error)


async def test_navigate_answers_with_title_url_status_and_the_interactive_elements(
    browser: BrowserAPI, pool: WorkerPool, site: PageServer
) -> None:
    result = await browser.navigate(url=f"{site.base}/", session_id="nav")
    assert isinstance(result, NavigateResult)
    assert (result.title, result.url, result.status) == ("Home", f"{site.base}/", 200)
    assert result.interactive == {"link": 3}
    text, failed = await text_of(pool, "navigate", {"url": f"{site.base}/", "session_id": "nav"})
    assert not failed
    assert text.startswith(f'Navigated to "Home" {site.base}/ (HTTP 200)')
    assert "link 3" in text


async def test_snapshot_text_gives_each_interactive_element_a_ref_and_the_value_the_same_tree(
    browser: BrowserAPI, pool: WorkerPool, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/form", session_id="snap")
    snapshot = await browser.snapshot(session_id="snap")
    text, _ = await text_of(pool, "snapshot", {"session_id": "snap"})
    assert text.splitlines()[0] == f'Page: "Sign up" {site.base}/form'
    interactive = [
        ("textbox", "Name"),
        ("combobox", "Role"),
        ("checkbox", "I agree"),
        ("button", "Send"),
        ("button", "Remove me"),
    ]
    for role, name in interactive:
        ref = ref_of(snapshot, role, name)
        assert f'{role} "{name}" [ref={ref}]' in text
    assert snapshot.refs == [ref_of(snapshot, role, name) for role, name in interactive]
    # Headings read as Markdown, with no ref: only what can be acted on has one.
    assert "## Sign up" in text.splitlines()
    assert all(node.ref is None for node in walk(snapshot.tree) if node.role == "heading")
    # A closed drop-down lists its options on one line, the selected one starred.
    assert "Developer*, Operator" in text


async def test_a_form_filled_and_submitted_answers_each_step_with_what_changed(
    browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/form", session_id="form")
    snapshot = await browser.snapshot(session_id="form")
    typed = await browser.type_text(
        ref=ref_of(snapshot, "textbox", "Name"), text="Ada", session_id="form"
    )
    assert isinstance(typed, ActionResult)
    assert not typed.navigated
    assert any(line.endswith(": Ada") for line in typed.added)
    chosen = await browser.select_option(
        ref=ref_of(snapshot, "combobox", "Role"), values=["Operator"], session_id="form"
    )
    assert any("Developer, Operator*" in line for line in chosen.added)
    checked = await browser.click(ref=ref_of(snapshot, "checkbox", "I agree"), session_id="form")
    assert any("[checked]" in line for line in checked.added)
    sent = await browser.click(ref=ref_of(snapshot, "button", "Send"), session_id="form")
    assert sent.navigated
    assert sent.url.startswith(f"{site.base}/done?name=Ada&role=Operator")
    assert sent.title == "Thanks"
    assert sent.tree is not None
    assert "Received Ada" in [node.name or node.text for node in walk(sent.tree)]


async def test_type_text_with_submit_presses_enter(browser: BrowserAPI, site: PageServer) -> None:
    await browser.navigate(url=f"{site.base}/form", session_id="submit")
    snapshot = await browser.snapshot(session_id="submit")
    sent = await browser.type_text(
        ref=ref_of(snapshot, "textbox", "Name"), text="Grace", submit=True, session_id="submit"
    )
    assert sent.navigated
    assert "name=Grace" in sent.url


async def test_dynamic_content_shows_in_the_changes_and_wait_for_text_waits_for_it(
    browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/dynamic", session_id="dyn")
    snapshot = await browser.snapshot(session_id="dyn")
    shown = await browser.click(ref=ref_of(snapshot, "button", "Show"), session_id="dyn")
    assert shown.added == ["Shown after the click"]
    assert shown.removed == []
    await browser.click(ref=ref_of(snapshot, "button", "Later"), session_id="dyn")
    waited = await browser.wait_for_text(text="Late button", session_id="dyn")
    assert any(line.startswith('button "Late button" [ref=') for line in waited.added)


async def test_a_ref_from_before_a_navigation_is_an_error_never_a_click(
    browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/form", session_id="stale")
    old = await browser.snapshot(session_id="stale")
    send = ref_of(old, "button", "Send")
    await browser.navigate(url=f"{site.base}/dynamic", session_id="stale")
    with pytest.raises(ToolError, match=r"unknown ref .*navigated.*new snapshot") as caught:
        await browser.click(ref=send, session_id="stale")
    assert caught.value.structured_content == {"error": "unknown_ref", "ref": send}
    # Nothing was clicked: the dynamic page is as it loaded.
    page = await browser.read_text(session_id="stale")
    assert "Shown after the click" not in page.text
    with pytest.raises(ToolError, match="unknown ref 'e999'"):
        await browser.click(ref="e999", session_id="stale")


async def test_a_ref_whose_element_left_the_page_is_an_error(
    browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/form", session_id="removed")
    snapshot = await browser.snapshot(session_id="removed")
    gone = ref_of(snapshot, "button", "Remove me")
    removed = await browser.click(ref=gone, session_id="removed")
    assert f'button "Remove me" [ref={gone}]' in removed.removed
    with pytest.raises(ToolError, match=r"unknown ref|no longer on the page"):
        await browser.click(ref=gone, session_id="removed")


async def test_screenshot_is_an_image_block_of_a_png(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer
) -> None:
    proxy = pool.server("browser")
    await proxy.call_tool("navigate", {"url": f"{site.base}/", "session_id": "shot"})
    response = await proxy.call_tool("screenshot", {"session_id": "shot"})
    assert response.result is not None
    text, image = response.result.content
    assert isinstance(text, TextContent) and "1280x800 px" in text.text
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert response.result.structured_content is not None
    assert response.result.structured_content["size"] == len(data)
    full = await browser.screenshot(session_id="shot", full_page=True)
    assert full.full_page and full.width == 1280
    # Through the catalog (the LLM's path) every block, the image too, names its source.
    tagged = await pool.call_tool("builtin_browser__screenshot", {"session_id": "shot"})
    assert tagged.result is not None
    for block in tagged.result.content:
        assert isinstance(block, TextContent | ImageContent) and block.meta is not None
        assert block.meta["io.github.nativemcp/service"] == {
            "serverName": "browser",
            "toolName": "screenshot",
            "backendType": "BuiltInWeb",
        }


async def test_sessions_have_their_own_cookies_and_callers_their_own_sessions(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer
) -> None:
    first = await browser.navigate(url=f"{site.base}/dynamic", session_id="cookies-a")
    again = await browser.navigate(url=f"{site.base}/dynamic", session_id="cookies-a")
    other = await browser.navigate(url=f"{site.base}/dynamic", session_id="cookies-b")
    assert "visited=once" in first.title
    assert "visited=again" in again.title
    assert "visited=once" in other.title  # no cookie shared between sessions
    # Two callers (two MCP clients under `serve`) with the same session name: two contexts.
    proxy = pool.server("browser")
    for client in ("client-1", "client-2"):
        response = await proxy.call_tool(
            "navigate", {"url": f"{site.base}/dynamic"}, session_id=client
        )
        assert "visited=once" in _text(response)
    listed = await proxy.call_tool("list_sessions", {}, session_id="client-1")
    assert listed.structured_result is not None
    assert [s["sessionId"] for s in listed.structured_result["sessions"]] == ["default"]
    for client in ("client-1", "client-2"):
        await proxy.call_tool("close_session", {"session_id": "default"}, session_id=client)


async def test_a_session_over_the_limit_is_refused_until_one_closes(
    browser: BrowserAPI, site: PageServer
) -> None:
    for number in range(4):
        await browser.navigate(url=f"{site.base}/", session_id=f"limit-{number}")
    with pytest.raises(ToolError, match="you have 4 browser sessions open, the limit per caller"):
        await browser.navigate(url=f"{site.base}/", session_id="limit-4")
    await browser.close_session(session_id="limit-0")
    await browser.navigate(url=f"{site.base}/", session_id="limit-4")


async def test_close_session_forgets_its_pages_and_list_sessions_shows_the_rest(
    browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/", session_id="to-close")
    listed = await browser.list_sessions()
    assert "to-close" in [session.session_id for session in listed.sessions]
    closed = await browser.close_session(session_id="to-close")
    assert closed.closed
    assert not (await browser.close_session(session_id="to-close")).closed
    listed = await browser.list_sessions()
    assert "to-close" not in [session.session_id for session in listed.sessions]


async def test_history_tabs_and_read_text(browser: BrowserAPI, site: PageServer) -> None:
    await browser.navigate(url=f"{site.base}/", session_id="hist")
    await browser.navigate(url=f"{site.base}/form", session_id="hist")
    back = await browser.go_back(session_id="hist")
    assert back.navigated and back.title == "Home"
    forward = await browser.go_forward(session_id="hist")
    assert forward.title == "Sign up"
    with pytest.raises(ToolError, match="no next page"):
        await browser.go_forward(session_id="hist")
    await browser.navigate(url=f"{site.base}/popup", session_id="hist")
    snapshot = await browser.snapshot(session_id="hist")
    opened = await browser.click(
        ref=ref_of(snapshot, "link", "Home in a new tab"), session_id="hist"
    )
    assert opened.tabs is not None
    assert [tab.active for tab in opened.tabs] == [False, True]
    assert opened.title == "Home"
    selected = await browser.tabs(action="select", index=0, session_id="hist")
    assert selected.title == "Popups"
    closed = await browser.tabs(action="close", index=1, session_id="hist")
    assert closed.tabs is not None and len(closed.tabs) == 1
    table = await browser.read_text(session_id="hist")
    assert "Home in a new tab" in table.text
    with pytest.raises(ToolError, match="no tab 5"):
        await browser.tabs(action="select", index=5, session_id="hist")


async def test_execute_script_is_off_unless_the_pool_enables_it(
    pool: WorkerPool, browser: BrowserAPI
) -> None:
    text, failed = await text_of(pool, "execute_script", {"script": "1 + 1"})
    assert failed
    assert "execute_script is disabled" in text


async def test_a_slow_page_is_waited_for_and_a_page_that_never_finishes_answers_what_loaded(
    browser: BrowserAPI, site: PageServer
) -> None:
    slow = await browser.navigate(url=f"{site.base}/slow", session_id="slow")
    assert (slow.title, slow.loading) == ("Slow", False)
    with anyio.fail_after(30):
        hang = await browser.navigate(url=f"{site.base}/hang", session_id="slow")
    assert hang.loading
    assert hang.title == "Never done"
    assert hang.interactive == {"link": 1}


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "data:text/html,<h1>hi</h1>",
        "chrome://settings",
        "javascript:alert(1)",
        "/relative/path",
        "http://:80/",
    ],
)
async def test_non_http_urls_are_refused_with_a_one_line_error_and_the_worker_serves_on(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer, url: str
) -> None:
    text, failed = await text_of(pool, "navigate", {"url": url, "session_id": "bad"})
    assert failed
    assert text.startswith(f"Error: refused to open {url}:")
    assert len(text.splitlines()) == 1
    again, failed = await text_of(pool, "navigate", {"url": f"{site.base}/", "session_id": "bad"})
    assert not failed and "Home" in again


async def test_a_download_lands_in_the_workspace_exports_under_a_safe_name(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/files", session_id="dl")
    snapshot = await browser.snapshot(session_id="dl")
    # The server names the file ../../report.csv: it lands inside exports/downloads/.
    clicked = await browser.click(ref=ref_of(snapshot, "link", "Get the report"), session_id="dl")
    workspace = pool.config.workspace_root
    assert workspace is not None
    downloads = Path(workspace) / "exports" / "downloads"
    (saved,) = downloads.iterdir()
    assert clicked.downloads == [f"exports/downloads/{saved.name}"]
    assert saved.name.endswith("report.csv")
    assert saved.read_bytes() == b"a,b\n1,2\n"
    assert not (Path(workspace).parent / "report.csv").exists()


async def test_navigating_to_a_file_says_where_it_was_saved(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer
) -> None:
    await browser.navigate(url=f"{site.base}/files", session_id="file-url")
    text, failed = await text_of(
        pool, "navigate", {"url": f"{site.base}/report.csv", "session_id": "file-url"}
    )
    assert not failed, text
    (line, *_) = text.splitlines()
    assert line.startswith("Downloaded to the workspace: exports/downloads/")
    saved = line.rsplit(": ", 1)[1]
    workspace = pool.config.workspace_root
    assert workspace is not None
    assert (Path(workspace) / saved).read_bytes() == b"a,b\n1,2\n"
    assert f'the tab stays on "Files" {site.base}/files.' in text


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("snapshot", {}),
        ("read_text", {}),
        ("screenshot", {}),
        ("wait_for_text", {"text": "Welcome"}),
    ],
)
async def test_a_read_of_a_session_that_is_not_open_is_an_error_and_opens_none(
    pool: WorkerPool, browser: BrowserAPI, tool: str, arguments: dict[str, Any]
) -> None:
    text, failed = await text_of(pool, tool, {**arguments, "session_id": "never-opened"})
    assert failed
    assert text == (
        "Error: no browser session 'never-opened' is open; navigate opens one "
        "(list_sessions shows yours)."
    )
    assert (await browser.list_sessions()).sessions == []


async def _open_as(pool: WorkerPool, caller: str, name: str, url: str) -> tuple[str, bool]:
    """Navigate in session ``name`` as the caller whose scope is ``caller``."""
    arguments = {"url": url, "session_id": name}
    response = await pool.server("browser").call_tool("navigate", arguments, session_id=caller)
    assert response.result is not None
    return _text(response), bool(response.result.is_error)


async def test_max_sessions_counts_each_callers_sessions_and_max_total_all_of_them(
    pool: WorkerPool, browser: BrowserAPI, site: PageServer
) -> None:
    opened: list[tuple[str, str]] = []
    try:
        for index in range(4):  # the pool's max_sessions, per caller
            text, failed = await _open_as(pool, "alice", f"s{index}", f"{site.base}/")
            assert not failed, text
            opened.append(("alice", f"s{index}"))
        text, failed = await _open_as(pool, "alice", "s4", f"{site.base}/")
        assert failed and text.startswith(
            "Error: you have 4 browser sessions open, the limit per caller is 4;"
        )
        # Alice's four do not count against Bob.
        text, failed = await _open_as(pool, "bob", "s0", f"{site.base}/")
        assert not failed, text
        opened.append(("bob", "s0"))
        # Five in all is the server's max_total_sessions.
        text, failed = await _open_as(pool, "carol", "s0", f"{site.base}/")
        assert failed and "the browser server has 5 sessions open for all its callers" in text
    finally:
        for caller, name in opened:
            await pool.server("browser").call_tool(
                "close_session", {"session_id": name}, session_id=caller
            )
