"""The export card's MCP App in a real headless Chromium, under a small host page that
speaks the MCP Apps bridge (``postMessage`` JSON-RPC) as hosts do: the page initializes,
renders the real tool result it is sent, and its button downloads through the host's
``tools/call`` under the name the host gave the export tool."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec
import pytest

from nativemcp.workers import ServerConfig
from nativemcp.workers.workspace import create_server

pytestmark = pytest.mark.real_process

CHROMIUM: Final = os.environ.get("NATIVEMCP_CHROMIUM", "/usr/bin/chromium")
WAIT_MS: Final = 30_000
APP: Final = "ui://nativemcp/export-card.html"

if not Path(CHROMIUM).exists() and not os.environ.get("NATIVEMCP_REQUIRE_BROWSER"):
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

# The host: answers ui/initialize with the tool as a hub names it, sends the tool result
# once the view says it is initialized, and answers the view's tools/call with the real
# download result; every message the view sends is kept in window.seen.
_HOST: Final = """<!DOCTYPE html><html><body>
<iframe id="app" sandbox="allow-scripts allow-downloads" style="width:600px;height:400px"></iframe>
<script>
window.seen = [];
var frame = document.getElementById("app");
var data = JSON.parse(document.getElementById("data").textContent);
function post(message) { frame.contentWindow.postMessage(message, "*"); }
window.addEventListener("message", function (event) {
  if (event.source !== frame.contentWindow) { return; }
  var message = event.data;
  window.seen.push(message);
  if (message.method === "ui/initialize") {
    post({jsonrpc: "2.0", id: message.id, result: {
      protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
      hostCapabilities: {serverTools: {}},
      hostContext: {toolInfo: {tool: {name: "builtin_workspace__export_file"}}}}});
  } else if (message.method === "ui/notifications/initialized") {
    post({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: data.result});
  } else if (message.method === "tools/call") {
    post({jsonrpc: "2.0", id: message.id, result: data.download});
  }
});
frame.srcdoc = data.page;
</script></body></html>"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as running:
        chromium = running.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


def _host_page(tmp_path: Path) -> tuple[str, str, bytes]:
    """The host page with the real page, export result and download result in it; the
    export's path and bytes."""
    (tmp_path / "report.md").write_text("# Report\n<b>bold</b>\n")
    server = create_server(ServerConfig(workspace_root=tmp_path))

    async def gather() -> tuple[str, Any, Any]:
        (page,) = await server.read_resource(APP)
        exported = await server.call_tool(
            "export_file", {"path": "report.md", "description": "<img src=x onerror=alert(1)>"}
        )
        assert exported.result is not None and exported.result.structured_content is not None
        path = exported.result.structured_content["exportPath"]
        download = await server.call_tool("download_file", {"path": path})
        assert page.text is not None and download.result is not None
        return page.text, exported.result, download.result

    # Playwright's sync API keeps an event loop on this thread: the server runs on another.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        page, result, download = thread.submit(asyncio.run, gather()).result()
    data = {
        "page": page,
        "result": msgspec.to_builtins(result),
        "download": msgspec.to_builtins(download),
    }
    embedded = json.dumps(data).replace("<", "\\u003c")
    html = _HOST.replace(
        "<script>\nwindow.seen",
        f'<script type="application/json" id="data">{embedded}</script><script>\nwindow.seen',
    )
    path = data["result"]["structuredContent"]["exportPath"]
    return html, path, (tmp_path / path).read_bytes()


def test_the_card_renders_the_hosts_tool_result_and_downloads_through_the_host(
    browser: Any, tmp_path: Path
) -> None:
    html, export_path, exported = _host_page(tmp_path)
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_content(html)
    card = page.frame_locator("#app")
    card.locator("h1").wait_for()
    assert card.locator("h1").inner_text() == "File export: report.md"
    # The description is text, never markup.
    assert card.locator("p.desc").inner_text() == "<img src=x onerror=alert(1)>"
    assert card.locator("img").count() == 0
    assert export_path in card.locator("dl").inner_text()
    with page.expect_download() as waiting:
        card.locator("button").click()
    download = waiting.value
    assert download.suggested_filename == export_path.rsplit("/", 1)[1]
    assert Path(download.path()).read_bytes() == exported
    seen = page.evaluate("window.seen")
    methods = [message.get("method") for message in seen]
    assert methods[:2] == ["ui/initialize", "ui/notifications/initialized"]
    (call,) = [message for message in seen if message.get("method") == "tools/call"]
    # The hub's prefix of the export tool is kept for the download tool.
    assert call["params"] == {
        "name": "builtin_workspace__download_file",
        "arguments": {"path": export_path},
    }
    assert any(message.get("method") == "ui/notifications/size-changed" for message in seen)
    context.close()
    assert errors == []
