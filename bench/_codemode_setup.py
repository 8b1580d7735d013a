"""bench.codemode's world: a workspace with notes and a git repository, content stores
with documents (made once as a template, copied for each contender), the external
servers as users start them, FastMCP's CodeMode over the same servers, and the
mechanical translation of a task's program to FastMCP's form."""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

from nativemcp.proxy import WorkerPool

ROOT: Final = Path(__file__).resolve().parents[1]
_NODE_BIN: Final = ROOT / ".ci" / ".node" / "node_modules" / ".bin"

NOTES: Final = {
    "notes/plan.md": "# Launch plan\n- TODO: book the venue\n- done: pick a date\n"
    "- TODO: invite speakers\n",
    "notes/budget.md": "# Budget\nTotal: 1200\n- TODO: confirm catering\n",
    "notes/readme.md": "# Notes\nNothing to do here.\n",
    "src/app.py": "def main():\n    # TODO: parse arguments\n    return 0\n",
}
COMMITS: Final = [
    ("README.md", "# demo\n", "init readme"),
    ("app.py", "import parser\n\nprint(parser.parse('1 2'))\n", "add the app"),
    ("parser.py", "def parse(text):\n    return text.split()\n", "add the parser"),
    (
        "parser.py",
        "def parse(text):\n    return [int(x) for x in text.split()]\n",
        "fix: parse ints",
    ),
    ("docs.md", "# Usage\nRun app.py.\n", "docs: usage"),
]
STORES: Final = {
    "alpha": [
        (
            "kickoff.md",
            "Kickoff notes\nThe deadline for the first draft is March 3.\nOwners: Ada, Lin.",
        ),
        ("budget.md", "Budget overview\nCatering 400, venue 800.\nNo deadline yet."),
        ("retro.md", "Retrospective\nWe shipped late; the deadline moved twice."),
    ],
    "beta": [
        ("api.md", "API design\nEndpoints: /items, /orders.\nVersioned under /v2."),
        ("release.md", "Release checklist\nTag, build, publish.\nThe release deadline is Friday."),
    ],
    "gamma": [
        ("hiring.md", "Hiring plan\nTwo engineers by June.\nInterview loop: three rounds."),
        ("onboarding.md", "Onboarding\nDay one: laptop, accounts.\nWeek one deadline: first PR."),
        ("offsite.md", "Offsite\nLisbon in May.\nBook flights before the deadline in April."),
    ],
}


def make_workspace(root: Path) -> Path:
    """The workspace (notes, source, a git repository at ``repo/``); the repo's path."""
    for name, text in NOTES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    repo = root / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=env)
    for name, text, message in COMMITS:
        (repo / name).write_text(text)
        subprocess.run(["git", "add", name], cwd=repo, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True, env=env)
    return repo


async def seed_stores(pool: WorkerPool) -> None:
    """The content stores and their documents (oldest first)."""
    for name, documents in STORES.items():
        made = await pool.call_tool("builtin_content-store__create_store", {"name": name})
        store_id = (made.structured_result or {})["storeId"]
        for filename, text in documents:
            await pool.call_tool(
                "builtin_content-store__add_content",
                {"store_id": store_id, "content": text, "filename": filename},
            )


async def make_template(root: Path) -> Path:
    """A world to copy (``root``): the workspace at ``workspace/`` (notes, the
    repository at ``workspace/repo``) and the content stores in ``data/``, made once so
    that every copy holds the same files, commits and store ids."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    make_workspace(workspace)
    async with WorkerPool(data_dir=root / "data", builtins=["content-store"]) as pool:
        await seed_stores(pool)
    return root


def copy_world(template: Path, root: Path) -> Path:
    """A fresh copy of the template world at ``root`` (its data closed: no process
    holds the stores' database while it is copied)."""
    shutil.copytree(template, root, symlinks=True)
    return root


def external_servers(root: Path) -> dict[str, Any]:
    """The official time and git servers from the venv, and npm's memory server where
    ``.ci/.node`` has it, each as a host's ``mcpServers`` entry starts it."""
    servers: dict[str, Any] = {
        "time": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        },
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
    }
    memory = _NODE_BIN / "mcp-server-memory"
    if memory.exists():
        servers["memory"] = {
            "command": str(memory),
            "env": {
                "MEMORY_FILE_PATH": str(root / "memory.jsonl"),
                "PATH": os.environ.get("PATH", ""),
            },
        }
    return servers


def _config_file(data_dir: Path, servers: Mapping[str, Any]) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "fastmcp-servers.json"
    config.write_text(json.dumps({"mcpServers": dict(servers)}))
    return config


@contextlib.asynccontextmanager
async def fastmcp_code_mode(
    data_dir: Path, workspace: Path, servers: Mapping[str, Any]
) -> AsyncIterator[Any]:
    """A FastMCP client of a FastMCP proxy with `CodeMode`, in front of ``nativemcp
    serve`` over stdio serving the same built-ins and external servers (one session,
    kept for the whole bench)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    # Its proxy logs a note on reusing one session at INFO, into the bench's tables.
    logging.getLogger("fastmcp").setLevel(logging.WARNING)
    from fastmcp.experimental.transforms.code_mode import CodeMode
    from fastmcp.server import create_proxy

    config = _config_file(data_dir, servers)
    command = str(Path(sys.executable).with_name("nativemcp"))
    args = ["serve", "--data-dir", str(data_dir), "--workspace", str(workspace)]
    args += ["--mcp-config", str(config), "content-store", "planning", "workspace"]
    backend = Client(StdioTransport(command, args, env=dict(os.environ)))
    async with backend:
        proxy = create_proxy(backend, name="codemode-bench")
        proxy.add_transform(CodeMode())
        async with Client(proxy) as client:
            yield client


class _ToCallTool(ast.NodeTransformer):
    """``ident(k=v)`` → ``call_tool("full name", {"k": v})`` for the tools' identifiers."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names:
            arguments = ast.Dict(
                keys=[ast.Constant(k.arg) for k in node.keywords],
                values=[k.value for k in node.keywords],
            )
            return ast.Call(
                func=ast.Name("call_tool", ast.Load()),
                args=[ast.Constant(self.names[node.func.id]), arguments],
                keywords=[],
            )
        return node


def to_fastmcp(code: str, names: Mapping[str, str]) -> str:
    """The program as FastMCP's ``execute`` takes it: each tool call through
    ``call_tool(full name, {arguments})``, and the final ``print(x)`` as the returned
    value ``x`` (FastMCP gives the model the program's value, not what it prints)."""
    tree = _ToCallTool(names).visit(ast.parse(code))
    last = tree.body[-1]
    if (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Name)
        and last.value.func.id == "print"
    ):
        last.value = last.value.args[0]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def tools_used(code: str, names: Mapping[str, str]) -> list[str]:
    """The identifiers of ``names`` that ``code`` calls, in first-use order."""
    used: dict[str, None] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and node.id in names:
            used[node.id] = None
    return list(used)
