"""``browser`` as a SERVER on the CLI's verbs, and ``--browser-allow`` as its allow-list."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser_pages import PageServer, require_chromium, serving

from nativemcp.proxy.cli import main

require_chromium()

pytestmark = pytest.mark.real_process


@pytest.fixture(scope="module")
def site() -> Iterator[PageServer]:
    with serving() as server:
        yield server


def test_call_browser_navigate_with_an_allowed_origin_prints_what_the_model_reads(
    tmp_path: Path, site: PageServer, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = json.dumps({"url": f"{site.base}/form"})
    data = ["--data-dir", str(tmp_path), "--browser-allow", site.base]
    assert main(["call", "browser", "navigate", "--args", arguments, *data]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f'Navigated to "Sign up" {site.base}/form (HTTP 200)')


def test_call_browser_without_the_allow_list_refuses_loopback(
    tmp_path: Path, site: PageServer, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = json.dumps({"url": f"{site.base}/"})
    status = main(["call", "browser", "navigate", "--args", arguments, "--data-dir", str(tmp_path)])
    assert status == 1
    captured = capsys.readouterr()
    assert "127.0.0.1 is a loopback address" in captured.out + captured.err
    # And says how to allow it.
    assert f"list its origin: --browser-allow {site.base} (nativemcp serve)" in (
        captured.out + captured.err
    )


def test_every_verb_that_starts_servers_takes_browser_allow() -> None:
    from nativemcp.proxy.cli._main import _build_parser

    parser, _ = _build_parser()
    for verb in (
        ["call", "browser", "snapshot"],
        ["serve", "browser"],
        ["console", "--server", "browser"],
    ):
        args = parser.parse_args([*verb, "--browser-allow", "http://127.0.0.1:8000"])
        assert args.browser_allow == ["http://127.0.0.1:8000"]
