"""``nativemcp demo``: both built-in servers in workers, on the bundled sample corpus."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import anyio
import pytest

from nativemcp.proxy.cli import main
from nativemcp.proxy.llm import token_note


def test_the_sample_corpus_ships_with_the_package() -> None:
    samples = files("nativemcp.workers.content_store") / "samples"
    names = {entry.name for entry in samples.iterdir()}
    assert {"korean_school.md", "tokyo_guide.txt", "recipes_fr_de.md"} <= names


@pytest.mark.real_process
def test_demo_searches_every_language_and_shows_both_readers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for expected in [
        "korean_school.md:",  # 학교 found in 학교에서
        "tokyo_guide.txt:",  # 図書館 inside a kanji/kana run
        "beijing_zh.txt:",
        "recipes_fr_de.md:",  # muller → Müller
        "What the LLM reads",
        "What the app gets — SearchResult",
        "What the app gets — PlanningState",
        "ID:1 [✓] search the store",
        token_note(),
    ]:
        assert expected in out, expected
    assert "(no match)" not in out
    assert "data folder: a temporary one" not in out  # --data-dir was given
    assert f"data folder: {tmp_path}" in out


@pytest.mark.real_process
def test_the_demo_fits_80_columns_keeping_line_ranges_and_names_no_deleted_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rich.console import Console

    from nativemcp.proxy.cli._demo import run_demo

    assert anyio.run(run_demo, None, Console(width=80, force_terminal=False)) == 0
    out = capsys.readouterr().out
    assert "data folder: a temporary one, deleted when the demo ends" in out
    assert "nativemcp-" not in out  # the temporary folder's name is never printed
    assert all(len(line) <= 80 for line in out.splitlines())
    for best in ["korean_school.md:1-4", "tokyo_guide.txt:", "recipes_fr_de.md:"]:
        assert best in out, best
    ranges = re.findall(r"│ (\S+\.\w+:\d+-\d+) +│ ([\d.]+) │", out)
    assert len(ranges) == 8, out
    weak = dict(ranges)
    assert any(float(score) <= 0.5 for score in weak.values())
