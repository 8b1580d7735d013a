"""bench.payload --budget: large results from real servers, held to a token budget.

Each source is started as its users start it and asked for a large result through the
agent loop (`WorkerPool.run_tool_call`, a pool made with ``result_budget``):

- ``filesystem``: npm ``@modelcontextprotocol/server-filesystem``'s ``read_text_file``
  of a 1 MB server log (without Node: the built-in workspace server's ``read_file``);
- ``git``: PyPI ``mcp-server-git``'s ``git_log`` of a repository of 5,000 commits
  (made with ``git fast-import``), all of them;
- ``memory``: npm ``@modelcontextprotocol/server-memory``'s ``read_graph`` of 2,000
  entities and 1,000 relations (needs Node);
- ``rows``: a tool of our own answering 10,000 rows as JSON text;
- ``browser``: the built-in ``browser`` server's ``snapshot`` of a long page (an
  inventory of 3,000 items, served on loopback; needs Debian's ``chromium`` and the
  ``browser`` extra).

Each has a fact planted past the cut (a line near the end of the log, an old commit,
one entity among 2,000, one row among 10,000) and a question about it, which a scripted
agent answers from the cut result's notice: ``read_result(id, query=<the question's
words>)``, then, if the fact is not in the answer, once more with the fact's own
words. Per source: the tokens of the whole result (what the model read before budgets),
of the first message, of the reads, the calls it took and whether the fact was found.
Goals: no message over the budget; every fact found in at most 2 ``read_result`` calls;
at least 90% fewer tokens in the first message than in the whole result.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from nativemcp.protocol import NativeMCPResponse
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.llm import RESULTS_URI, count_tokens, tool_result_message
from nativemcp.workers import Server

__all__ = ["Case", "cases_for", "open_page", "prepare", "run_case", "serving_page", "sources"]

ROOT: Final = Path(__file__).resolve().parents[1]
NODE_MODULES: Final = ROOT / ".ci" / ".node" / "node_modules"
LOG_BYTES: Final = 1024 * 1024
COMMITS: Final = 5_000
ENTITIES: Final = 2_000
ROWS: Final = 10_000
PAGE_ITEMS: Final = 3_000
_LEVELS: Final = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
_SERVICES: Final = ("api", "auth", "billing", "search", "worker", "gateway")


@dataclass(frozen=True)
class Case:
    """One large result: the call, the planted fact and the question about it."""

    source: str
    tool: str
    arguments: dict[str, Any]
    question: str
    """The question's words, as the scripted agent's first query."""
    fact: str
    """What the answer must hold."""
    fact_words: str
    """The agent's second query, if the first missed."""


def _node_package(name: str) -> Path | None:
    """The entry script of an npm MCP server installed under .ci/.node, or None."""
    script = NODE_MODULES / "@modelcontextprotocol" / name / "dist" / "index.js"
    node = NODE_MODULES / ".bin" / "node"
    found = node if node.exists() else shutil.which("node")
    return script if script.exists() and found else None


def _node() -> str:
    node = NODE_MODULES / ".bin" / "node"
    return str(node) if node.exists() else str(shutil.which("node"))


def _write_log(path: Path) -> int:
    """A 1 MB server log with one error line near its end; its line count."""
    lines = []
    size = 0
    number = 0
    while size < LOG_BYTES:
        level = _LEVELS[number % len(_LEVELS)]
        service = _SERVICES[number * 7 % len(_SERVICES)]
        line = (
            f"2026-05-{1 + number // 4000:02d}T{number // 150 % 24:02d}:{number % 60:02d}:"
            f"{number * 13 % 60:02d}Z {level} {service} request={number:07d} "
            f"status={200 if number % 17 else 404} took={number * 37 % 900}ms"
        )
        lines.append(line)
        size += len(line) + 1
        number += 1
    lines[-150] = (
        "2026-05-04T23:59:01Z ERROR billing payment gateway timeout for order 77-zulu-4410"
    )
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _make_repo(path: Path) -> None:
    """A repository of `COMMITS` commits, one file changed per commit (git fast-import)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    chunks = []
    for number in range(1, COMMITS + 1):
        if number == 120:  # old: far past the cut of a newest-first log
            message = "Fix race in ledger reconciliation when two refunds land together (#4821)"
        else:
            message = f"{_SERVICES[number % 6]}: tune handler {number} for the nightly load"
        content = f"revision {number}\n"
        when = 1_700_000_000 + number * 3600
        author = f"Dev {number % 23} <dev{number % 23}@example.com> {when} +0000"
        chunks.append(
            f"commit refs/heads/main\nmark :{number}\nauthor {author}\ncommitter {author}\n"
            f"data {len(message.encode())}\n{message}\n"
            + (f"from :{number - 1}\n" if number > 1 else "")
            + f"M 644 inline notes.txt\ndata {len(content)}\n{content}\n"
        )
    subprocess.run(
        ["git", "-C", str(path), "fast-import", "--quiet"],
        input="".join(chunks).encode(),
        check=True,
    )
    subprocess.run(["git", "-C", str(path), "reset", "-q", "--hard", "main"], check=True)


def _entities() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    entities = [
        {
            "name": f"person-{number:04d}",
            "entityType": "person",
            "observations": [
                f"works on team {number % 40} in building {number % 7}",
                f"joined in {2000 + number % 25}",
            ],
        }
        for number in range(ENTITIES)
    ]
    entities[1_500] = {
        "name": "Ursula Vantongeren",
        "entityType": "person",
        "observations": ["chief cartographer at Kestrel Dynamics", "joined in 2019"],
    }
    relations = [
        {
            "from": entities[n]["name"],
            "to": entities[(n * 7 + 1) % ENTITIES]["name"],
            "relationType": "mentors",
        }
        for n in range(0, ENTITIES, 2)
    ]
    return entities, relations


def _write_page(path: Path) -> None:
    """A long page: an inventory of `PAGE_ITEMS` items, one of them planted near the end."""
    items = [
        f"<li>Item {n}: {_SERVICES[n % 6]} spare part {n * 7 % 1000}, shelf {n % 40}</li>"
        if n != PAGE_ITEMS - 120
        else "<li>Cobalt lanterns: warehouse Tamsin, aisle 77-Q</li>"
        for n in range(PAGE_ITEMS)
    ]
    path.write_text(
        "<!DOCTYPE html><title>Inventory</title><h1>Inventory</h1><ul>" + "".join(items) + "</ul>"
    )


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Nothing on stderr: the bench prints its own table."""


@contextlib.contextmanager
def serving_page(folder: Path) -> Iterator[str | None]:
    """The long page's origin on loopback while the block runs; None without Debian's
    chromium or Playwright (the browser source is then not run)."""
    try:
        import playwright  # noqa: F401  (the browser extra)
    except ImportError:
        yield None
        return
    if not Path("/usr/bin/chromium").exists():
        yield None
        return
    handler = functools.partial(_QuietFiles, directory=str(folder / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def rows_server() -> Server:
    """A tool of our own that answers 10,000 rows as JSON text, as many servers do."""
    server = Server("rows", description="A large table")

    @server.tool
    def table() -> str:
        """Every row of the cities table, as JSON."""
        rows = [
            {"id": n, "city": f"city-{n:05d}", "population": n * 113 % 99_991, "region": n % 9}
            for n in range(ROWS)
        ]
        rows[9_876] = {"id": 9_876, "city": "Quagmire Falls", "population": 31_337, "region": 4}
        return json.dumps(rows)

    return server


def sources(folder: Path) -> dict[str, Any]:
    """The external servers' ``mcpServers`` entries, started as their users start them
    (the npm packages by their entry script under .ci/.node, with Node)."""
    servers: dict[str, Any] = {
        "git": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(folder / "repo")],
        }
    }
    filesystem = _node_package("server-filesystem")
    if filesystem is not None:
        servers["fs"] = {"command": _node(), "args": [str(filesystem), str(folder / "files")]}
    memory = _node_package("server-memory")
    if memory is not None:
        servers["memory"] = {
            "command": _node(),
            "args": [str(memory)],
            "env": {"MEMORY_FILE_PATH": str(folder / "memory.jsonl"), "PATH": os.environ["PATH"]},
        }
    return servers


def prepare(folder: Path) -> None:
    """The log, the repository and the workspace the cases read."""
    (folder / "files").mkdir()
    _write_log(folder / "files" / "server.log")
    _make_repo(folder / "repo")
    (folder / "site").mkdir()
    _write_page(folder / "site" / "inventory.html")


def cases_for(servers: dict[str, Any], folder: Path, page_origin: str | None = None) -> list[Case]:
    """The cases the installed servers allow, in a stable order (the browser's where
    ``page_origin`` serves the long page: its `navigate` is made by `open_page`)."""
    log = str(folder / "files" / "server.log")
    found = [
        Case(
            "filesystem" if "fs" in servers else "workspace (no Node)",
            "fs__read_text_file" if "fs" in servers else "builtin_workspace__read_file",
            {"path": log} if "fs" in servers else {"path": "server.log"},
            "which order had a payment gateway timeout",
            "77-zulu-4410",
            "ERROR billing payment gateway timeout",
        ),
        Case(
            "git",
            "git__git_log",
            {"repo_path": str(folder / "repo"), "max_count": COMMITS},
            "which commit fixed the race in ledger reconciliation",
            "(#4821)",
            "ledger reconciliation refunds",
        ),
    ]
    if "memory" in servers:
        found.append(
            Case(
                "memory",
                "memory__read_graph",
                {},
                "where does Ursula Vantongeren work",
                "Kestrel Dynamics",
                "Ursula Vantongeren",
            )
        )
    found.append(
        Case(
            "rows (own tool)",
            "rows__table",
            {},
            "what is the population of Quagmire Falls",
            '"population":31337',
            "Quagmire Falls",
        )
    )
    if page_origin is not None:
        found.append(
            Case(
                "browser (long page)",
                "builtin_browser__snapshot",
                {},
                "which warehouse and aisle hold the cobalt lanterns",
                "aisle 77-Q",
                "Cobalt lanterns warehouse",
            )
        )
    return found


async def open_page(pool: WorkerPool, origin: str) -> None:
    """The browser's session on the long page (an app call, no budget), for `snapshot`."""
    await pool.call_tool("builtin_browser__navigate", {"url": f"{origin}/inventory.html"})


async def fill_memory(pool: WorkerPool) -> None:
    """The memory server's 2,000 entities and 1,000 relations (app calls, no budget)."""
    entities, relations = _entities()
    await pool.call_tool("memory__create_entities", {"entities": entities})
    await pool.call_tool("memory__create_relations", {"relations": relations})


def _call(tool: str, arguments: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments)},
    }


def _whole_tokens(response: NativeMCPResponse[Any], tool: str) -> int:
    message = tool_result_message(response, provider="openai", call_id="c", tool_name=tool)
    return count_tokens(message["content"])


async def run_case(pool: WorkerPool, case: Case, budget: int) -> dict[str, Any]:
    """One source's row: tokens before and after, and the scripted agent's reads."""
    whole = _whole_tokens(await pool.call_tool(case.tool, case.arguments), case.tool)
    first = await pool.run_tool_call(_call(case.tool, case.arguments, 1), provider="openai")
    text = first["content"]
    after = count_tokens(text)
    reads: list[int] = []
    found = case.fact in text
    result_id = re.search(re.escape(RESULTS_URI) + r"(r[0-9a-f]{16})", text)
    # The scripted agent: the question's words, then the fact's own, from the notice.
    for query in (case.question, case.fact_words):
        if found or result_id is None:
            break
        answer = await pool.run_tool_call(
            _call("read_result", {"id": result_id.group(1), "query": query}, 2 + len(reads)),
            provider="openai",
        )
        reads.append(count_tokens(answer["content"]))
        found = case.fact in answer["content"]
    fewer = 1 - after / whole if whole else 0.0
    return {
        "source": case.source,
        "tool": case.tool,
        "whole_tokens": whole,
        "first_tokens": after,
        "fewer": round(fewer, 4),
        "read_calls": len(reads),
        "read_tokens": reads,
        "max_message_tokens": max([after, *reads]),
        "found": found,
        "met": found and len(reads) <= 2 and max([after, *reads]) <= budget and fewer >= 0.9,
    }


def node_missing(servers: dict[str, Any]) -> Sequence[str]:
    """The npm sources not run for want of Node or the packages."""
    return [name for name in ("fs", "memory") if name not in servers]
