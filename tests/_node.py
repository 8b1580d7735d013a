"""The Node MCP software the tests run for real: the Inspector CLI and server-everything.

`.ci/node` installs Node 22 and the pinned npm packages into ``.ci/.node`` (git-ignored;
``.ci/run`` calls it). Without them a test is skipped here, visibly, and fails under
``CI=true``: a broken setup cannot pass as green.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_TOOLS = ROOT / ".ci" / ".node"
BIN = NODE_TOOLS / "node_modules" / ".bin"


def node_tool(name: str) -> str:
    """The path of the npm executable ``name`` installed by ``.ci/node``; skips (fails
    under ``CI=true``) when it is missing."""
    path = BIN / name
    if path.exists() and (BIN / "node").exists():
        return str(path)
    message = f"{name} is not installed under {NODE_TOOLS}: run `bash .ci/node`"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (.ci/run installs it)")
    pytest.skip(message)


def node_env() -> dict[str, str]:
    """The environment for a Node tool: Node 22 from ``.ci/node`` first on ``PATH`` (the
    tools' ``#!/usr/bin/env node`` must not find an older system Node)."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def everything_server() -> dict[str, Any]:
    """The ``mcpServers`` entry of npm's server-everything over stdio (skips, or fails
    under ``CI=true``, when it is not installed)."""
    return {
        "command": node_tool("mcp-server-everything"),
        "args": ["stdio"],
        "env": {"PATH": node_env()["PATH"]},
    }


def basic_app_server(package: str = "server-basic-vanillajs") -> dict[str, Any]:
    """The ``mcpServers`` entry of one of npm's MCP Apps example servers
    (``@modelcontextprotocol/<package>``, ``.ci/node``) over stdio; skips (fails under
    ``CI=true``) without it."""
    node = node_tool("node")
    found = [
        folder / "node_modules" / "@modelcontextprotocol" / package
        for folder in (NODE_TOOLS, ROOT / ".ci" / ".apps")
    ]
    script = next((path / "dist" / "index.js" for path in found if path.exists()), None)
    if script is None:
        message = f"{package} is not installed under {NODE_TOOLS}: run `bash .ci/node`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (.ci/run installs it)")
        pytest.skip(message)
    return {"command": node, "args": [str(script), "--stdio"], "env": {"PATH": node_env()["PATH"]}}
