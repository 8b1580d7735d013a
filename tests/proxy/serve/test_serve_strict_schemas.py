"""Every schema `nativemcp serve` lists passes the MCP Inspector CLI's ``--strict`` lint.

The Inspector (npm ``@modelcontextprotocol/inspector`` 2.x on Node 22, from `.ci/node`)
lists the tools over stdio and exits 6 on a schema strict clients refuse, such as a
bare ``false`` where a schema object is expected (msgspec writes a fixed-length tuple's
``items`` so). The built-ins and an external server whose own schemas use bare booleans
are served together.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _node import node_env, node_tool
from _scripts import venv_script

from nativemcp.protocol import Tool, portable_schema, portable_tool

# An external server written with the SDK's low-level API: it lists exactly this schema.
BOOLEAN_SCHEMAS = """
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {
    "type": "object",
    "properties": {
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}] * 2, "items": False},
        "free": {"type": "object", "additionalProperties": True},
        "never": False,
    },
}


async def list_tools(ctx, params):
    tool = types.Tool(name="pair", description="A pair.", input_schema=SCHEMA)
    return types.ListToolsResult(tools=[tool])


async def main():
    server = Server("booleans", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""


@pytest.mark.real_process
def test_the_inspector_strict_lint_passes_on_builtins_and_external_tools(tmp_path: Path) -> None:
    inspector = node_tool("mcp-inspector")
    (tmp_path / "booleans.py").write_text(BOOLEAN_SCHEMAS, encoding="utf-8")
    config = {"mcpServers": {"booleans": {"command": sys.executable, "args": ["booleans.py"]}}}
    (tmp_path / "mcp.json").write_text(json.dumps(config), encoding="utf-8")
    serve = [venv_script("nativemcp"), "serve", "content-store", "planning", "workspace"]
    serve += ["--data-dir", str(tmp_path / "data"), "--mcp-config", "mcp.json"]
    done = subprocess.run(
        [inspector, "--cli", "--method", "tools/list", "--strict", "--format", "json", *serve],
        cwd=tmp_path,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    names = {tool["name"] for tool in json.loads(done.stdout)["result"]["tools"]}
    assert {"booleans__pair", "builtin_content-store__read_content"} <= names
    assert "Error:" not in done.stderr


def test_bare_booleans_take_their_object_form_except_where_booleans_belong() -> None:
    schema = {
        "type": "object",
        "properties": {"never": False, "any": True, "t": {"prefixItems": [True], "items": False}},
        "additionalProperties": False,
        "$defs": {"A": {"anyOf": [False, {"type": "string"}], "not": True}},
        "dependencies": {"a": ["b"]},
    }
    assert portable_schema(schema) == {
        "type": "object",
        "properties": {
            "never": {"not": {}},
            "any": {},
            "t": {"prefixItems": [{}], "items": {"not": {}}},
        },
        "additionalProperties": False,
        "$defs": {"A": {"anyOf": [{"not": {}}, {"type": "string"}], "not": {}}},
        "dependencies": {"a": ["b"]},
    }
    tool = Tool(name="t", input_schema={"type": "object", "properties": {"x": {"type": "string"}}})
    assert portable_tool(tool) is tool
