"""Code mode: what a model reads and how long it waits, three ways, on the same tasks.

Ten multi-step tasks (``bench/data/codemode_tasks.json``, each with the program a model
would write) over the built-in servers (content store, planning, workspace) and the
official ``mcp-server-time`` and ``mcp-server-git`` (npm's ``server-memory`` too where
``.ci/.node`` has it; its task is skipped otherwise), each started as a host's
``mcpServers`` entry starts it. Each task is done three ways in one run, counted with
one tokenizer (o200k_base, offline with quicktok):

- ``direct``: the model calls each tool itself: the JSON definitions of the tools it
  uses (what it reads to call them), every call's name and arguments and the rich text
  of every result (the calls are the ones the program made, recorded);
  ``calls_only_tokens`` leaves the definitions out.
- ``nativemcp``: code mode: the stubs of the tools it uses (``describe_tools`` as the
  meta-tool answers it; how to call them is in ``run_code``'s description, counted
  with the definitions below), the program, and ``run_code``'s answer.
- ``fastmcp``: FastMCP 4's ``CodeMode`` over the same servers (a FastMCP proxy in front
  of ``nativemcp serve`` over stdio): ``get_schema`` for the same tools (its default,
  ``detailed``), the same program written for its ``execute`` (derived mechanically:
  ``call_tool(name, {args})``, the final print as the returned value), and its answer.

``at best``: the cut were the stubs free (the program and its answer alone), the bound
on what any stub format can reach. Also: the stubs against the JSON definitions of the
same tools, wall time per task (the direct calls replayed one after another; each code
mode's run), one inner call against a direct ``pool.call_tool`` of the same tool (and
the sandbox's own share, the same program with each call answered at once), and a warm
run's start (``run_code("None")``; FastMCP's ``execute`` starts a Monty pool per run).

Run: ``python -m bench.codemode [--quick] [--json]``
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio

from bench._codemode_setup import (
    external_servers,
    fastmcp_code_mode,
    make_workspace,
    seed_stores,
    to_fastmcp,
    tools_used,
)
from bench._report import emit_json, parse_args, print_table, ratio
from nativemcp.protocol import CodeError, NativeMCPResponse, result_text, ui_visibility
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.codemode import CodeSandbox, code_response, code_tools
from nativemcp.proxy.llm import count_tokens, exact_counts, token_note

TASKS: Final = Path(__file__).with_name("data") / "codemode_tasks.json"
INNER_TOOL: Final = "builtin_planning__get_current_state"
"""The tool the inner-call overhead is measured on (a worker process's)."""


async def _median_s(run: Callable[[], Awaitable[object]], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _text(result: Any) -> str:
    """The text blocks of an MCP ``CallToolResult`` (FastMCP's client's)."""
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _recorded_run(
    pool: WorkerPool, ctx: Mapping[str, Any], code: str, inputs: dict[str, Any]
) -> tuple[str, list[tuple[str, dict[str, Any], str]]]:
    """The run's answer to the model, and each inner call (name, arguments, the rich
    text the model would have read calling it directly): the program run once more on
    a sandbox of the bench's own, each call through ``pool.call_tool`` as in
    ``run_code``, recorded."""
    calls: list[tuple[str, dict[str, Any], str]] = []

    async def recording(name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
        response = await pool.call_tool(name, arguments)
        calls.append((name, arguments, result_text(response)))
        return response

    sandbox: CodeSandbox = ctx["sandbox"]
    try:
        result = await sandbox.run(code, tools=ctx["tools"], call=recording, inputs=inputs)
        answer = code_response(result)
    except CodeError as exc:
        answer = code_response(exc)
    return result_text(answer), calls


Timer = Callable[[], Awaitable[None]]


async def _task(
    pool: WorkerPool, fastmcp: Any, task: Mapping[str, Any], ctx: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Timer]]:
    """The task's tokens three ways (one run each), and the runs to time later (after
    every task's tokens, so no task reads state another's repeated runs left)."""
    names: Mapping[str, str] = ctx["names"]
    code: str = task["code"]
    inputs = {"REPO": ctx["repo"]}
    used = tools_used(code, names)
    stubs = await pool.describe_tools(used, header=False)  # as the meta-tool answers
    full_names = {names[u] for u in used}
    definitions = [d for d in ctx["definitions"] if d["function"]["name"] in full_names]
    answer, calls = await _recorded_run(pool, ctx, code, inputs)
    calls_only = sum(
        count_tokens(name) + count_tokens(json.dumps(a)) + count_tokens(text)
        for name, a, text in calls
    )
    json_definitions = count_tokens(json.dumps(definitions))
    ours = count_tokens(stubs) + count_tokens(code) + count_tokens(answer)

    fm_code = to_fastmcp(code, names)
    fm_run = f"REPO = {json.dumps(ctx['repo'])}\n{fm_code}"
    schema = _text(await fastmcp.call_tool("get_schema", {"tools": [names[u] for u in used]}))
    fm_answer = _text(await fastmcp.call_tool("execute", {"code": fm_run}, raise_on_error=False))
    theirs = count_tokens(schema) + count_tokens(fm_code) + count_tokens(fm_answer)

    async def replay() -> None:
        for name, arguments, _ in calls:
            await pool.call_tool(name, arguments)

    async def ours_run() -> None:
        with contextlib.suppress(CodeError):
            await pool.run_code(code, inputs=inputs)

    async def theirs_run() -> None:
        await fastmcp.call_tool("execute", {"code": fm_run}, raise_on_error=False)

    row = {
        "task": task["name"],
        "steps": len(calls),
        # What any code mode costs with free stubs: the program and what it printed.
        "floor_tokens": count_tokens(code) + count_tokens(answer),
        "direct_tokens": json_definitions + calls_only,
        "calls_only_tokens": calls_only,
        "nativemcp_tokens": ours,
        "fastmcp_tokens": theirs,
        "stub_tokens": count_tokens(stubs),
        "json_definition_tokens": json_definitions,
        "fastmcp_schema_tokens": count_tokens(schema),
        "same_answer": answer.strip() == fm_answer.strip(),
        "answer": answer,
    }
    return row, {"direct_ms": replay, "nativemcp_ms": ours_run, "fastmcp_ms": theirs_run}


async def _inner_call(
    pool: WorkerPool, ctx: Mapping[str, Any], calls: int, rounds: int
) -> dict[str, float]:
    """One inner call against one direct ``pool.call_tool`` of the same tool (µs), and
    the sandbox's share: the same program with each call answered at once (the run's
    bookkeeping and Monty's round trip to its process, no tool)."""
    identifier = INNER_TOOL  # a full name without '-' is its own identifier
    program = f"for i in range({calls}):\n    await {identifier}()"
    answer = await pool.call_tool(INNER_TOOL)

    async def direct() -> None:
        for _ in range(calls):
            await pool.call_tool(INNER_TOOL)

    async def inner() -> None:
        await pool.run_code(program)

    async def answered(name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
        return answer

    async def sandbox_only() -> None:
        await ctx["sandbox"].run(program, tools=ctx["tools"], call=answered)

    await inner()  # the sandbox warm, as in every later run
    await sandbox_only()
    direct_us, inner_us, sandbox_us = [], [], []
    for _ in range(rounds):  # interleaved: machine noise falls on all alike
        direct_us.append(await _median_s(direct, 1) / calls * 1e6)
        inner_us.append(await _median_s(inner, 1) / calls * 1e6)
        sandbox_us.append(await _median_s(sandbox_only, 1) / calls * 1e6)
    d, i = statistics.median(direct_us), statistics.median(inner_us)
    b = statistics.median(sandbox_us)
    # Floor: a call's own time plus the sandbox's round trip, nothing else.
    return {
        "direct_us": d,
        "inner_us": i,
        "sandbox_us": b,
        "ratio": ratio(i, d),
        "floor_ratio": ratio(d + b, d),
    }


async def _warm_start(pool: WorkerPool, fastmcp: Any, runs: int) -> dict[str, float]:
    """A run of an empty program on a warm sandbox (ms), and FastMCP's ``execute``."""
    await pool.run_code("None")

    async def ours() -> None:
        await pool.run_code("None")

    async def theirs() -> None:
        await fastmcp.call_tool("execute", {"code": "None"})

    return {
        "nativemcp_ms": await _median_s(ours, runs) * 1e3,
        "fastmcp_ms": await _median_s(theirs, runs) * 1e3,
    }


async def _definitions(pool: WorkerPool, fastmcp: Any) -> dict[str, int]:
    """What every request carries before the model does anything (OpenAI tools)."""
    theirs = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.input_schema,
            },
        }
        for t in await fastmcp.list_tools()
    ]
    return {
        "every_tool": count_tokens(json.dumps(await pool.tool_definitions("openai"))),
        "nativemcp_code_mode": count_tokens(
            json.dumps(await pool.tool_definitions("openai", code_mode=True))
        ),
        "fastmcp_code_mode": count_tokens(json.dumps(theirs)),
    }


async def run(quick: bool) -> dict[str, Any]:
    """Every measurement of this bench, as the JSON report."""
    rounds = 1 if quick else 5
    tasks = json.loads(TASKS.read_text())["tasks"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace, data = root / "workspace", root / "data"
        workspace.mkdir()
        repo = make_workspace(workspace)
        servers = external_servers(root)
        async with WorkerPool(
            data_dir=data, workspace_root=workspace, mcp_servers=servers, timeout=60
        ) as pool:
            await seed_stores(pool)
            visible = [
                (t.name, t) for t in await pool.list_tools() if "model" in ui_visibility(t.meta)
            ]
            tools = code_tools(visible)
            names = {ident: tool.name for ident, tool in tools.items()}
            sandbox = CodeSandbox()
            ctx: dict[str, Any] = {
                "names": names,
                "tools": tools,
                "sandbox": sandbox,
                "repo": str(repo),
                "definitions": await pool.tool_definitions("openai"),
            }
            ready = [t for t in tasks if all(s in pool.names for s in t["servers"])]
            async with fastmcp_code_mode(data, workspace, servers) as fastmcp:
                measured = [await _task(pool, fastmcp, t, ctx) for t in ready]
                for row, timers in measured:
                    for key, timer in timers.items():
                        row[key] = await _median_s(timer, rounds) * 1e3
                rows = [row for row, _ in measured]
                inner = await _inner_call(pool, ctx, 50 if quick else 200, 5 if quick else 9)
                warm = await _warm_start(pool, fastmcp, 10 if quick else 50)
                definitions = await _definitions(pool, fastmcp)
            await sandbox.aclose()
    return {
        "tasks": rows,
        "skipped": [t["name"] for t in tasks if t not in ready],
        "servers": [*sorted(servers), "content-store", "planning", "workspace"],
        "inner_call": inner,
        "warm_start": warm,
        "definitions": definitions,
        "exact_tokens": exact_counts(),
        "quick": quick,
    }


def _goals(report: Mapping[str, Any]) -> list[str]:
    rows = report["tasks"]
    long = [r for r in rows if r["steps"] >= 3]
    cut = [1 - r["nativemcp_tokens"] / r["direct_tokens"] for r in long]
    fewer = [r["task"] for r in rows if r["nativemcp_tokens"] >= r["fastmcp_tokens"]]
    inner, warm = report["inner_call"], report["warm_start"]
    missed = sum(c < 0.8 for c in cut)
    # Out of reach of any stubs: the program and its printed answer alone pass 20%.
    beyond = sum(1 - r["floor_tokens"] / r["direct_tokens"] < 0.8 for r in long)
    return [
        f"tokens vs direct, tasks of 3+ steps: {min(cut):.0%} to {max(cut):.0%} fewer "
        f"(goal ≥ 80%: {'met' if not missed else f'NOT met on {missed} of {len(cut)}'}; "
        f"on {beyond} of them the program and its output alone are over 20% of direct)",
        f"fewer tokens than FastMCP's CodeMode: {len(rows) - len(fewer)}/{len(rows)} tasks"
        + (f" (not: {', '.join(fewer)})" if fewer else ""),
        f"inner call {inner['inner_us']:.0f} µs vs direct {inner['direct_us']:.0f} µs: "
        f"{inner['ratio']:.2f}x (goal ≤ 1.5x: {'met' if inner['ratio'] <= 1.5 else 'NOT met'}); "
        f"the sandbox's round trip alone {inner['sandbox_us']:.0f} µs, so at best "
        f"{inner['floor_ratio']:.2f}x",
        f"warm run start {warm['nativemcp_ms']:.2f} ms (goal ≤ 10 ms: "
        f"{'met' if warm['nativemcp_ms'] <= 10 else 'NOT met'}); FastMCP's execute "
        f"{warm['fastmcp_ms']:.2f} ms",
    ]


def _print(report: Mapping[str, Any]) -> None:
    rows = report["tasks"]
    print_table(
        "Tokens a model reads and writes per task (o200k_base)",
        ["task", "steps", "direct", "nativemcp", "fastmcp", "vs direct", "at best", "vs fastmcp"],
        [
            [
                r["task"],
                r["steps"],
                r["direct_tokens"],
                r["nativemcp_tokens"],
                r["fastmcp_tokens"],
                f"{1 - r['nativemcp_tokens'] / r['direct_tokens']:.0%} fewer",
                f"{1 - r['floor_tokens'] / r['direct_tokens']:.0%} fewer",
                f"{ratio(r['nativemcp_tokens'], r['fastmcp_tokens']):.2f}x",
            ]
            for r in rows
        ],
    )
    print()
    print_table(
        "The tools' descriptions: nativemcp stubs, JSON definitions, FastMCP get_schema",
        ["task", "stubs", "json", "fastmcp", "stubs/json", "same answer"],
        [
            [
                r["task"],
                r["stub_tokens"],
                r["json_definition_tokens"],
                r["fastmcp_schema_tokens"],
                f"{ratio(r['stub_tokens'], r['json_definition_tokens']):.2f}x",
                "yes" if r["same_answer"] else "no",
            ]
            for r in rows
        ],
    )
    print()
    print_table(
        "Wall time per task, ms (direct: the same calls one after another, no model)",
        ["task", "direct", "nativemcp", "fastmcp", "nativemcp/fastmcp"],
        [
            [
                r["task"],
                r["direct_ms"],
                r["nativemcp_ms"],
                r["fastmcp_ms"],
                f"{ratio(r['nativemcp_ms'], r['fastmcp_ms']):.2f}x",
            ]
            for r in rows
        ],
    )
    definitions = report["definitions"]
    print(
        f"\nDefinitions every request carries (OpenAI tools): every tool "
        f"{definitions['every_tool']}, nativemcp code mode {definitions['nativemcp_code_mode']}, "
        f"FastMCP CodeMode {definitions['fastmcp_code_mode']}"
    )
    for line in _goals(report):
        print(f"- {line}")
    if report["skipped"]:
        print(f"skipped (server not installed): {', '.join(report['skipped'])}")
    print(token_note())


def main(argv: list[str] | None = None) -> None:
    """Run the bench and print its tables (``--json``: and one JSON line)."""
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "bench.codemode", argv)
    report = anyio.run(run, args.quick)
    _print(report)
    if args.json:
        emit_json(report)


if __name__ == "__main__":
    main(sys.argv[1:])
