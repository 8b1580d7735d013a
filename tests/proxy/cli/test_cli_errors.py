"""What goes wrong on the command line is one line that names it, never a traceback.

The real ``nativemcp`` script runs each case: a bad ``--mcp-config`` file on every verb
that starts servers, a ``--database-url`` that cannot be used (why, and what to do), a
port in use for ``serve``.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from _process import free_port
from _scripts import venv_script

from nativemcp.proxy import load_mcp_servers
from nativemcp.proxy.cli import main

MISSPELLED = """{
  "mcpServers": {
    "time": {
      "comand": "mcp-server-time"
    }
  }
}
"""


def _nativemcp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NATIVEMCP_DATABASE_URL"}
    return subprocess.run(
        [venv_script("nativemcp"), *args],
        cwd=cwd,
        env={**env, "NATIVEMCP_DATA_DIR": str(cwd / "data")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    assert done.returncode == status, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize(
    "verb",
    [["call", "planning", "get_current_state"], ["serve", "planning"], ["console"], ["tools"]],
)
def test_a_misspelled_key_in_the_mcp_config_is_one_line_with_file_line_and_column(
    tmp_path: Path, verb: list[str]
) -> None:
    (tmp_path / "mcp.json").write_text(MISSPELLED)
    done = _nativemcp(*verb, "--mcp-config", "mcp.json", cwd=tmp_path)
    assert _one_line(done, 2) == (
        f"nativemcp {verb[0]}: error: mcp.json:4:7: MCP server 'time': unknown key "
        "'comand' (did you mean 'command'?)"
    )


def test_an_mcp_config_that_is_not_json_says_where(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text('{\n  "mcpServers": {\n    "time": {"command": "x",}\n')
    done = _nativemcp(
        "call", "planning", "get_current_state", "--mcp-config", "mcp.json", cwd=tmp_path
    )
    assert _one_line(done, 2) == (
        "nativemcp call: error: mcp.json:3:29: not valid JSON: "
        "Expecting property name enclosed in double quotes"
    )


def test_an_entry_error_points_at_its_key_and_other_clients_keys_pass(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entries = {"ok": {"command": "x", "autoApprove": []}, "bad": {"command": "x", "args": "-v"}}
    config.write_text(json.dumps({"servers": entries}, indent=2))
    with pytest.raises(ValueError) as error:
        load_mcp_servers(config)
    assert str(error.value) == (
        f"{config}:9:7: MCP server 'bad': 'args' must be a list of strings, got '-v'"
    )
    del entries["bad"]
    config.write_text(json.dumps({"servers": entries}))
    assert [spec.name for spec in load_mcp_servers(config)] == ["ok"]


def test_a_database_where_nothing_listens_is_one_line_with_advice(tmp_path: Path) -> None:
    url = f"postgresql://me:hunter2@127.0.0.1:{free_port()}/app"
    done = _nativemcp("stores", "--database-url", url, cwd=tmp_path)
    line = _one_line(done, 1)
    assert line == (
        f"nativemcp stores: error: cannot use {url.replace(':hunter2', '')}: nothing listens "
        f"on {url.rsplit('@')[1].split('/')[0]}: start PostgreSQL there, or fix the host and port"
    )
    assert not (tmp_path / "data").exists()  # no server started


def _with(url: str, *, password: str | None = None, database: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if password is not None:
        netloc = f"{parts.username}:{password}@{parts.hostname}:{parts.port}"
    path = f"/{database}" if database is not None else parts.path
    return urlunsplit((parts.scheme, netloc, path, parts.query, ""))


@pytest.mark.real_process
def test_a_wrong_password_and_an_unknown_database_get_their_own_advice(
    tmp_path: Path, postgres_url: str
) -> None:
    done = _nativemcp(
        "search", "x", "--database-url", _with(postgres_url, password="nope"), cwd=tmp_path
    )
    line = _one_line(done, 1)
    assert "refused user" in line and "check the user and password in the URL" in line
    assert "nope" not in line and "retry" not in line

    done = _nativemcp(
        "stores", "--database-url", _with(postgres_url, database="nosuchdb"), cwd=tmp_path
    )
    line = _one_line(done, 1)
    assert "there is no database 'nosuchdb'" in line and "createdb nosuchdb" in line
    password = urlsplit(postgres_url).password
    assert password and password not in line


def test_without_the_postgres_extra_only_the_advice_is_said(tmp_path: Path) -> None:
    # The driver's import is blocked as if it were not installed (this environment has it).
    script = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "from nativemcp.proxy.cli import main\n"
        "sys.exit(main(['stores', '--database-url', 'postgresql://me@db.example/app']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert _one_line(done, 2) == (
        "nativemcp stores: error: --database-url needs the PostgreSQL driver: "
        "pip install 'nativemcp[postgres]'"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("notaurl", ""),
        ("me:hunter2@db/app", ""),
        ("mysql://me:hunter2@db/app", ", not 'mysql://me@db/app'"),
    ],
)
def test_a_url_that_is_not_postgresql_echoes_only_what_was_typed_without_password(
    tmp_path: Path, url: str, shown: str
) -> None:
    done = _nativemcp("stores", "--database-url", url, cwd=tmp_path)
    assert _one_line(done, 2) == (
        "nativemcp stores: error: --database-url must be a "
        f"postgresql://user:password@host/database URL{shown}"
    )


def test_serve_on_a_busy_port_is_one_line_and_announces_nothing(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = _nativemcp(
            "serve", "planning", "--transport", "http", "--port", str(port), cwd=tmp_path
        )
    line = _one_line(done, 2)
    assert (
        line == f"nativemcp serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert "serving" not in done.stdout + done.stderr


@pytest.mark.real_process
def test_a_reader_that_leaves_early_stops_the_listing_quietly(tmp_path: Path) -> None:
    command = [venv_script("nativemcp"), "tools", "planning", "--data-dir", str(tmp_path)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # as `| head` does, before anything was written
        errors = process.stderr.read()
        assert process.wait(timeout=120) == 1
    assert errors == ""


@pytest.mark.real_process
def test_serve_over_http_starts_its_servers_before_it_announces_them(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "def server(config):\n    raise RuntimeError('cannot build: no API key')\n"
    )
    done = _nativemcp(
        "serve", "broken.py:server", "--transport", "http", "--port", "0", cwd=tmp_path
    )
    assert _one_line(done, 1) == (  # named as typed, not as the module it imports
        "nativemcp serve: error: server 'broken.py:server' failed to start: "
        "RuntimeError: cannot build: no API key"
    )
    assert "serving" not in done.stdout + done.stderr


# -- the exit status says whose mistake it is; the line names the verb -------------------

GREETER = """
from nativemcp.workers import Server

server = Server("greeter")


@server.tool
def greet(name: str) -> str:
    \"\"\"Say hello.\"\"\"
    return f"Hello, {name}!"


def broken(config):
    raise RuntimeError("no API key")
"""


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("srever", "serve"), ("serach", "search"), ("tols", "tools"), ("xyzzy", None)],
)
def test_a_mistyped_command_exits_2_with_the_nearest_command(
    capsys: pytest.CaptureFixture[str], typed: str, suggested: str | None
) -> None:
    assert main([typed, "planning"]) == 2
    line = capsys.readouterr().err.strip()
    hint = f" (did you mean {suggested!r}?)" if suggested else ""
    assert line.startswith(f"nativemcp: error: unknown command {typed!r}{hint}; the commands")
    assert "serve, console" in line and "\n" not in line


@pytest.mark.real_process
def test_a_wrong_tool_argument_or_tool_name_exits_2_and_names_the_verb(tmp_path: Path) -> None:
    (tmp_path / "greeter.py").write_text(GREETER)
    wrong = '{"nam": "Ada"}'
    done = _nativemcp("call", "greeter.py:server", "greet", "--args", wrong, cwd=tmp_path)
    assert _one_line(done, 2) == (
        "nativemcp call: error: Invalid arguments for tool 'greet': Object contains unknown "
        "field `nam` (`nativemcp tools greeter.py:server` lists its tools and their arguments)"
    )
    done = _nativemcp("call", "greeter.py:server", "gret", cwd=tmp_path)
    assert _one_line(done, 2).startswith(
        "nativemcp call: error: Unknown tool 'gret' on server 'greeter'; available tools: greet"
    )


@pytest.mark.real_process
def test_a_tools_own_error_exits_1_with_the_verb_and_the_whole_text(tmp_path: Path) -> None:
    done = _nativemcp("call", "planning", "mark_todo", "--args", '{"id": 5}', cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "nativemcp call: error: tool 'mark_todo' failed: Error: unknown todo id 5. "
        "Nothing was changed.\nThere are no todos in this plan; add one with add_todo.\n"
    )


@pytest.mark.real_process
@pytest.mark.parametrize("typed", ["greeter.py:broken", "./greeter.py:broken", "greeter:broken"])
def test_a_server_that_fails_to_start_is_named_as_it_was_typed(tmp_path: Path, typed: str) -> None:
    (tmp_path / "greeter.py").write_text(GREETER)
    done = _nativemcp("call", typed, "greet", cwd=tmp_path)
    assert _one_line(done, 1) == (
        f"nativemcp call: error: server {typed!r} failed to start: RuntimeError: no API key"
    )


@pytest.mark.real_process
def test_an_external_servers_unknown_tool_gets_the_nearest_name_and_a_listing_to_paste(
    tmp_path: Path,
) -> None:
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    (tmp_path / "my mcp.json").write_text(json.dumps({"mcpServers": {"time": time_server}}))
    data = tmp_path / "other data"  # not the default: the hint must carry it, quoted
    typed = ["--mcp-config", "my mcp.json", "--data-dir", str(data)]
    done = _nativemcp("call", "time", "get_curent_time", *typed, cwd=tmp_path)
    line = _one_line(done, 2)
    assert line.startswith(
        "nativemcp call: error: Unknown tool 'get_curent_time' on server 'time' "
        "(did you mean 'get_current_time'?); available tools: get_current_time, "
    )
    listing = line.split("(`", 1)[1].split("`", 1)[0]
    assert shlex.split(listing) == ["nativemcp", "tools", "time", *typed]
