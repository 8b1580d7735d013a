"""``nativemcp ingest`` and ``nativemcp search``: real workers, a temporary data folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nativemcp.proxy._cli import DATA_DIR_ENV, default_data_dir, main


def test_default_data_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "explicit"))
    assert default_data_dir() == tmp_path / "explicit"
    monkeypatch.delenv(DATA_DIR_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "nativemcp"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "nativemcp"


@pytest.mark.real_process
def test_ingest_a_folder_then_search_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# 노트\n우리는 학교에서 공부했다\n", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("東京都庁の展望台\nHerr Müller\n", encoding="utf-8")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    (docs / ".hidden").write_text("secret")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))

    assert main(["ingest", str(docs), "--store", "notes"]) == 0
    summary = capsys.readouterr().out
    assert "2 added" in summary and "1 skipped" in summary and "0 failed" in summary

    # Running it again finds everything already there.
    assert main(["ingest", str(docs), "--store", "notes"]) == 0
    assert "2 already there" in capsys.readouterr().out

    assert main(["search", "학교", "--store", "notes"]) == 0
    text = capsys.readouterr().out
    assert "a.md:1-2" in text and "**학교**" in text

    assert main(["search", "muller", "--store", "notes", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["results"][0]["filename"] == "b.txt"


@pytest.mark.real_process
def test_ingest_and_search_report_what_went_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    assert main(["ingest", str(tmp_path / "missing.txt"), str(image), *data]) == 1
    captured = capsys.readouterr()
    assert "missing.txt" in captured.err and "image/png" in captured.err
    assert "2 failed" in captured.out

    assert main(["search", "anything", "--store", "nope", *data]) == 2
    assert "No store named 'nope'" in capsys.readouterr().err
