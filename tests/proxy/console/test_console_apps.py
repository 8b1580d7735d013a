"""``nativemcp console`` as an MCP Apps host, in a real headless Chromium: a tool's app
renders in the sandbox proxy (the console's second origin) from the tool result the
console sends it, its button calls its own server's tool through the console, and a call
to another server's tool, to a model-only tool and a fetch its policy forbids all fail;
what it tells the host (a message, the model's context, a log line) is shown."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Nothing on stderr: the test reads what the app saw, not the access log."""


@pytest.fixture(scope="module")
def app_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live origin the gamma app declares in connectDomains (``localhost`` instead of
    ``127.0.0.1`` names the same server, not declared): a fetch there fails only because
    the app's policy forbids it."""
    served = tmp_path_factory.mktemp("target")
    handler = functools.partial(_QuietFiles, directory=str(served))
    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=target.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{target.server_address[1]}"
    target.shutdown()
    target.server_close()
    thread.join()


@pytest.fixture(scope="module")
def app_console(tmp_path_factory: pytest.TempPathFactory, app_target: str) -> Iterator[Console]:
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
        env={"NATIVEMCP_TEST_GAMMA_CONNECT": app_target},
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


def _decline_once(page: Any) -> list[str]:
    """The messages of the page's next dialog, which the user declines."""
    asked: list[str] = []

    def decline(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", decline)
    return asked


def _view(page: Any) -> Any:
    """The app's view: the inner frame of the sandbox proxy the page framed."""
    return page.frame_locator("iframe.mcp-app").frame_locator("iframe")


def test_an_app_renders_the_result_and_calls_only_its_own_servers_app_tools(
    page: Any, tmp_path: Path
) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Ada"})
    frame = _view(page)
    result = frame.locator("#result")
    result.filter(has_text="hello Ada").wait_for()
    page.screenshot(path=str(tmp_path / "app.png"))
    frame.locator("#call").click()
    frame.locator("#called").filter(has_text="echo: from the app").wait_for()
    refused = frame.locator("#refused")
    refused.filter(has_text="own server's tools only").wait_for()
    frame.locator("#model-only").filter(has_text="for the model only").wait_for()
    frame.locator("#fetch").filter(has_text="blocked").wait_for()
    # After initialized, and only then: the whole input, then the result (the console
    # has the whole arguments before the call: no partial input).
    heard = "ui/notifications/tool-input ui/notifications/tool-result"
    assert frame.locator("#heard").inner_text() == heard
    # The app's frame is the sandbox proxy on the console's second port, by a name
    # that never carries the console's token.
    src = page.locator("iframe.mcp-app").get_attribute("src")
    console, sandbox = urlsplit(page.url), urlsplit(src)
    assert sandbox.hostname == console.hostname and sandbox.port != console.port
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    assert sandbox.path.startswith("/sandbox/") and token not in src


def test_an_apps_view_runs_on_a_second_origin_under_its_policy_and_never_sees_the_token(
    page: Any, app_target: str
) -> None:
    target = app_target
    forbidden = target.replace("127.0.0.1", "localhost")  # the same server, another origin
    _call_in_page(page, "gamma__probe", {"allowed": target + "/", "forbidden": forbidden + "/"})
    frame = _view(page)
    probe = frame.locator("#probe")
    probe.filter(has_text="fetched").wait_for()
    report = json.loads(probe.inner_text())
    console = urlsplit(page.url)
    token = console.path.strip("/")
    proxy = urlsplit(page.locator("iframe.mcp-app").get_attribute("src"))
    sandbox_origin = f"http://{proxy.hostname}:{proxy.port}"
    # The view: an opaque origin inside the proxy, whose origin is not the console's.
    assert report["origin"] == "null"
    assert report["ancestors"] == [sandbox_origin, f"http://{console.netloc}"]
    assert sandbox_origin != f"http://{console.netloc}"
    assert report["parent"] == report["top"] == "SecurityError"
    # The policy of its page: its declared origin only.
    assert report["allowed"] == "fetched"
    assert report["forbidden"] == "blocked: TypeError"
    assert report["violations"] == [f"connect-src {forbidden}/"]
    # Its permissions: the one it asked for.
    assert report["geolocation"] is True and report["camera"] is False
    # The token is in nothing it can read.
    assert token not in json.dumps(report)
    proxy_frame = next(f for f in page.frames if f.url.startswith(sandbox_origin))
    assert proxy_frame.evaluate("document.referrer") == ""


def test_an_app_tells_the_console_a_message_and_a_model_context_and_logs(page: Any) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Cy"})
    frame = _view(page)
    frame.locator("#result").filter(has_text="hello Cy").wait_for()
    frame.locator("#tell").click()
    frame.locator("#told").filter(has_text="refused: ui/message takes role: 'user'").wait_for()
    notes = page.locator(".app-notes")
    assert notes.locator(".app-note.message").inner_text().endswith("explain the chart")
    # The second context replaced the first.
    contexts = notes.locator(".app-note.model-context")
    assert contexts.count() == 1 and contexts.inner_text().endswith("the chart shows 3 bars")
    assert page.locator(".app-log li").inner_text() == "[info gamma] told the host"
    # Kept with the call: a reloaded page shows them again.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#history button").first.click()
    page.locator(".app-note.message").filter(has_text="explain the chart").wait_for()
    assert page.locator(".app-note.model-context").count() == 1


def test_an_app_opens_a_link_only_after_the_user_confirms_and_sets_its_height(page: Any) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Bo"})
    frame = _view(page)
    frame.locator("#result").filter(has_text="hello Bo").wait_for()
    page.wait_for_function("document.querySelector('iframe.mcp-app').style.height === '222px'")
    asked = _decline_once(page)
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


def test_an_app_is_asked_to_tear_down_before_the_console_shows_another_result(
    page: Any,
) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Flo"})
    _view(page).locator("#result").filter(has_text="hello Flo").wait_for()
    first = page.locator("iframe.mcp-app").get_attribute("data-call")
    _call_in_page(page, "gamma__greet", {"name": "Gus"})
    _view(page).locator("#result").filter(has_text="hello Gus").wait_for()
    # The first app's last words (sent while it tore down) are kept with its call.
    kept = page.evaluate("(id) => fetch('api/calls/' + id).then((r) => r.json())", first)
    (note,) = [action for action in kept["hostActions"] if action["type"] == "model-context"]
    text = "torn down: the console shows another result"
    assert note["payload"]["content"] == [{"type": "text", "text": text}]


def test_an_app_saves_a_file_through_the_console_once_the_user_agrees(
    page: Any, tmp_path: Path
) -> None:
    _call_in_page(page, "gamma__greet", {"name": "Ed"})
    frame = _view(page)
    frame.locator("#result").filter(has_text="hello Ed").wait_for()
    asked = _decline_once(page)
    frame.locator("#save").click()
    frame.locator("#saved").filter(has_text="declined").wait_for()
    assert "notes.txt" in asked[0] and page.locator("a.app-file").count() == 0
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_download() as waiting:
        frame.locator("#save").click()
    frame.locator("#saved").filter(has_text="saved").wait_for()
    assert waiting.value.suggested_filename == "notes.txt"
    assert Path(waiting.value.path()).read_text() == "gamma notes"


def test_the_export_card_app_downloads_through_the_console(page: Any, app_console: Console) -> None:
    _call_in_page(page, "builtin_workspace__export_file", {"path": "report.md"})
    frame = _view(page)
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
        frame = _view(page)
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


GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "mcp-apps.md"


def test_the_mcp_apps_guides_clock_shows_the_time_in_the_console(
    chromium: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The guide's example exactly as a reader copies it: its page must finish the
    # handshake (ui/notifications/initialized) before the console sends the result.
    found = re.search(r"```python\n(# clock\.py\n.*?)```", GUIDE.read_text("utf-8"), re.S)
    assert found is not None, "the guide has no clock.py example"
    folder = tmp_path_factory.mktemp("clock")
    (folder / "clock.py").write_text(found.group(1), "utf-8")
    with _running_console(folder, "--server", f"{folder / 'clock.py'}:server") as console:
        context = chromium.new_context()
        try:
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            page.goto(console.url)
            page.wait_for_selector("body[data-ready=true]")
            _call_in_page(page, "clock__now", {})
            shown = _view(page).locator("#time")
            shown.filter(has_text=re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")).wait_for()
        finally:
            context.close()
