"""What a model reads per built-in tool, in tokens: our rich text against the official
SDK's default JSON text for the same result, and a status-only line.

Each built-in tool (content store, planning, workspace) is called once on a small real
scenario (the bundled sample corpus, a plan, a workspace folder). For each result:

- ``rich``: the text content nativemcp returns (what the model reads);
- ``sdk_json``: the text the official SDK's ``MCPServer`` puts in ``content`` for the same
  structured result (``pydantic_core.to_json(result, indent=2)``, its default);
- ``status``: a status-only line, as the original app returned ("Found 5 content items").

Counts are exact o200k_base tokens when the ``tokens`` extra is installed (offline;
``pip install -e '.[bench]'``), else characters / 4 (the table says which). Goal per
tool: the rich text costs at most the JSON's tokens while stating every fact the JSON
holds (every string and number in it appears in the text, a time to the minute and a
float to 2 decimals at least; ``facts`` counts them).

With ``--budget [TOKENS]`` (default: the agent loop's, 8,000) it measures large results
from real servers held to that budget instead (``bench/_payload_budget.py``): the tokens
of the whole result and of what the model reads, and a planted fact found past the cut
with ``read_result``.

Run: ``python -m bench.payload [--quick] [--json] [--budget [TOKENS]]``
"""

from __future__ import annotations

import argparse
import importlib.resources
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import pydantic_core

from bench._payload_budget import (
    cases_for,
    fill_memory,
    node_missing,
    open_page,
    prepare,
    rows_server,
    serving_page,
)
from bench._payload_budget import run_case as run_budget_case
from bench._payload_budget import sources as budget_sources
from bench._report import emit_json, parse_args, print_table
from nativemcp.protocol import result_text
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.llm import DEFAULT_RESULT_BUDGET, count_tokens, exact_counts, token_note

_LONG: Final = 60
"""A string fact longer than this is looked for by its first ``_LONG`` characters (a
text may quote a long value in part, as a preview)."""


_ISO_TIME: Final = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)[\d:.]*Z?")


def _leaves(value: Any) -> Iterator[Any]:
    """The facts of a JSON value: its strings and numbers (booleans and nulls are
    stated in words, not checked here)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif (isinstance(value, str) and value.strip()) or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        yield value


def _stated(fact: Any, text: str) -> bool:
    """Whether ``text`` (whitespace-collapsed, no Markdown emphasis) states ``fact``, in
    the forms a reader takes as the same: a time to the minute, a float to 2 decimals,
    a text line by line (as a numbered listing shows it), a long text by its start."""
    if isinstance(fact, float):
        return any(form in text for form in (f"{fact:g}", f"{fact:.2f}", f"{fact:.1f}"))
    if isinstance(fact, int):
        return str(fact) in text
    if match := _ISO_TIME.fullmatch(fact):
        return f"{match[1]} {match[2]}" in text or fact in text
    lines = [" ".join(line.split()) for line in fact.splitlines() if line.strip()]
    return all(line[:_LONG] in text for line in lines)


def missing_facts(structured: Any, text: str) -> list[str]:
    """The facts of ``structured`` that ``text`` does not state."""
    flat = " ".join(text.replace("**", "").split())
    return [str(fact) for fact in _leaves(structured) if not _stated(fact, flat)]


def _samples() -> list[Path]:
    folder = importlib.resources.files("nativemcp.workers.content_store") / "samples"
    return sorted(Path(str(p)).resolve() for p in folder.iterdir() if p.is_file())


async def _scenario(pool: WorkerPool, workspace: Path) -> list[tuple[str, Any, str]]:
    """``(tool, response, status line)`` for one call of each built-in tool."""
    calls: list[tuple[str, Any, str]] = []

    async def call(full_name: str, arguments: dict[str, Any], status: str) -> Any:
        response = await pool.call_tool(full_name, arguments)
        calls.append((full_name, response, status))
        return response.result.structured_content if response.result else None

    store = "builtin_content-store__"
    created = await call(f"{store}create_store", {"name": "payload"}, "Store created")
    store_id = created["storeId"]
    added = None
    for path in _samples():
        text = path.read_text(encoding="utf-8", errors="replace")
        arguments = {"store_id": store_id, "content": text, "filename": path.name}
        if added is None:
            added = await call(f"{store}add_content", arguments, "Content added successfully")
        else:
            await pool.call_tool(f"{store}add_content", arguments)
    assert added is not None
    listed = await call(
        f"{store}list_content",
        {"store_id": store_id, "limit": 20},
        "Found {n} content items",
    )
    count = len(listed["contents"])
    calls[-1] = (calls[-1][0], calls[-1][1], f"Found {count} content items")
    await call(
        f"{store}keyword_similarity_search",
        {"store_id": store_id, "query": "search index"},
        "Search completed: 5 results found",
    )
    await call(
        f"{store}read_content",
        {"store_id": store_id, "content_id": added["contentId"], "from_line": 1, "to_line": 20},
        "Content read successfully",
    )
    await call(f"{store}list_stores", {}, "Found 1 stores")

    plan = "builtin_planning__"
    await call(f"{plan}create_goal", {"goal": "ship the payload bench"}, "Goal created")
    await call(f"{plan}add_todo", {"name": "count tokens exactly"}, "Todo added")
    await pool.call_tool(f"{plan}add_todo", {"name": "compare with the SDK's JSON"})
    await call(f"{plan}mark_todo", {"id": 1, "completed": True}, "Todo updated")
    await call(f"{plan}add_observation", {"observation": "o200k counts offline"}, "Noted")
    await call(f"{plan}get_current_state", {}, "State retrieved")

    space = "builtin_workspace__"
    (workspace / "notes.md").write_text(
        "# Notes\n\nThe payload bench counts tokens.\nIt compares rich text with JSON.\n"
    )
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("def main() -> None:\n    print('tokens')\n")
    await call(f"{space}list_directory", {"path": "."}, "Listed 2 entries")
    await call(f"{space}read_file", {"path": "notes.md"}, "File read successfully")
    await call(f"{space}grep", {"pattern": "tokens"}, "Found 2 matches")
    await call(f"{space}search_files", {"pattern": "*.py"}, "Found 1 files")
    await call(f"{space}write_file", {"path": "out.txt", "content": "one\ntwo\n"}, "File written")
    await call(f"{space}execute_shell", {"command": "echo hello"}, "Command executed")
    return calls


def _row(tool: str, response: Any, status: str) -> dict[str, Any]:
    result = response.result
    rich = result_text(result)
    structured = result.structured_content
    sdk_json = pydantic_core.to_json(structured, indent=2).decode() if structured else rich
    missing = missing_facts(structured, rich) if structured else []
    facts = len(list(_leaves(structured))) if structured else 0
    rich_tokens, json_tokens = count_tokens(rich), count_tokens(sdk_json)
    return {
        "tool": tool.split("__", 1)[1],
        "server": tool.split("__", 1)[0].removeprefix("builtin_"),
        "rich_tokens": rich_tokens,
        "sdk_json_tokens": json_tokens,
        "status_tokens": count_tokens(status),
        "rich_vs_json": round(rich_tokens / json_tokens, 2),
        "facts": facts,
        "facts_missing": missing,
        "met": rich_tokens <= json_tokens and not missing,
    }


async def main() -> list[dict[str, Any]]:
    """Run the scenario and return one row per tool."""
    with tempfile.TemporaryDirectory(prefix="nativemcp-payload-") as folder:
        root = Path(folder)
        workspace = root / "workspace"
        workspace.mkdir()
        async with WorkerPool(
            builtins=["content-store", "planning", "workspace"],
            data_dir=root / "data",
            workspace_root=workspace,
        ) as pool:
            calls = await _scenario(pool, workspace)
    return [_row(tool, response, status) for tool, response, status in calls]


async def budgeted(budget: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The large results held to ``budget``: one row per source, and the npm sources
    not run (no Node, or the packages not installed under .ci/.node)."""
    with tempfile.TemporaryDirectory(prefix="nativemcp-budget-") as folder:
        root = Path(folder)
        prepare(root)
        servers = budget_sources(root)
        with serving_page(root) as origin:
            browser = ["browser"] if origin is not None else []
            async with WorkerPool(
                [rows_server()],
                in_process=["rows", "workspace"],
                mcp_servers=servers,
                builtins=["workspace", *browser],
                browser_allowed_origins=[origin] if origin is not None else None,
                data_dir=root / "data",
                workspace_root=root / "files",
                result_budget=budget,
                timeout=120,
            ) as pool:
                if "memory" in servers:
                    await fill_memory(pool)
                if origin is not None:
                    await open_page(pool, origin)
                cases = cases_for(servers, root, origin)
                rows = [await run_budget_case(pool, case, budget) for case in cases]
    missing = [*node_missing(servers), *([] if origin is not None else ["browser"])]
    return rows, missing


def budget_report(budget: int, json_line: bool) -> dict[str, Any]:
    """Run the budgeted sources, print their table (and one JSON line)."""
    rows, missing = anyio.run(budgeted, budget)
    print_table(
        f"Large results held to {budget:,} tokens per message (agent loop, read_result)",
        ["source", "whole", "first message", "fewer", "reads", "read tokens", "fact found"],
        [
            [
                row["source"],
                row["whole_tokens"],
                row["first_tokens"],
                f"{row['fewer']:.1%}",
                row["read_calls"],
                "+".join(str(t) for t in row["read_tokens"]) or "-",
                "yes" if row["found"] else "NO",
            ]
            for row in rows
        ],
    )
    print(token_note())
    if missing:
        print(f"not run (Node or the npm package missing under .ci/.node): {', '.join(missing)}")
    print()
    for row in rows:
        verdict = "met " if row["met"] else "MISS"
        print(
            f"{verdict}  {row['source']}: every message ≤ {budget:,} tokens "
            f"(largest {row['max_message_tokens']:,}), fact found in ≤ 2 reads "
            f"({row['read_calls']}), ≥ 90% fewer tokens ({row['fewer']:.1%})"
        )
    report = {
        "bench": "payload-budget",
        "exact_tokens": exact_counts(),
        "budget": budget,
        "sources": rows,
        "not_run": missing,
        "goals_met": {row["source"]: row["met"] for row in rows},
    }
    if json_line:
        emit_json(report)
    return report


def _budget_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget",
        nargs="?",
        type=int,
        const=DEFAULT_RESULT_BUDGET,
        default=None,
        metavar="TOKENS",
        help=f"large results from real servers held to TOKENS (default {DEFAULT_RESULT_BUDGET:,})",
    )


def cli(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run the bench, print its table (and one JSON line with ``--json``)."""
    description = __doc__.splitlines()[0] if __doc__ else "bench.payload"
    args = parse_args(description, argv, _budget_flag)
    if args.budget is not None:
        return budget_report(args.budget, args.json)
    rows = anyio.run(main)
    print_table(
        "What the model reads per built-in tool, in tokens",
        ["server", "tool", "rich", "SDK JSON", "status-only", "rich / JSON", "facts stated"],
        [
            [
                row["server"],
                row["tool"],
                row["rich_tokens"],
                row["sdk_json_tokens"],
                row["status_tokens"],
                row["rich_vs_json"],
                f"{row['facts'] - len(row['facts_missing'])}/{row['facts']}",
            ]
            for row in rows
        ],
    )
    print(token_note())
    print()
    for row in rows:
        verdict = "met " if row["met"] else "MISS"
        details = []
        if row["rich_tokens"] > row["sdk_json_tokens"]:
            details.append(f"{row['rich_tokens']} > {row['sdk_json_tokens']} tokens")
        if row["facts_missing"]:
            shown = ", ".join(repr(f[:40]) for f in row["facts_missing"][:3])
            details.append(f"not stated: {shown}")
        detail = f" ({'; '.join(details)})" if details else ""
        print(f"{verdict}  {row['server']}.{row['tool']}: rich ≤ JSON, every fact stated{detail}")
    report = {
        "bench": "payload",
        "exact_tokens": exact_counts(),
        "tools": rows,
        "goals_met": {f"{row['server']}.{row['tool']}": row["met"] for row in rows},
    }
    if args.json:
        emit_json(report)
    return report


if __name__ == "__main__":
    cli()
