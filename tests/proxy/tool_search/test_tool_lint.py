"""``nativemcp tools --lint`` and `lint_tools`: descriptions too short to be found or
too alike to be told apart, on a catalog with planted bad ones, and the built-ins clean."""

from __future__ import annotations

import subprocess
from pathlib import Path

from _scripts import venv_script

from nativemcp.protocol import Tool
from nativemcp.proxy.tool_search import IndexedTool, lint_tools

PLANTED = '''
from nativemcp.workers import Server

server = Server("planted")


@server.tool()
def fetch_invoice(invoice_id: str) -> str:
    """Get it."""
    return invoice_id


@server.tool()
def archive_report(report_id: str) -> str:
    """Move a finished quarterly sales report into the archive of old reports."""
    return report_id


@server.tool()
def archive_reports(report_id: str) -> str:
    """Move a finished quarterly sales report into the archive of old reports!"""
    return report_id


@server.tool()
def translate_letter(text: str, language: str) -> str:
    """Translate a customer's letter into another language, keeping its greeting."""
    return text


@server.tool()
def book_flight(city: str) -> str:
    """Reserve a seat on a plane to a city for a business trip."""
    return city
'''


BUILTINS = ("content-store", "planning", "workspace", "browser")


def _tool(name: str, description: str) -> IndexedTool:
    return IndexedTool(f"s__{name}", "s", Tool(name=name, description=description))


def test_a_terse_description_and_a_near_twin_are_named_and_distinct_tools_are_not() -> None:
    findings = lint_tools(
        [
            _tool("fetch_invoice", "Get it."),
            _tool("archive_report", "Move a finished sales report into the old archive."),
            _tool("archive_reports", "Move a finished sales report into the old archive!"),
            _tool("translate_letter", "Turn a customer's letter into German, keeping its tone."),
            _tool("book_flight", "Reserve a seat on a plane to a city for a business trip."),
        ]
    )
    assert [(f.kind, f.tools) for f in findings] == [
        ("short", ("s__fetch_invoice",)),
        ("alike", ("s__archive_report", "s__archive_reports")),
    ]
    assert "2 words of their own" in findings[0].detail  # "get" and "it"
    assert "alike" in findings[1].detail


def test_the_command_names_planted_bad_descriptions_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "planted.py").write_text(PLANTED)
    done = subprocess.run(
        [venv_script("nativemcp"), "tools", "planted.py:server", "--lint", "--data-dir", "data"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("short: planted__fetch_invoice: ")
    assert lines[1].startswith("alike: planted__archive_report and planted__archive_reports: ")
    assert lines[-1] == "2 findings in 5 tools"


def test_the_built_in_servers_lint_clean(tmp_path: Path) -> None:
    done = subprocess.run(
        [venv_script("nativemcp"), "tools", *BUILTINS, "--lint", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.endswith("every description can be found and told apart\n"), done.stdout
    assert done.returncode == 0
