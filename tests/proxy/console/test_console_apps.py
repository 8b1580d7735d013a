"""``nativemcp console`` as an MCP Apps host, in a real headless Chromium: a tool's app
renders in a sandboxed frame from the tool result the console sends it, its button calls
its own server's tool through the console, and a call to another server's tool, to a
model-only tool and a fetch its policy forbids all fail."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _node import basic_app_server
from test_console_browser import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    WAIT_MS,
    Console,
    _call_in_page,
    _running_console,
    sync_api,
)

pytestmark = pytest.mark.real_process


@pytest.fixture(scope="module")
def app_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    data_dir = tmp_path_factory.mktemp("console-apps")
    workspace = data_dir / "ws"
    workspace.mkdir()
    (workspace / "report.md").write_text("# Report\n")
    with _running_console(
        data_dir,
        "--workspace",
        str(workspace),
        "--server",
        "_app_servers:gamma",
        "--server",
        "_app_servers:beta",
    ) as running:
        yield running


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with sync_api.sync_playwright() as running:
        browser = running.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Any, app_console: Console) -> Iterator[Any]:
    context = chromium.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(app_console.url)
    page.wait_for_selector("body[data-ready=true]")
    yield page
    context.close()
    assert errors == [], errors


def test_an_app_renders_the_result_and_calls_only_its_own_servers_app_tools(
    page: Any, tmp_path: Path
) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Ada"})
    frame = page.frame_locator("iframe.mcp-app")
    result = frame.locator("#result")
    result.filter(has_text="hello Ada").wait_for()
    page.screenshot(path=str(tmp_path / "app.png"))
    frame.locator("#call").click()
    frame.locator("#called").filter(has_text="echo: from the app").wait_for()
    refused = frame.locator("#refused")
    refused.filter(has_text="own server's tools only").wait_for()
    frame.locator("#model-only").filter(has_text="for the model only").wait_for()
    frame.locator("#fetch").filter(has_text="blocked").wait_for()
    # The app's frame never learns the console's token.
    src = page.locator("iframe.mcp-app").get_attribute("src")
    assert src is not None and src.startswith("/ui/")
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    assert token not in src


def test_an_app_opens_a_link_only_after_the_user_confirms_and_sets_its_height(page: Any) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Bo"})
    frame = page.frame_locator("iframe.mcp-app")
    frame.locator("#result").filter(has_text="hello Bo").wait_for()
    page.wait_for_function("document.querySelector('iframe.mcp-app').style.height === '222px'")
    asked: list[str] = []

    def decline(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", decline)
    frame.locator("#open").click()
    frame.locator("#opened").filter(has_text="refused: the user declined").wait_for()
    assert "http://127.0.0.1:9/opened" in asked[0]
    page.once("dialog", lambda dialog: dialog.accept())
    requested: list[str] = []
    page.context.on("request", lambda request: requested.append(request.url))
    with page.expect_popup() as popup:
        frame.locator("#open").click()
    popup.value.wait_for_load_state()
    # A new window asked for the link (nothing listens there, so it shows an error page).
    assert "http://127.0.0.1:9/opened" in requested
    frame.locator("#opened").filter(has_text="opened http://127.0.0.1:9/opened").wait_for()
    # Not an http(s) link: refused without asking.
    frame.locator("#open-bad").click()
    frame.locator("#opened").filter(has_text="only http(s) links open").wait_for()
    assert len(asked) == 1


def test_the_export_card_app_downloads_through_the_console(page: Any, app_console: Console) -> None:
    _call_in_page(page, "builtin_workspace__export_file", {"path": "report.md"})
    frame = page.frame_locator("iframe.mcp-app")
    frame.locator("h1").filter(has_text="report.md").wait_for()
    frame.locator("button").click()
    # The card asked the console for download_file; the console offers the file it got.
    frame.locator("p.status").filter(has_text="report_").wait_for()
    link = page.locator("a.app-file")
    with page.expect_download() as waiting:
        link.click()
    download = waiting.value
    assert download.suggested_filename.startswith("report_")
    exported = next((app_console.data_dir / "ws" / "exports" / "files").iterdir())
    assert Path(download.path()).read_bytes() == exported.read_bytes() == b"# Report\n"


@pytest.mark.parametrize("package", ["server-basic-vanillajs", "server-basic-react"])
def test_the_ext_apps_example_apps_render_and_call_their_tool_through_the_console(
    chromium: Any, tmp_path: Path, package: str
) -> None:
    # npm's example servers: the ext-apps SDK's own App class (and React) in the frame.
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": basic_app_server(package)}}))
    with _running_console(tmp_path, "--mcp-config", str(config)) as running:
        context = chromium.new_context(viewport={"width": 1400, "height": 1100})
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(running.url)
        page.wait_for_selector("body[data-ready=true]")
        _call_in_page(page, "basic__get-time", {})
        frame = page.frame_locator("iframe.mcp-app")
        # The tool result's ISO time ("2026-…Z"), where the app said "Loading..." before.
        shown = frame.get_by_text(re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z$"))
        shown.wait_for()
        first = shown.inner_text()
        page.screenshot(path=str(tmp_path / f"{package}.png"))
        frame.get_by_role("button", name="Get Server Time").click()
        frame.get_by_text(re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z$")).filter(
            has_not_text=first
        ).wait_for()
        context.close()
