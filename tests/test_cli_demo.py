"""``nativemcp demo``: both built-in servers in workers, on the bundled sample corpus."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest

from nativemcp.proxy._cli import main


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
        "tokens ≈ characters / 4",
    ]:
        assert expected in out, expected
    assert "(no match)" not in out
