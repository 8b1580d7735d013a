"""The config files MCP hosts write: Claude Desktop, Cursor, VS Code, Windsurf, Claude Code.

Each host's documented shape is read into the same `ExternalServerSpec`; Claude Code's
``${VAR}`` and ``${VAR:-default}`` expand in every field that may hold one, and one
config in each shape starts a real server (``mcp-server-time``) through the pool.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from nativemcp.proxy import ExternalServerSpec, WorkerPool, load_mcp_servers
from nativemcp.proxy.external import expand_variables

pytestmark = pytest.mark.anyio_backends("asyncio")

TIME = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


def _one(config: dict[str, Any], environ: dict[str, str] | None = None) -> ExternalServerSpec:
    (spec,) = load_mcp_servers(config, environ=environ or {})
    return spec


def test_vs_code_servers_with_type_are_read() -> None:
    config = {
        "inputs": [{"type": "promptString", "id": "token", "password": True}],
        "servers": {
            "local": {"type": "stdio", "command": "python", "args": ["-m", "x"]},
            "remote": {"type": "http", "url": "https://example.com/mcp"},
            "legacy": {"type": "sse", "url": "https://example.com/sse"},
        },
    }
    specs = {spec.name: spec for spec in load_mcp_servers(config)}
    assert specs["local"].transport == "stdio" and specs["local"].args == ["-m", "x"]
    assert specs["remote"].transport == "http" and specs["remote"].url == "https://example.com/mcp"
    assert specs["legacy"].transport == "sse"


def test_windsurf_server_url_is_a_remote_server() -> None:
    spec = _one(
        {"mcpServers": {"remote": {"serverUrl": "https://example.com/mcp", "headers": {"A": "b"}}}}
    )
    assert (spec.transport, spec.url, spec.headers) == (
        "http",
        "https://example.com/mcp",
        {"A": "b"},
    )
    sse = _one({"mcpServers": {"r": {"type": "sse", "serverUrl": "http://localhost:9/sse"}}})
    assert (sse.transport, sse.url) == ("sse", "http://localhost:9/sse")


def test_claude_code_variables_expand_in_every_field_that_holds_text() -> None:
    environ = {"BIN": "/opt/bin", "TOKEN": "s3cret", "EMPTY": "", "HOST": "api.example.com"}
    stdio = _one(
        {
            "mcpServers": {
                "tool": {
                    "type": "stdio",
                    "command": "${BIN}/tool",
                    "args": ["--mode=${MODE:-fast}", "${env:HOST}"],
                    "env": {"API_KEY": "${TOKEN}", "LEVEL": "${EMPTY:-info}"},
                    "cwd": "${BIN}",
                }
            }
        },
        environ,
    )
    assert stdio.command == "/opt/bin/tool"
    assert stdio.args == ["--mode=fast", "api.example.com"]
    assert stdio.env == {"API_KEY": "s3cret", "LEVEL": "info"}
    assert stdio.cwd == "/opt/bin"
    remote = _one(
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                }
            }
        },
        environ,
    )
    assert remote.url == "https://api.example.com/mcp"
    assert remote.headers == {"Authorization": "Bearer s3cret"}


def test_a_variable_that_is_not_set_is_an_error_naming_it_and_where() -> None:
    with pytest.raises(ValueError, match=r"MCP server 'api' headers\.Authorization.*'TOKEN'"):
        _one({"api": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}})


def test_what_is_not_an_environment_variable_stays_as_written() -> None:
    text = "${input:token} $HOME ${1BAD}"
    assert expand_variables(text, {"HOME": "/h"}) == text
    assert expand_variables("${workspaceFolder}${/}x", {}) == str(Path.cwd() / "x")
    assert expand_variables("${userHome}", {"userHome": "/mine"}) == "/mine"
    assert expand_variables("${A}-${A:-x}", {"A": "1"}) == "1-1"
    assert expand_variables("${A}", {"A": ""}) == ""


def test_a_stdio_entry_without_a_command_says_how_a_remote_one_is_written() -> None:
    with pytest.raises(ValueError, match=r"'x'.*'command'.*'serverUrl'"):
        load_mcp_servers({"x": {"args": []}})


def test_the_tool_allow_list_and_disabled_tools_match_whole_names_only() -> None:
    only_read = _one({"s": {"command": "x", "tools": ["read"]}})
    assert only_read.allows("read")
    assert not only_read.allows("read_file") and not only_read.allows("re")
    only_read_file = _one({"s": {"command": "x", "tools": ["read_file"]}})
    assert only_read_file.allows("read_file")
    assert not only_read_file.allows("read") and not only_read_file.allows("file")
    no_read = _one({"s": {"command": "x", "disabledTools": ["read"]}})
    assert not no_read.allows("read")
    assert no_read.allows("read_file") and no_read.allows("unread") and no_read.allows("rea")
    no_read_file = _one({"s": {"command": "x", "disabled_tools": ["read_file"]}})
    assert no_read_file.allows("read") and no_read_file.allows("file")


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("arsg", "args"),
        ("evn", "env"),
        ("argss", "args"),
        ("comand", "command"),
        ("cmomand", "command"),
    ],
)
def test_a_misspelled_key_is_an_error_with_did_you_mean(typo: str, meant: str) -> None:
    entry = {"command": "x", typo: []}
    with pytest.raises(
        ValueError, match=rf"'s': unknown key '{typo}' \(did you mean '{meant}'\?\)"
    ):
        load_mcp_servers({"s": entry})


def test_a_key_of_another_client_that_is_not_a_typo_is_ignored() -> None:
    assert _one({"s": {"command": "x", "autoApprove": [], "alwaysAllow": [], "envFile": "e"}})


@pytest.mark.parametrize(
    ("top", "meant"),
    [("mcpServer", "mcpServers"), ("mcpservers", "mcpServers"), ("server", "servers")],
)
def test_a_misspelled_top_level_key_is_an_error_with_did_you_mean(
    top: str, meant: str, tmp_path: Path
) -> None:
    config = {top: {"time": {"command": "x"}}}
    with pytest.raises(
        ValueError, match=rf"unknown top-level key '{top}' \(did you mean '{meant}'"
    ):
        load_mcp_servers(config)
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}:2:3: unknown top-level"):
        load_mcp_servers(path)


def test_a_server_named_like_the_top_level_key_is_still_a_server() -> None:
    (spec,) = load_mcp_servers({"server": {"command": "x"}})
    assert spec.name == "server" and spec.command == "x"


@pytest.mark.anyio
@pytest.mark.real_process
@pytest.mark.parametrize("shape", ["claude-desktop", "vscode", "claude-code"])
async def test_each_hosts_file_starts_a_real_server(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NATIVEMCP_TEST_PYTHON", sys.executable)
    entry: dict[str, Any] = {"command": sys.executable, "args": TIME}
    if shape == "vscode":
        config: dict[str, Any] = {"servers": {"Local Time": {"type": "stdio", **entry}}}
    elif shape == "claude-code":
        entry = {"type": "stdio", "command": "${NATIVEMCP_TEST_PYTHON}", "args": TIME}
        entry["env"] = {"TZ": "${NATIVEMCP_TEST_TZ:-UTC}"}
        config = {"mcpServers": {"Local Time": entry}}
    else:
        config = {"mcpServers": {"Local Time": entry}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    async with WorkerPool(mcp_servers=path) as pool:
        proxy = pool.server("Local Time")
        response = await proxy.call_tool("get_current_time", {"timezone": "UTC"})
    assert response.result is not None and not response.result.is_error
