"""The scripts in examples/ run as a user runs them, from their own folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _scripts import venv_script

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def test_there_are_examples() -> None:
    assert [path.name for path in SCRIPTS] == ["notes_server.py", "sdk_client.py", "sync_script.py"]


@pytest.mark.real_process
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_each_example_runs(script: Path, tmp_path: Path) -> None:
    shutil.copy(script, tmp_path / script.name)
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


@pytest.mark.real_process
def test_the_notes_server_answers_nativemcp_call_as_its_docstring_says(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "notes_server.py", tmp_path)
    nativemcp = venv_script("nativemcp")
    base = [str(nativemcp), "call", "notes_server:server", "add_note"]
    args = ["--args", '{"title": "hi", "body": "x"}', "--data-dir", str(tmp_path / "data")]
    done = subprocess.run([*base, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Saved note 1: 'hi'"
    done = subprocess.run(
        [*base, *args, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert json.loads(done.stdout) == {"noteId": 1, "title": "hi", "body": "x"}


@pytest.mark.real_process
def test_the_sdk_client_calls_serve_over_stdio_and_over_http_with_its_token(
    tmp_path: Path,
) -> None:
    # Run from the venv's python without an activated venv, as the docs say to run it.
    shutil.copy(EXAMPLES / "sdk_client.py", tmp_path)
    done = subprocess.run(
        [sys.executable, "sdk_client.py"], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "stdio: 8 tools: create_goal, clear_goal, add_todo, mark_todo, clear_todos, "
        "add_observation, clear_session, get_current_state",
        "stdio: the model reads: Goal created.",
        "stdio: code gets the goal: ship v1",
        "http: the model reads: Todo ID:1 added.",
        "http: without the token: 401",
        "http: server stopped, exit status 0",
    ]
