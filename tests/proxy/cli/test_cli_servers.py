"""One rule for naming a SERVER and one set of pool options, on every verb.

The rule (`resolve_servers`) is checked on each form; each verb that starts servers is
run as the user runs it, the real ``nativemcp`` script in a folder holding the user's
``mytools.py``, without ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
from _scripts import venv_script
from mcp import Client, StdioServerParameters

from nativemcp.proxy.cli._errors import UsageError
from nativemcp.proxy.cli._main import _build_parser
from nativemcp.proxy.cli._servers import ServerChoice, resolve_servers

MYTOOLS = '''
from nativemcp.workers import Server

server = Server("mytools")


@server.tool()
def greet(name: str, loud: bool = False) -> str:
    """Say hello to someone. Loudly, if asked.

    A second paragraph the listing leaves out.
    """
    text = f"hello {name}"
    return text.upper() if loud else text
'''

POOL_VERBS = ("ingest", "search", "stores", "list", "read", "delete", "call", "tools")
POOL_VERBS_WITH_SERVERS = ("serve", "console")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the user's mytools.py (and a copy in sub/), as the current folder;
    sys.path and PYTHONPATH are restored after the test."""
    (tmp_path / "mytools.py").write_text(MYTOOLS)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "subtools.py").write_text(MYTOOLS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return tmp_path


def test_every_form_of_server_names_one_importable_source(project: Path) -> None:
    choice = resolve_servers(
        [
            "planning",
            "mytools:server",
            "mytools.py:server",
            "./mytools.py:server",
            str(project / "mytools.py") + ":server",
            "sub/subtools.py:server",
        ]
    )
    assert choice == ServerChoice(
        builtins=("planning",),
        sources=("mytools:server",) * 4 + ("subtools:server",),
    )
    # This process and the workers it spawns (through PYTHONPATH) import them alike.
    importable = os.environ["PYTHONPATH"].split(os.pathsep)
    assert str(project) in importable and str(project / "sub") in importable
    assert str(project) in sys.path and str(project / "sub") in sys.path
    # A bare name is a server of --mcp-config when one is given.
    assert resolve_servers(["time"], mcp_config=True) == ServerChoice(external=("time",))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nosuchmodule:server", "no module 'nosuchmodule'"),
        ("missing.py:server", "no file 'missing.py'"),
        ("mytools.py", "add the name of its Server (or factory): mytools.py:server"),
        ("no-such-thing", "no server 'no-such-thing': give a built-in (content-store,"),
        ("mytools:", "is none of a built-in"),
        ("json.py:server", "the module name 'json' is taken by"),
        ("sub/mytools.py:server", "the module name 'mytools' is taken by"),
    ],
)
def test_a_server_of_no_form_is_named_with_the_forms(
    project: Path, spec: str, message: str
) -> None:
    (project / "json.py").write_text(MYTOOLS)
    (project / "sub" / "mytools.py").write_text(MYTOOLS)
    resolve_servers(["mytools.py:server"])  # first: the name 'mytools' is its
    with pytest.raises(UsageError, match=r"^[^\n]*$") as error:
        resolve_servers([spec])
    assert message in str(error.value)


def test_every_verb_that_starts_servers_takes_the_same_pool_options() -> None:
    parser, _ = _build_parser()
    options = ["--data-dir", "d", "--workspace", "w", "--mcp-config", "m.json"]
    options += ["--database-url", "postgresql://h/db"]
    positional = {"ingest": ["f"], "search": ["q"], "read": ["c"], "call": ["s", "t"]}
    for verb in (*POOL_VERBS, *POOL_VERBS_WITH_SERVERS):
        servers = ["planning"] if verb == "serve" else []
        args = parser.parse_args([verb, *positional.get(verb, []), *servers, *options])
        assert (args.data_dir, args.workspace, args.mcp_config, args.database_url) == (
            Path("d"),
            Path("w"),
            Path("m.json"),
            "postgresql://h/db",
        ), verb


def _nativemcp(*args: str, cwd: Path, data: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [venv_script("nativemcp"), *args, "--data-dir", str(data)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.real_process
def test_call_and_tools_take_the_users_server_in_every_form(project: Path) -> None:
    data = project / "data"
    greet = ["greet", "--args", '{"name": "Ada"}']
    for spec in ("mytools:server", "mytools.py:server", "./mytools.py:server"):
        done = _nativemcp("call", spec, *greet, cwd=project, data=data)
        assert (done.returncode, done.stdout, done.stderr) == (0, "hello Ada\n", ""), spec
    # From another folder, by absolute path.
    done = _nativemcp("tools", f"{project / 'mytools.py'}:server", cwd=project / "sub", data=data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "mytools: 1 tool\n  greet(name: string, loud?: boolean)\n      Say hello to someone.\n"
    )


@pytest.mark.real_process
def test_tools_json_prints_the_definitions_a_client_gets(project: Path) -> None:
    done = _nativemcp(
        "tools", "planning", "sub/subtools.py:server", "--json", cwd=project, data=project / "d"
    )
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    services = {tool["_meta"]["io.github.nativemcp/service"]["serverName"] for tool in tools}
    assert services == {"planning", "mytools"}
    greet = next(tool for tool in tools if tool["name"].endswith("__greet"))
    assert greet["inputSchema"]["required"] == ["name"]
    assert greet["description"].startswith("Say hello to someone.")


@pytest.mark.real_process
def test_tools_names_an_unknown_server_of_the_config(project: Path) -> None:
    config = project / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    done = _nativemcp("tools", "time", "--mcp-config", str(config), cwd=project, data=project / "d")
    assert done.returncode == 2  # a name the user typed
    assert done.stderr == "nativemcp tools: error: no server named 'time'; servers: (none)\n"


@pytest.mark.anyio
@pytest.mark.real_process
async def test_serve_takes_a_file_server_and_the_workspace_folder(project: Path) -> None:
    workspace = project / "project-folder"
    workspace.mkdir()
    params = StdioServerParameters(
        command=venv_script("nativemcp"),
        args=[
            "serve",
            "workspace",
            "sub/subtools.py:server",
            "--workspace",
            str(workspace),
            "--data-dir",
            str(project / "data"),
        ],
        cwd=str(project),
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert client.server_info is not None
            assert client.server_info.version == importlib.metadata.version("nativemcp")
            names = {tool.name for tool in (await client.list_tools()).tools}
            # The user's server is not listed as a built-in one.
            assert {"builtin_workspace__write_file", "mytools__greet"} <= names
            await client.call_tool(
                "builtin_workspace__write_file", {"path": "notes.md", "content": "# mine"}
            )
            result = await client.call_tool("mytools__greet", {"name": "Ada"})
    assert getattr(result.content[0], "text", None) == "hello Ada"
    assert (workspace / "notes.md").read_text() == "# mine"


@pytest.mark.real_process
def test_console_takes_a_module_server_from_the_current_folder(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [venv_script("nativemcp"), "console", "--server", "mytools:server", "--data-dir", "d"]
    with subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), process.stderr.read()
            with urllib.request.urlopen(f"{url}api/tools", timeout=30) as answer:
                assert "mytools" in answer.read().decode()
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_serve_says_that_an_mcp_config_is_served_whole(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nativemcp.proxy.cli import main

    (project / "mcp.json").write_text(json.dumps({"mcpServers": {}}))
    assert main(["serve", "time", "--mcp-config", "mcp.json"]) == 2
    assert capsys.readouterr().err == (
        "nativemcp serve: error: serve takes built-in and module servers; time is served "
        "with every other server of --mcp-config, without naming it\n"
    )
    assert main(["serve"]) == 2
    assert "say what to serve: SERVER..., --mcp-config FILE, or both" in capsys.readouterr().err


@pytest.mark.anyio
@pytest.mark.real_process
async def test_serve_with_only_an_mcp_config_serves_its_servers(project: Path) -> None:
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"time": time_server}}))
    params = StdioServerParameters(
        command=venv_script("nativemcp"),
        args=["serve", "--mcp-config", "mcp.json", "--data-dir", str(project / "data")],
        cwd=str(project),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert "get_current_time" in names  # one server served: its tools keep their names


def test_a_tools_signature_reads_its_input_schema() -> None:
    from nativemcp.protocol import Tool
    from nativemcp.proxy.cli._tools import signature, summary

    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "mode": {"enum": ["a", "w"]},
            "edits": {"type": "array", "items": {"$ref": "#/$defs/LineReplacement"}},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["path", "edits"],
    }
    tool = Tool(name="edit", input_schema=schema)
    assert signature(tool, "edit") == (
        "edit(path: string, mode?: a|w, edits: LineReplacement[], limit?: integer|null)"
    )
    assert summary("Edit a file. Then save it.\nMore.\n\nDetails.") == "Edit a file."
    assert summary(None) == "(no description)"
    assert summary("x" * 150) == "x" * 99 + "…"


def test_serve_takes_the_fast_path_unless_told_not_to() -> None:
    parser, _ = _build_parser()
    plain = ["serve", "planning", "--transport", "http", "--stateless"]
    assert parser.parse_args(plain).fast_path is True
    assert parser.parse_args([*plain, "--no-fast-path"]).fast_path is False
