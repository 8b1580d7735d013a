"""The span waterfall in a real headless Chromium: ``nativemcp console`` as the CLI runs
it (a subprocess, OpenTelemetry's SDK installed, no provider set by anyone else), a call
through a worker, and its spans drawn under the result, each under its parent, a failed
one marked with its error. ``NATIVEMCP_SCREENSHOTS=<folder>`` also saves the picture
the observability guide shows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from _process import stop

from nativemcp.workers.telemetry import TRACING_SETUP

pytestmark = pytest.mark.real_process

CHROMIUM: Final = os.environ.get("NATIVEMCP_CHROMIUM", "/usr/bin/chromium")
TESTS: Final = Path(__file__).parents[2]
WAIT_MS: Final = 30_000

if not Path(CHROMIUM).exists() and not os.environ.get("NATIVEMCP_REQUIRE_BROWSER"):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of ``nativemcp console --server _traced_server:server`` (a subprocess)."""
    data_dir = tmp_path_factory.mktemp("waterfall-console")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "nativemcp.proxy.cli", "console", "--port", "0"]
    with (data_dir / "console.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--data-dir", str(data_dir), "--server", "_traced_server:server"],
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
        assert process.stdout is not None
        stdout = process.stdout
        first: list[bytes] = []
        reader = threading.Thread(target=lambda: first.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(90)  # the console prints its URL once its workers are up
        try:
            assert first and first[0].startswith(b"http://127.0.0.1:"), first
            yield first[0].decode().strip()
        finally:
            stop(process, signal.SIGINT)
            stdout.close()


@pytest.fixture
def page(console_url: str) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(console_url)
            page.wait_for_selector("body[data-ready=true]")
            yield page
            assert errors == [], errors
        finally:
            browser.close()


def _rows(page: Any) -> list[tuple[str, str]]:
    page.wait_for_selector(".waterfall[data-ready=true] .waterfall-row")
    return [
        (row.get_attribute("data-name"), row.get_attribute("data-depth"))
        for row in page.locator(".waterfall-row").all()
    ]


def test_a_calls_result_opens_the_waterfall_of_its_spans(page: Any) -> None:
    page.click('button[data-tool="traced__nested"]')
    page.fill('[name="label"]', "deep")
    page.click("#call-button")
    # The worker's first traced call: it set up its recorder first (a span of its own).
    assert _rows(page) == [
        ("console call traced__nested", "0"),
        ("tools/call nested", "1"),
        (TRACING_SETUP, "2"),
        ("tools/call nested", "2"),
        ("inner deep", "3"),
    ]
    bars = page.locator(".waterfall-bar")
    assert bars.count() == 5
    # Each bar starts no earlier than the root's and ends within it.
    widths = [float(b.evaluate("e => parseFloat(e.style.width)")) for b in bars.all()]
    assert widths[0] == 100 and all(0 < w <= 100 for w in widths)
    assert page.locator(".waterfall-row.error").count() == 0
    shots = os.environ.get("NATIVEMCP_SCREENSHOTS")
    if shots:  # the guide's picture: a warm call (the first one's worker set up its tracing)
        page.fill('[name="label"]', "again")
        page.click("#call-button")
        page.wait_for_selector(
            '.waterfall[data-ready=true] .waterfall-row[data-name="inner again"]'
        )
        top = page.locator(".call-line").bounding_box()
        bottom = page.locator(".waterfall").bounding_box()
        height = bottom["y"] + bottom["height"] - top["y"] + 12
        clip = {"x": top["x"] - 6, "y": top["y"] - 6, "width": top["width"] + 12, "height": height}
        page.screenshot(path=str(Path(shots) / "console-waterfall.png"), clip=clip)


def test_a_failed_calls_spans_show_their_error_and_history_reopens_each_waterfall(
    page: Any,
) -> None:
    page.click('button[data-tool="traced__add"]')
    page.fill('[name="a"]', "1")
    page.fill('[name="b"]', "2")
    page.click("#call-button")
    # (Its worker's recorder is set up by whichever call came first.)
    names = [name for name, _ in _rows(page) if name != TRACING_SETUP]
    assert names[1:] == ["tools/call add", "tools/call add"]
    page.click('button[data-tool="traced__refuse"]')
    page.fill('[name="store_id"]', "nowhere")
    page.click("#call-button")
    page.wait_for_selector(
        '.waterfall[data-ready=true] .waterfall-row[data-name="tools/call refuse"]'
    )
    assert [name for name, _ in _rows(page)] == [
        "console call traced__refuse",
        "tools/call refuse",
        "tools/call refuse",
    ]
    errors = page.locator(".waterfall-row.error .waterfall-error")
    assert errors.count() == 2 and errors.first.text_content() == "tool_error"
    # The earlier call, picked in the history, opens its own waterfall again.
    page.locator('.history-item:has-text("traced__add") button').first.click()
    page.wait_for_selector('.waterfall[data-ready=true] .waterfall-row[data-name="tools/call add"]')
    assert page.locator(".waterfall-row.error").count() == 0
