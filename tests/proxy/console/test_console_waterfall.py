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


def test_the_code_tab_runs_a_program_and_shows_its_output_inner_calls_and_trace(
    page: Any,
) -> None:
    page.click("#tab-code")
    assert page.is_hidden("#tools-view") and page.is_visible("#code-input")
    program = (
        "total = await traced__add(a=1, b=2)\n"
        "print('sum', total)\n"
        "try:\n"
        "    await traced__refuse(store_id='nowhere')\n"
        "except RuntimeError as error:\n"
        "    print('refused:', error)\n"
        "{'total': total}"
    )
    page.fill("#code-input", program)
    page.click("#code-run")
    page.wait_for_selector("#code-result[data-ready=true]")
    assert page.text_content("#code-result .badge") == "ok"
    assert page.text_content(".code-output") == (
        "sum 3\nrefused: traced__refuse: store 'nowhere' not found\n"
    )
    assert '"total": 3' in (page.text_content(".code-value") or "")
    calls = page.locator(".code-calls tr[data-name]")
    assert [c.get_attribute("data-name") for c in calls.all()] == [
        "traced__add",
        "traced__refuse",
    ]
    assert calls.nth(0).locator("td").nth(4).text_content() == "ok"
    assert "not found" in (calls.nth(1).locator("td").nth(4).text_content() or "")
    # The trace: the run under the console's root, each inner call's spans under the run.
    rows = _rows(page)
    assert rows[:2] == [("console call run_code", "0"), ("run_code", "1")]
    assert [name for name, _ in rows[2:]] == ["tools/call add"] * 2 + ["tools/call refuse"] * 2
    assert all(int(depth) >= 2 for _, depth in rows[2:])

    # The stubs of the tools a program calls, as the model reads them.
    page.fill("#stub-names", "traced__add")
    page.click("#stub-button")
    page.wait_for_selector("#code-stubs:not([hidden])")
    assert "async def traced__add(a:int,b:int)->int:" in (page.text_content("#code-stubs") or "")

    # A program that does not parse says where, and nothing ran.
    page.fill("#code-input", "print(")
    page.click("#code-run")
    page.wait_for_selector("#code-result[data-ready=true] .code-failure")
    assert page.text_content("#code-result .badge") == "error"
    assert "CodeSyntaxError" in (page.text_content(".code-failure") or "")
    assert page.locator(".code-calls").count() == 0
    page.click("#tab-tools")
    assert page.is_visible("#tools-view") and page.is_hidden("#code-view")
