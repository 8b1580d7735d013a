"""``nativemcp console`` driven through a real headless Chromium (Playwright's sync API).

The console runs as the CLI does (a subprocess; its URL read from stdout's first line),
with the built-in servers and ``_console_servers`` in worker processes. The browser is
Debian's ``chromium`` (``.ci/run`` installs it); Playwright never downloads one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import pytest
from _process import alive, stop

pytestmark = pytest.mark.real_process

CHROMIUM: Final = os.environ.get("NATIVEMCP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TESTS: Final = Path(__file__).parents[2]
START_TIMEOUT: Final = 90.0
"""Seconds the console has to print its URL (three workers start on a loaded machine)."""
WAIT_MS: Final = 30_000
"""Playwright's wait for anything the page shows."""
SECRET: Final = b"exported bytes \x00\x01\x02 \xe2\x9c\x93\n" * 50

if not Path(CHROMIUM).exists() and not os.environ.get("NATIVEMCP_REQUIRE_BROWSER"):
    pytest.skip(
        f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api")

from _console_servers import HOSTILE  # noqa: E402


class Console:
    """A running ``nativemcp console`` process and its URL."""

    def __init__(self, url: str, process: subprocess.Popen[bytes], data_dir: Path) -> None:
        self.url = url
        self.process = process
        self.data_dir = data_dir
        parts = urlsplit(url)
        self.origin = f"{parts.scheme}://{parts.netloc}"

    def request(
        self, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """``(status, body)`` of a request to a path under the token (or ``/x`` absolute)."""
        url = self.origin + path if path.startswith("/") else self.url + path
        data = None if body is None else json.dumps(body).encode()
        merged = {"Content-Type": "application/json"} if body is not None else {}
        merged.update(headers or {})
        request = urllib.request.Request(url, data=data, headers=merged)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool through the console's API and return its finished view."""
        status, body = self.request("api/calls", {"tool": tool, "arguments": arguments})
        assert status == 202, body
        started = json.loads(body)
        with urllib.request.urlopen(
            f"{self.url}api/calls/{started['id']}/events", timeout=60
        ) as stream:
            event = ""
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "result":
                    view: dict[str, Any] = json.loads(line[6:])
                    return view
        raise AssertionError(f"no result event for {tool}")


def _read_first_line(process: subprocess.Popen[bytes]) -> str:
    found: list[bytes] = []
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: found.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not found or not found[0]:
        process.kill()
        raise AssertionError("the console printed no URL")
    return found[0].decode().strip()


@contextlib.contextmanager
def _running_console(
    data_dir: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[Console]:
    """``nativemcp console --port 0 ...`` as a subprocess (``env`` added to this one's);
    SIGINT (Ctrl-C) on the way out."""
    env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "nativemcp.proxy.cli", "console", "--port", "0"]
    with (data_dir / "console.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--data-dir", str(data_dir), *extra],
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
        try:
            url = _read_first_line(process)
            assert url.startswith("http://127.0.0.1:") and url.endswith("/"), url
            yield Console(url, process, data_dir)
        finally:
            stop(process, signal.SIGINT)
            assert process.stdout is not None
            process.stdout.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    data_dir = tmp_path_factory.mktemp("console-data")
    workspace = data_dir / "ws"
    workspace.mkdir()
    (workspace / "report.bin").write_bytes(SECRET)
    external = {"command": sys.executable, "args": [str(TESTS / "_external_server.py")]}
    config = data_dir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ext": external}}))
    with _running_console(
        data_dir,
        "--workspace",
        str(workspace),
        "--server",
        "_console_servers:server",
        "--server",
        "browser",
        "--mcp-config",
        str(config),
    ) as running:
        yield running


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with sync_api.sync_playwright() as running:
        yield running


def _chromium(playwright: Any, *flags: str) -> Iterator[Any]:
    chromium = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_FLAGS, *flags]
    )
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture(scope="module")
def browser(playwright: Any) -> Iterator[Any]:
    yield from _chromium(playwright)


@pytest.fixture
def page(browser: Any, console: Console) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(console.url)
    page.wait_for_selector("body[data-ready=true]")
    yield page
    context.close()
    assert errors == [], errors


def _call_in_page(page: Any, tool: str, fields: dict[str, str]) -> None:
    page.click(f'button[data-tool="{tool}"]')
    for name, value in fields.items():
        page.fill(f'[name="{name}"]', value)
    page.click("#call-button")


def test_a_request_without_the_token_is_refused(console: Console, browser: Any) -> None:
    for path in ["/", "/api/tools", "/console.js", "/not-the-token/api/tools"]:
        status, body = console.request(path)
        assert status == 401, path
        assert b"401" in body
    wrong = console.url.rstrip("/")[:-3] + "xyz/api/tools"
    assert console.request("/" + wrong.split("/", 3)[3])[0] == 401
    assert console.request("api/tools")[0] == 200
    context = browser.new_context()
    try:
        response = context.new_page().goto(console.origin + "/")
        assert response.status == 401
    finally:
        context.close()


def test_state_changing_requests_from_another_origin_or_not_json_are_refused(
    console: Console,
) -> None:
    call = {"tool": "builtin_planning__get_current_state", "arguments": {}}
    assert console.request("api/calls", call, {"Origin": "null"})[0] == 403
    assert console.request("api/calls", call, {"Origin": "http://evil.example"})[0] == 403
    assert console.request("api/calls", call, {"Content-Type": "text/plain"})[0] == 415
    status, body = console.request("api/calls", {"tool": "no__such", "arguments": {}})
    assert status == 404 and b"no tool named" in body


def test_the_tool_list_loads_every_server_with_its_tools(page: Any) -> None:
    for server in ["content-store", "planning", "workspace", "console-test", "ext"]:
        assert page.locator(f'section.server[data-server="{server}"]').is_visible()
    assert page.locator('button[data-tool="builtin_content-store__list_content"]').is_visible()
    assert page.locator('button[data-tool="builtin_workspace__export_file"]').is_visible()
    assert "servers" in page.text_content("#status")
    page.click('button[data-tool="builtin_workspace__write_file"]')
    assert page.text_content("#tool-hints").strip() == "destructive"
    # A tool's description is shown as text, markup and all.
    section = page.locator('section.server[data-server="console-test"]')
    assert HOSTILE in section.locator("p.description").text_content()


def test_the_form_shows_the_schemas_validation_messages_and_does_not_call(
    page: Any, console: Console
) -> None:
    before = len(json.loads(console.request("api/calls")[1])["calls"])
    _call_in_page(page, "builtin_content-store__list_content", {"limit": "500", "offset": "x"})
    assert page.text_content("#field-store_id-error") == "store_id is required"
    assert page.text_content("#field-limit-error") == "limit must be at most 100"
    assert "must be a number" in page.text_content("#field-offset-error")
    assert page.text_content("#form-error") == "Fix the fields marked above."
    assert len(json.loads(console.request("api/calls")[1])["calls"]) == before


def test_list_content_shows_the_rich_text_and_the_typed_value(page: Any, console: Console) -> None:
    store = console.call("builtin_content-store__create_store", {"name": "browser"})
    store_id = store["value"]["storeId"]
    added = console.call(
        "builtin_content-store__add_content",
        {
            "store_id": store_id,
            "content": "학교에서 공부합니다.\nline two\n",
            "filename": "notes.md",
        },
    )
    assert added["status"] == "ok", added
    _call_in_page(page, "builtin_content-store__list_content", {"store_id": store_id})
    page.wait_for_selector(".column.model .model-text")
    model = page.text_content(".model-text")
    assert "notes.md" in model
    header = page.text_content(".column.model h3")
    assert "What the model reads" in header and "bytes" in header and "tokens" in header
    app = page.text_content(".app-json")
    assert "contents" in app and '"notes.md"' in app and store_id in app
    assert "What the app gets" in page.text_content(".column.app h3")
    service = page.text_content(".service-json")
    assert '"content-store"' in service and '"list_content"' in service
    assert '"BuiltInWeb"' in service
    assert " ms" in page.text_content(".call-line .elapsed")
    # The typed value is a collapsible tree.
    page.locator(".app-json details.json-node > summary").first.click()
    assert page.locator(".app-json > details.json-node").get_attribute("open") is None
    # And the call is in the history.
    assert "list_content" in page.text_content("#history")


def test_an_export_card_renders_in_a_sandboxed_frame_and_its_button_downloads_the_file(
    page: Any, console: Console, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _call_in_page(
        page,
        "builtin_workspace__export_file",
        {"path": "report.bin", "display_name": "Quarterly report", "description": "For Ana"},
    )
    frame_element = page.wait_for_selector("iframe.ui-resource")
    assert frame_element.get_attribute("sandbox") == "allow-scripts"
    card = page.frame_locator("iframe.ui-resource")
    assert "Quarterly report" in card.locator("h1").text_content()
    frame = frame_element.content_frame()
    assert frame.evaluate("window.origin") == "null"  # opaque: never the console's origin
    with page.expect_download() as info:
        card.locator("button[data-tool]").click()
    download = info.value
    assert Path(download.path()).read_bytes() == SECRET
    assert download.suggested_filename.startswith("report_")
    page.wait_for_selector(".ui-call.ok")
    assert "download_file" in page.text_content(".ui-actions")
    assert "from UI of" in page.text_content("#history")
    shots = tmp_path_factory.mktemp("screenshots")
    page.set_viewport_size({"width": 1500, "height": 1250})  # the card and its download row
    page.screenshot(path=str(shots / "console-after-export.png"), full_page=True)
    print(f"screenshot: {shots / 'console-after-export.png'}")


def test_a_script_injected_through_a_display_name_does_not_run(page: Any) -> None:
    _call_in_page(
        page, "builtin_workspace__export_file", {"path": "report.bin", "display_name": HOSTILE}
    )
    frame = page.wait_for_selector("iframe.ui-resource").content_frame()
    frame.wait_for_selector("h1")
    # Shown as text on the page, in the card and in the typed value; never run anywhere.
    assert HOSTILE in page.text_content(".model-text")
    assert HOSTILE in frame.text_content("h1")
    assert json.dumps(HOSTILE) in page.text_content(".app-json")
    assert page.evaluate("window.__pwned") is None
    assert frame.evaluate("window.__pwned") is None
    assert page.locator('img[src="x"]').count() == 0
    assert frame.locator('img[src="x"]').count() == 0
    _call_in_page(page, "console-test__hostile", {"name": HOSTILE})
    page.wait_for_selector("text=What the app gets")
    assert page.evaluate("window.__pwned") is None
    assert page.locator('img[src="x"]').count() == 0


def test_progress_notifications_drive_the_progress_bar(page: Any, console: Console) -> None:
    _call_in_page(page, "console-test__slow", {"key": "bar"})
    page.wait_for_selector("#progress-text:has-text('one of four')")
    width = page.evaluate("document.getElementById('progress-bar').style.width")
    assert width == "25%"
    console.call("console-test__release", {"key": "bar"})
    page.wait_for_selector(".model-text:has-text('released bar')")


def test_images_and_audio_render(page: Any) -> None:
    _call_in_page(page, "console-test__picture", {})
    image = page.wait_for_selector("img.media")
    page.wait_for_function("document.querySelector('img.media').naturalWidth === 24")
    assert image.get_attribute("alt") == "image from the tool (image/png)"
    audio = page.wait_for_selector("audio.media")
    assert audio.evaluate("a => a.src.startsWith('data:audio/wav;base64,')")


def test_a_browser_screenshot_shows_as_an_image(page: Any) -> None:
    # The browser server's blank first tab: no page to allow, still a real PNG. A read
    # opens no session: listing the tabs does, with its blank tab.
    _call_in_page(page, "builtin_browser__tabs", {})
    page.wait_for_selector(".model-text:has-text('Listed the tabs.')")
    _call_in_page(page, "builtin_browser__screenshot", {})
    image = page.wait_for_selector("img.media")
    page.wait_for_function("document.querySelector('img.media').naturalWidth === 1280")
    assert image.get_attribute("alt") == "image from the tool (image/png)"
    assert "Screenshot (viewport, 1280x800 px" in page.text_content(".model-text")


def test_host_actions_are_shown_not_run_and_tool_actions_resolve_to_full_names(
    page: Any, console: Console
) -> None:
    _call_in_page(page, "console-test__actions", {})
    page.wait_for_selector("iframe.ui-resource")
    card = page.frame_locator("iframe.ui-resource")
    before = len(json.loads(console.request("api/calls")[1])["calls"])
    for kind in ["notify", "link", "prompt", "intent"]:
        card.locator(f"#{kind}").click()
        page.wait_for_selector(f".host-action:has-text('{kind}')")
    assert "https://example.com/" in page.text_content(".ui-actions")
    assert "shown, not run" in page.text_content(".host-action")
    card.locator("#missing").click()
    page.wait_for_selector(".host-action:has-text('no_such_tool')")
    card.locator("#cross").click()  # a full name of another server's tool: refused
    page.wait_for_selector(".host-action:has-text('its own server')")
    # Host actions ran no tool.
    assert len(json.loads(console.request("api/calls")[1])["calls"]) == before
    card.locator("#resize").click()  # mcp-ui housekeeping: the page resizes the frame
    page.wait_for_function("document.querySelector('iframe.ui-resource').style.height === '123px'")
    assert page.locator(".host-action").count() == 6
    card.locator("#tool").click()  # `release`, named by its own name in the UI
    page.wait_for_selector(".ui-call:has-text('console-test__release')")


def test_a_ui_frame_cannot_reach_the_console_api(page: Any) -> None:
    _call_in_page(page, "console-test__actions", {})
    frame = page.wait_for_selector("iframe.ui-resource").content_frame()
    frame.wait_for_selector("#notify")
    outcome = frame.evaluate(
        """async (url) => {
            try {
                await fetch(url + "api/calls", {method: "POST", body: "{}"});
                return "fetched";
            } catch (err) { return "blocked"; }
        }""",
        page.url,
    )
    assert outcome == "blocked"


def _token(console: Console) -> str:
    return urlsplit(console.url).path.strip("/")


def test_a_ui_frame_can_read_no_token_from_its_url_document_referrer_or_cookies(
    page: Any, console: Console
) -> None:
    _call_in_page(page, "console-test__actions", {})
    frame = page.wait_for_selector("iframe.ui-resource").content_frame()
    frame.wait_for_selector("#notify")
    readable = frame.evaluate(
        """() => {
            let cookie;
            try { cookie = document.cookie; } catch (err) { cookie = "refused: " + err.name; }
            return {
                href: location.href,
                referrer: document.referrer,
                html: document.documentElement.outerHTML,
                name: window.name,
                cookie,
                history: String(history.length),
            };
        }"""
    )
    assert urlsplit(readable["href"]).path.startswith("/ui/"), readable["href"]
    assert readable["referrer"] == ""
    assert "<button" in readable["html"]  # the frame's own document, as the tool sent it
    token = _token(console)
    assert not [key for key, value in readable.items() if token in value], readable
    # Its URL was a one-time capability: spent by the load the script runs in.
    status, _ = console.request(urlsplit(readable["href"]).path)
    assert status == 404


class _TurnServer:
    """A UDP listener that speaks just enough TURN to hear a username: it answers every
    Allocate request 401 with a realm and a nonce, as a TURN server asks for credentials,
    and keeps every datagram it receives."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            self.received.append(data)
            if len(data) >= 20 and data[:2] == b"\x00\x03":  # an Allocate request
                self.sock.sendto(_allocate_401(data[4:20]), peer)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _stun_attribute(kind: int, value: bytes) -> bytes:
    padding = b"\x00" * (-len(value) % 4)
    return struct.pack("!HH", kind, len(value)) + value + padding


def _allocate_401(cookie_and_transaction: bytes) -> bytes:
    """A STUN Allocate error response 401 (RFC 8656) with REALM and NONCE."""
    attributes = (
        _stun_attribute(0x0009, b"\x00\x00\x04\x01Unauthorized")  # ERROR-CODE 401
        + _stun_attribute(0x0014, b"nativemcp-test")  # REALM
        + _stun_attribute(0x0015, b"0123456789abcdef")  # NONCE
    )
    return struct.pack("!HH", 0x0113, len(attributes)) + cookie_and_transaction + attributes


def test_what_a_ui_frame_sends_out_through_a_webrtc_turn_username_holds_no_token(
    page: Any, console: Console
) -> None:
    # No content security policy covers WebRTC: a frame can send what it reads to any
    # UDP port as a TURN username. So what it can read must not hold the token.
    turn = _TurnServer()
    try:
        _call_in_page(page, "console-test__actions", {})
        frame = page.wait_for_selector("iframe.ui-resource").content_frame()
        frame.wait_for_selector("#notify")
        frame.evaluate(
            """(port) => {
                const known = "leak|" + location.href + "|" + document.referrer + "|";
                const peer = new RTCPeerConnection({iceServers: [{
                    urls: "turn:127.0.0.1:" + port + "?transport=udp",
                    username: known, credential: "x"}]});
                peer.createDataChannel("leak");
                peer.createOffer().then((offer) => peer.setLocalDescription(offer));
                window.__peer = peer;
            }""",
            turn.port,
        )
        deadline = time.monotonic() + 20
        while not any(b"leak|" in data for data in turn.received):
            assert time.monotonic() < deadline, f"no TURN username arrived: {turn.received}"
            time.sleep(0.1)
    finally:
        turn.close()
    sent = b"".join(turn.received)
    assert b"leak|http://127.0.0.1:" in sent  # the channel works, and carried the URL
    assert _token(console).encode() not in sent


@pytest.fixture
def rebinding_browser(playwright: Any) -> Iterator[Any]:
    """A Chromium whose resolver maps ``attacker.example`` to 127.0.0.1: what a DNS
    rebinding attack achieves once the attacker's page has loaded."""
    yield from _chromium(
        playwright,
        "--host-resolver-rules=MAP attacker.example 127.0.0.1",
        # Chromium's own guard (a public page may not reach a loopback address) would
        # stop the attack before the console sees it; this test is of the console's.
        "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,"
        "PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults",
    )


def test_a_rebinding_page_that_holds_the_token_is_refused(
    rebinding_browser: Any, console: Console
) -> None:
    port = urlsplit(console.url).port
    attacker = f"http://attacker.example:{port}"
    context = rebinding_browser.new_context()
    try:
        page = context.new_page()
        # Loading the console under the attacker's name: the Host gives it away.
        assert page.goto(f"{attacker}/{_token(console)}/").status == 421
        # The attacker's own page at that origin (served here, as its server would
        # before the rebinding), calling the console as same-origin with the token.
        page_html = "<p>the attacker's page</p>"
        context.route(
            f"{attacker}/", lambda route: route.fulfill(body=page_html, content_type="text/html")
        )
        page.goto(f"{attacker}/")
        before = len(json.loads(console.request("api/calls")[1])["calls"])
        status = page.evaluate(
            """async (path) => (await fetch(path, {method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({tool: "builtin_workspace__list_directory", arguments: {}})
            })).status""",
            f"/{_token(console)}/api/calls",
        )
        assert status == 421
        assert len(json.loads(console.request("api/calls")[1])["calls"]) == before
    finally:
        context.close()


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(child) for child in (task / "children").read_text().split())
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_the_console_prints_its_url_first_and_stops_on_ctrl_c_leaving_no_worker(
    tmp_path: Path,
) -> None:
    with _running_console(tmp_path, "--workspace", str(tmp_path)) as running:
        status, body = running.request("api/tools")
        assert status == 200
        names = [server["name"] for server in json.loads(body)["servers"]]
        assert names == ["content-store", "planning", "workspace"]
        workers = _children(running.process.pid)
        assert workers  # the worker processes (and multiprocess's resource tracker)
        running.process.send_signal(signal.SIGINT)
        assert running.process.wait(30) == 0
    # Orphans are reaped by init, which may take a moment; a zombie is gone as well.
    deadline = time.monotonic() + 20
    while (left := [pid for pid in workers if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]


def test_arguments_typed_as_json_are_used_instead_of_the_fields(page: Any) -> None:
    page.click('button[data-tool="builtin_workspace__write_file"]')
    page.click("#raw-args > summary")
    page.fill("#raw-json", "[1, 2]")
    page.click("#call-button")
    assert page.text_content("#raw-json-error") == "the arguments must be a JSON object"
    page.fill("#raw-json", '{"path": "raw.txt", "content": "from the JSON box"}')
    page.click("#call-button")
    page.wait_for_selector(".model-text:has-text('raw.txt')")
    assert '"raw.txt"' in page.text_content(".app-json")


def test_seven_running_calls_do_not_stall_the_page(page: Any, console: Console) -> None:
    # A browser opens at most six connections to a host; the page keeps one stream.
    for n in range(7):
        _call_in_page(page, "console-test__slow", {"key": f"many-{n}"})
        page.wait_for_selector(f"#result:has-text('many-{n}'), .call-line:has-text('running')")
    _call_in_page(page, "builtin_planning__get_current_state", {})
    page.wait_for_selector(".column.model h3")
    for n in range(7):
        console.call("console-test__release", {"key": f"many-{n}"})
    page.wait_for_function(
        "() => document.querySelectorAll('#history .history-item.running').length === 0"
    )


def test_a_reloaded_page_shows_the_history_and_each_past_result(page: Any) -> None:
    _call_in_page(page, "builtin_planning__add_todo", {"name": "remember me after a reload"})
    page.wait_for_selector(".model-text:has-text('remember me after a reload')")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    item = page.locator("#history .history-item", has_text="builtin_planning__add_todo").first
    item.locator("button").click()
    page.wait_for_selector(".model-text:has-text('remember me after a reload')")
    assert '"remember me after a reload"' in page.text_content(".app-json")


def test_an_external_mcp_server_from_the_config_is_listed_and_called(page: Any) -> None:
    section = page.locator('section.server[data-server="ext"]')
    assert section.locator(".backend").text_content() == "ExternalMCP"
    _call_in_page(page, "ext__get-sum", {"a": "2", "b": "40"})
    page.wait_for_selector(".column.app h3")
    assert "42" in page.text_content(".model-text")
    assert "total: 42" in page.text_content(".app-json")
    assert '"ExternalMCP"' in page.text_content(".service-json")
    _call_in_page(page, "ext__chatty", {"steps": "3"})
    page.wait_for_selector(".model-text:has-text('done')")


def test_the_authorize_button_signs_in_through_a_new_tab_and_lists_the_servers_tools(
    browser: Any, tmp_path: Path
) -> None:
    import anyio.from_thread
    from _oauth_server import Issuer, protected_server

    issuer = Issuer()
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(protected_server(issuer)) as url,
    ):
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": url, "oauth": {}}}}))
        with _running_console(tmp_path, "--mcp-config", str(config)) as running:
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(running.url)
            button = page.locator('button[data-authorize="remote"]')
            assert "Needs authorization (no authorization" in page.text_content(".authorize-note")
            with context.expect_page() as opened:
                button.click()
            tab = opened.value  # the issuer sends it on to the pool's loopback callback
            tab.wait_for_selector("text=You can close this window")
            # The page reloads once the flow is over, listing the server's own tools.
            page.wait_for_selector('button[data-tool="remote__whoami"]')
            assert page.locator("button.authorize").count() == 0
            context.close()
    assert issuer.authorizations == 1 and errors == []
