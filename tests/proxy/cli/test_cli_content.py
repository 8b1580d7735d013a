"""``nativemcp ingest`` and ``nativemcp search``: real workers, a temporary data folder."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _scripts import venv_script

from nativemcp.proxy.cli import DATA_DIR_ENV, default_data_dir, main


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
    assert "no store named 'nope'" in capsys.readouterr().err


@pytest.mark.real_process
def test_ingest_names_skipped_files_adds_no_empty_store_and_draws_no_bar_when_redirected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    assert main(["ingest", str(docs), "--store", "images", *data]) == 0
    captured = capsys.readouterr()
    assert f"skipped {docs / 'logo.png'}" in captured.err
    assert "ingesting" not in captured.err  # no progress bar on a captured stderr
    assert captured.out.startswith("No store in")

    assert main(["stores", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out)["stores"] == []


@pytest.mark.real_process
def test_stores_list_read_and_delete_walk_a_store_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    note = tmp_path / "note.txt"
    note.write_text("first line\nsecond line\nthird line\n", encoding="utf-8")
    assert main(["ingest", str(note), "--store", "notes", "--json", *data]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["added"] == 1 and summary["store"] == "notes"

    assert main(["stores", *data]) == 0
    assert '"notes"' in capsys.readouterr().out

    assert main(["list", "--store", "notes", "--json", *data]) == 0
    listing = json.loads(capsys.readouterr().out)
    content_id = listing["contents"][0]["contentId"]
    assert listing["contents"][0]["filename"] == "note.txt"

    assert main(["read", content_id, "--store", "notes", "--from", "2", "--to", "2", *data]) == 0
    assert "second line" in capsys.readouterr().out
    assert main(["read", content_id, "--store", "notes", "--from", "2", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "second line\nthird line"

    assert main(["delete", content_id, "--store", "notes", "--json", *data]) == 0
    assert json.loads(capsys.readouterr().out)["filename"] == "note.txt"
    assert main(["delete", "--store", "notes", "--yes", *data]) == 0
    capsys.readouterr()
    assert main(["list", "--store", "notes", *data]) == 2
    assert "no store named 'notes'" in capsys.readouterr().err


@pytest.mark.real_process
def test_call_prints_the_models_text_or_the_value_and_reports_errors_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    todo = ["call", "planning", "add_todo", "--args", '{"name": "write tests"}']
    assert main([*todo, *data]) == 0
    assert "ID:1 [ ] write tests" in capsys.readouterr().out
    assert main(["call", "planning", "get_current_state", "--json", *data]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["todos"] == [{"id": 1, "name": "write tests", "completed": False}]

    assert main(["call", "planning", "add_todo", "--args", "{name}", *data]) == 2
    assert "--args is not JSON" in capsys.readouterr().err
    assert main(["call", "planning", "mark_todo", "--args", '{"id": 9}', *data]) == 1
    assert "9" in capsys.readouterr().err
    assert main(["call", "nowhere", "tool", *data]) == 2
    assert "content-store, planning, workspace" in capsys.readouterr().err


def test_arguments_out_of_range_are_refused_in_the_users_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["search", "x", "--top", "0"])
    assert exit_.value.code == 2
    assert "argument --top: must be between 1 and 100, got 0" in capsys.readouterr().err
    assert main(["delete", "ct_1"]) == 2
    assert "say which store" in capsys.readouterr().err


def test_a_data_dir_that_is_a_file_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    assert main(["stores", "--data-dir", str(afile)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err


@pytest.mark.real_process
def test_ingest_on_one_machine_and_search_on_another_through_a_shared_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    note = tmp_path / "note.md"
    note.write_text("# 노트\n우리는 학교에서 공부했다\n", encoding="utf-8")
    machine_a = ["--data-dir", str(tmp_path / "a"), "--database-url", postgres_url]
    machine_b = ["--data-dir", str(tmp_path / "b"), "--database-url", postgres_url]

    assert main(["ingest", str(note), "--store", "shared", *machine_a]) == 0
    summary = capsys.readouterr().out
    assert "1 added" in summary and "postgresql://" in summary
    password = urlsplit(postgres_url).password
    assert not password or password not in summary
    assert "search_path" not in summary

    assert main(["search", "학교", "--store", "shared", "--json", *machine_b]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(hit["filename"], hit["lineRange"]) for hit in found["results"]] == [
        ("note.md", [1, 2])
    ]
    assert main(["stores", *machine_b]) == 0
    assert "shared" in capsys.readouterr().out


def test_a_database_url_that_is_not_postgresql_is_refused_without_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["search", "x", "--database-url", "mysql://user:hunter2@db/app"]) == 2
    error = capsys.readouterr().err
    assert "postgresql://" in error and "mysql://user@db/app" in error
    assert "hunter2" not in error


def _delete_store_on_a_terminal(data: Path, answer: bytes) -> tuple[int, str]:
    """Run ``nativemcp delete --store notes`` with a terminal for stdin; answer its question."""
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            [venv_script("nativemcp"), "delete", "--store", "notes", "--data-dir", str(data)],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            os.write(leader, answer)
            out, err = process.communicate(timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    return process.returncode, out + err


@pytest.mark.real_process
def test_deleting_a_whole_store_asks_on_a_terminal_and_needs_yes_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    note = tmp_path / "note.txt"
    note.write_text("one line\n", encoding="utf-8")
    assert main(["ingest", str(note), "--store", "notes", "--data-dir", str(data)]) == 0
    capsys.readouterr()

    # No terminal (pytest's stdin is not one) and no --yes: refused, nothing deleted.
    assert main(["delete", "--store", "notes", "--data-dir", str(data)]) == 2
    assert "needs --yes" in capsys.readouterr().err

    status, said = _delete_store_on_a_terminal(data, b"n\n")
    assert status == 1 and "Delete store 'notes' and every file in it" in said
    assert "Nothing deleted." in said
    assert main(["stores", "--json", "--data-dir", str(data)]) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)["stores"]] == ["notes"]

    status, said = _delete_store_on_a_terminal(data, b"y\n")
    assert status == 0 and 'Deleted store "notes"' in said
    assert main(["stores", "--json", "--data-dir", str(data)]) == 0
    assert json.loads(capsys.readouterr().out)["stores"] == []


@pytest.mark.real_process
def test_content_verbs_speak_in_command_line_terms_and_call_keeps_the_models_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    assert main(["stores", *data]) == 0
    empty = capsys.readouterr().out
    assert "nativemcp ingest PATH... --store NAME" in empty and "create_store" not in empty

    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"only line of {name}\n", encoding="utf-8")
    assert main(["ingest", str(tmp_path / "a.txt"), "--store", "one", *data]) == 0
    assert "1 added (1 chunk, " in capsys.readouterr().out
    assert (
        main(
            [
                "ingest",
                str(tmp_path / "a.txt"),
                str(tmp_path / "b.txt"),
                "--store",
                "my notes",
                *data,
            ]
        )
        == 0
    )
    capsys.readouterr()

    assert main(["list", "--store", "my notes", "--limit", "1", *data]) == 0
    listing = capsys.readouterr().out
    assert "a.txt (19 B, 1 line)" in listing
    assert f"More: nativemcp list --store 'my notes' --data-dir {data[1]} --offset 1" in listing
    assert "list_content(" not in listing

    assert main(["search", "only", "--store", "my notes", "--top", "1", *data]) == 0
    found = capsys.readouterr().out
    assert "Read the top hit: nativemcp read ct_" in found and "--from 1 --to 1" in found
    assert "read_content(" not in found

    assert main(["read", "nothing.txt", "--store", "my notes", *data]) == 2
    error = capsys.readouterr().err
    assert error == (
        "nativemcp read: error: no file 'nothing.txt' in store 'my notes' "
        "(see them with `nativemcp list --store 'my notes'`)\n"
    )

    assert main(["delete", "a.txt", "--store", "one", *data]) == 0
    assert "1 chunk)" in capsys.readouterr().out
    assert main(["list", "--store", "one", *data]) == 0
    assert "Add files with: nativemcp ingest PATH... --store one" in capsys.readouterr().out

    # `call` shows what a model reads: the next step as the tool call a model makes.
    assert main(["stores", "--json", *data]) == 0
    stores = json.loads(capsys.readouterr().out)["stores"]
    notes = next(store["storeId"] for store in stores if store["name"] == "my notes")
    page = json.dumps({"store_id": notes, "limit": 1})
    assert main(["call", "content-store", "list_content", "--args", page, *data]) == 0
    assert f'More: list_content(store_id="{notes}", offset=1)' in capsys.readouterr().out
