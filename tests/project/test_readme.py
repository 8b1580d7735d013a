"""Every code block of the README and of every docs page (``docs/**/*.md``) runs as
written, by one rule for every page:

- each Python block as its own script in an empty folder (as a reader would paste it),
  twice; a block that stands on two pages as it is runs once;
- a bash block of command-line verbs (only ``nativemcp`` lines besides comments and
  ``source .venv/bin/activate``, and not only ``serve``/``console``, which run until
  stopped) line by line, each verb through the venv's own ``nativemcp``;
- every ``nativemcp serve`` line and every ``mcpServers`` JSON block is parsed by the CLI;
- a block in another language (``text``, a config file for another tool) or in none (a
  drawing) is shown, never run; ``py``, ``sh``, ``console`` and the like are refused, so
  that no Python or shell block escapes these rules by its spelling.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _pages import README, ROOT, blocks, languages, page_name, pages, unique_blocks
from _scripts import venv_script

PYTHON_BLOCKS = unique_blocks("python")
# Other spellings of the languages this file runs or checks: a block marked with one of
# them would go unrun. (Files shown for other tools, `yaml`, `nginx`, `text`..., are shown.)
UNRUN_SPELLINGS = {"py", "python3", "pycon", "sh", "shell", "console", "zsh", "jsonc"}
# Verbs that serve until their client leaves: parsed, never run here.
SERVING_VERBS = {"serve", "console"}
ACTIVATE = "source .venv/bin/activate"


def _command_line_blocks() -> dict[str, list[str]]:
    """The pages' blocks of command-line verbs, once each: ``page#number`` -> the lines."""
    found: dict[str, list[str]] = {}
    for page in pages():
        for number, body in enumerate(blocks(page, "bash")):
            joined = body.replace("\\\n", " ")  # a command continued on the next line
            lines = [line.split("  #")[0].strip() for line in joined.splitlines()]
            lines = [line for line in lines if line and not line.startswith("#")]
            commands = [line for line in lines if line.startswith("nativemcp ")]
            others = [line for line in lines if line not in commands and line != ACTIVATE]
            verbs = {command.split()[1] for command in commands}
            runs = commands and not others and verbs - SERVING_VERBS
            if runs and commands not in found.values():
                found[f"{page_name(page)}#{number}"] = commands
    return found


COMMAND_LINE_BLOCKS = _command_line_blocks()


def test_the_pages_have_the_blocks_this_file_runs() -> None:
    assert len(PYTHON_BLOCKS) >= 12
    assert any(key.startswith("README.md#") for key in COMMAND_LINE_BLOCKS)
    assert {page_name(page) for page in pages()} >= {"README.md", "docs/index.md"}
    for page in pages():
        assert not languages(page) & UNRUN_SPELLINGS, page_name(page)


def test_the_readme_is_a_front_page_that_links_to_pages_that_exist() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/guides/") for link in links)
    for link in links:
        assert (ROOT / link).is_file(), link


@pytest.mark.real_process
@pytest.mark.parametrize("block", PYTHON_BLOCKS)
def test_each_python_block_runs_as_its_own_script(block: str, tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(PYTHON_BLOCKS[block], encoding="utf-8")
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
    first = blocks(README, "bash")[0]
    setup = [line for line in first.splitlines() if line.startswith("python3 -m venv")]
    assert len(setup) == 2
    demo, tests = setup
    assert demo.endswith(".venv/bin/nativemcp demo")
    assert "pip install -q -e '.[test]' --config-settings editable_mode=strict" in tests
    assert tests.endswith(".venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=25")
    ci = (ROOT / ".ci" / "run").read_text()
    # .ci/run reads the commands from the README's first bash block and runs them as they
    # stand: a user's shell has no venv activated, so neither has CI's.
    assert 'startswith("python3 -m venv")' in ci and 'bash -c "${commands[1]}"' in ci
    for script in ("run", "typecheck", "conformance"):
        assert "bin/activate" not in (ROOT / ".ci" / script).read_text(), script


@pytest.mark.real_process
@pytest.mark.parametrize("block", COMMAND_LINE_BLOCKS)
def test_each_command_line_block_runs_line_by_line(block: str, tmp_path: Path) -> None:
    commands = COMMAND_LINE_BLOCKS[block]
    env = {**os.environ, "NATIVEMCP_DATA_DIR": str(tmp_path / "data")}
    script = venv_script("nativemcp")
    for command in commands:
        argv = shlex.split(command)
        done = subprocess.run(
            [str(script), *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        assert done.stdout.strip(), command


def test_the_mcp_client_configs_and_serve_commands_parse() -> None:
    """Every JSON block parses, every `mcpServers` snippet's commands the CLI accepts, and
    so is every `nativemcp serve` line (parsed only: serving runs until the client leaves)."""
    from nativemcp.proxy.cli._main import _build_parser

    parser, _ = _build_parser()
    lines: list[list[str]] = []
    for page in pages():
        for body in blocks(page, "json"):
            config = json.loads(body)  # every JSON block is JSON; some are client configs
            if isinstance(config, dict) and "mcpServers" in config:
                entries = config["mcpServers"].values()
                assert entries, page_name(page)
                lines += [e["args"] for e in entries if e.get("command") == "nativemcp"]
        for body in blocks(page, "bash"):
            for line in body.replace("\\\n", " ").splitlines():
                if line.strip().startswith(("nativemcp serve", "NATIVEMCP_TOKEN=")):
                    # A recipe may start serve in the background (a trailing `&`).
                    argv = shlex.split(line.split("  #")[0].rstrip().removesuffix("&"))
                    lines.append(argv[argv.index("serve") :])
    assert len(lines) >= 8
    for argv in lines:
        args = parser.parse_args(argv)
        assert args.command == "serve" and args.servers
