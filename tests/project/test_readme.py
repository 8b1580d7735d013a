"""Every code block of the README runs as written: each Python block as its own script
in an empty folder (as a reader would paste it), the command-line block line by line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _scripts import venv_script

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README.read_text("utf-8")) if lang == language]


PYTHON_BLOCKS = _blocks("python")


def test_the_readme_has_the_blocks_this_file_runs() -> None:
    assert len(PYTHON_BLOCKS) >= 6
    languages = {lang for lang, _ in _BLOCK.findall(README.read_text("utf-8"))}
    assert languages == {"python", "bash", "json"}


@pytest.mark.real_process
@pytest.mark.parametrize("number", range(len(PYTHON_BLOCKS)))
def test_each_python_block_runs_as_its_own_script(number: int, tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(PYTHON_BLOCKS[number], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # Run again in the same folder: nothing in a snippet may hold only the first time.
    again = subprocess.run(
        [sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr


def test_ci_runs_the_readmes_two_commands_as_written_without_activating_the_venv() -> None:
    setup = [line for line in _blocks("bash")[0].splitlines() if line.startswith("python3 -m venv")]
    assert len(setup) == 2
    demo, tests = setup
    assert demo.endswith(".venv/bin/nativemcp demo")
    assert "pip install -q -e '.[test]' --config-settings editable_mode=strict" in tests
    assert tests.endswith(".venv/bin/python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text()
    # .ci/run reads the commands from the README's first bash block and runs them as they
    # stand: a user's shell has no venv activated, so neither has CI's.
    assert 'startswith("python3 -m venv")' in ci and 'bash -c "${commands[1]}"' in ci
    for script in ("run", "typecheck", "conformance"):
        assert "bin/activate" not in (ROOT / ".ci" / script).read_text(), script


@pytest.mark.real_process
def test_the_command_line_block_runs_line_by_line(tmp_path: Path) -> None:
    block = next(b for b in _blocks("bash") if "nativemcp ingest" in b)
    commands = [
        line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("nativemcp ")
    ]
    assert len(commands) >= 8
    env = {**os.environ, "NATIVEMCP_DATA_DIR": str(tmp_path / "data")}
    script = venv_script("nativemcp")
    for command in commands:
        argv = shlex.split(command)
        done = subprocess.run(
            [str(script), *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        assert done.stdout.strip(), command


def test_the_mcp_client_config_and_serve_commands_parse() -> None:
    """The `mcpServers` snippet is JSON whose commands the CLI accepts, and so is every
    `nativemcp serve` line (parsed only: serving runs until the client leaves)."""
    import json

    from nativemcp.proxy.cli._main import _build_parser

    parser, _ = _build_parser()
    (config,) = [json.loads(body) for body in _blocks("json")]
    entries = config["mcpServers"].values()
    assert entries
    lines = [entry["args"] for entry in entries if entry["command"] == "nativemcp"]
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith(("nativemcp serve", "NATIVEMCP_TOKEN=")):
                argv = shlex.split(line.split("  #")[0])
                lines.append(argv[argv.index("serve") :])
    assert len(lines) >= 4
    for argv in lines:
        args = parser.parse_args(argv)
        assert args.command == "serve" and args.servers
