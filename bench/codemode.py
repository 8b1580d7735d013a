"""Code mode: what a model reads and how long it waits, three ways, on the same tasks.

Two sets of multi-step tasks, each task with the program a model would write, over the
built-in servers (content store, planning, workspace) and the official
``mcp-server-time`` and ``mcp-server-git`` (npm's ``server-memory`` too where
``.ci/.node`` has it; its tasks are skipped otherwise), each started as a host's
``mcpServers`` entry starts it: the tuning set (``bench/data/codemode_tasks.json``, the
ten tasks the stub format was tuned on) and the held-out set
(``bench/data/codemode_tasks_heldout.json``, written after the format was frozen and
never tuned on), reported apart, each with its own goal lines. Each set starts from a
fresh world, one copy for nativemcp (and the direct calls, which are its run's calls)
and one for FastMCP, so both run a set's tasks in order from the same state and ``same
answer`` compares like with like, side effects included. Each task is done three ways
in one run, counted with one tokenizer (o200k_base, offline with quicktok):

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
mode's run; each repeated on the state the earlier runs left, so a task with side
effects may do less on a repeat, or fail at once: docs_branch's branch exists by then),
one inner call against a direct ``pool.call_tool`` of the same tool (and
the sandbox's own share, the same program with each call answered at once), and a warm
run's start (``run_code("None")``; FastMCP's ``execute`` starts a Monty pool per run).

Run: ``python -m bench.codemode [--quick] [--json] [--set tuning|held-out]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio

from bench._codemode_setup import (
    copy_world,
    external_servers,
    fastmcp_code_mode,
    make_template,
    to_fastmcp,
    tools_used,
)
from bench._report import emit_json, parse_args, print_table, ratio
from nativemcp.protocol import CodeError, NativeMCPResponse, result_text, ui_visibility, unwrap
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.codemode import CodeSandbox, code_response, code_tools
from nativemcp.proxy.llm import count_tokens, exact_counts, token_note

TASKS: Final = Path(__file__).with_name("data") / "codemode_tasks.json"
"""The tuning set: the tasks the stub format was tuned on."""
HELD_OUT: Final = TASKS.with_name("codemode_tasks_heldout.json")
"""The held-out set: written after the stub format was frozen, never tuned on."""
SETS: Final = {"tuning": TASKS, "held-out": HELD_OUT}
SET_TITLES: Final = {
    "tuning": "Tuning set (the stub format was tuned on these tasks)",
    "held-out": "Held-out set (written after the stub format was frozen; never tuned on)",
}
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


async def recorded_run(
    pool: WorkerPool, ctx: Mapping[str, Any], code: str, inputs: dict[str, Any]
) -> tuple[str, list[tuple[str, dict[str, Any], str]], bool]:
    """The run's answer to the model, each inner call (name, arguments, the rich text
    the model would have read calling it directly) and whether the program failed: the
    program run on a sandbox of the bench's own, each call through ``pool.call_tool``
    as in ``run_code``, recorded."""
    calls: list[tuple[str, dict[str, Any], str]] = []

    async def recording(name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
        response = await pool.call_tool(name, arguments)
        calls.append((name, arguments, result_text(response)))
        return response

    sandbox: CodeSandbox = ctx["sandbox"]
    try:
        result = await sandbox.run(code, tools=ctx["tools"], call=recording, inputs=inputs)
    except CodeError as exc:
        return result_text(code_response(exc)), calls, True
    return result_text(code_response(result)), calls, False


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
    answer, calls, failed = await recorded_run(pool, ctx, code, inputs)
    calls_only = sum(
        count_tokens(name) + count_tokens(json.dumps(a)) + count_tokens(text)
        for name, a, text in calls
    )
    json_definitions = count_tokens(json.dumps(definitions))
    ours = count_tokens(stubs) + count_tokens(code) + count_tokens(answer)

    fm_code = to_fastmcp(code, names)
    fm_run = f"REPO = {json.dumps(ctx['fastmcp_repo'])}\n{fm_code}"
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
        # Each contender ran the set's tasks in order on its own copy of one world.
        "same_answer": answer.strip() == fm_answer.strip(),
        "failed": failed,
        "answer": answer,
    }
    return row, {"direct_ms": replay, "nativemcp_ms": ours_run, "fastmcp_ms": theirs_run}


async def _inner_call(
    pool: WorkerPool, ctx: Mapping[str, Any], calls: int, rounds: int
) -> dict[str, float]:
    """One inner call against one direct ``pool.call_tool`` of the same tool (µs), and
    the sandbox's share: the same program with each call answered at once (the run's
    bookkeeping and Monty's round trip to its process, no tool), and Monty's alone (its
    own pool, as the sandbox configures it, an ``async def`` host function giving the
    same value: no nativemcp code)."""
    import msgspec
    import pydantic_monty

    identifier = INNER_TOOL  # a full name without '-' is its own identifier
    program = f"for i in range({calls}):\n    await {identifier}()"
    answer = await pool.call_tool(INNER_TOOL)
    value = msgspec.to_builtins(unwrap(answer, object))  # what the program gets

    async def direct() -> None:
        for _ in range(calls):
            await pool.call_tool(INNER_TOOL)

    async def inner() -> None:
        await pool.run_code(program)

    async def answered(name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
        return answer

    async def sandbox_only() -> None:
        await ctx["sandbox"].run(program, tools=ctx["tools"], call=answered)

    async def host() -> Any:
        return value

    monty = pydantic_monty.AsyncMonty(
        min_processes=1, max_processes=4, pre_warm=1, stream_async_calls=True
    )
    async with monty:

        async def monty_only() -> None:
            async with monty.checkout() as session:
                await session.feed_run(program, external_lookup={identifier: host})

        await inner()  # the sandbox warm, as in every later run
        await sandbox_only()
        await monty_only()
        direct_us, inner_us, sandbox_us, monty_us = [], [], [], []
        for _ in range(rounds):  # interleaved: machine noise falls on all alike
            direct_us.append(await _median_s(direct, 1) / calls * 1e6)
            inner_us.append(await _median_s(inner, 1) / calls * 1e6)
            sandbox_us.append(await _median_s(sandbox_only, 1) / calls * 1e6)
            monty_us.append(await _median_s(monty_only, 1) / calls * 1e6)
    d, i = statistics.median(direct_us), statistics.median(inner_us)
    b, m = statistics.median(sandbox_us), statistics.median(monty_us)
    # Floors: a call's own time plus the sandbox's round trip (or Monty's), nothing else.
    return {
        "direct_us": d,
        "inner_us": i,
        "sandbox_us": b,
        "monty_us": m,
        "ratio": ratio(i, d),
        "floor_ratio": ratio(d + b, d),
        "monty_floor_ratio": ratio(d + m, d),
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


@contextlib.asynccontextmanager
async def code_context(pool: WorkerPool, world: Path) -> AsyncIterator[dict[str, Any]]:
    """What a run of a task's program needs on ``pool`` over the world at ``world``:
    the tools the model sees by identifier, a sandbox of the bench's own, the
    repository's path, the JSON definitions."""
    visible = [(t.name, t) for t in await pool.list_tools() if "model" in ui_visibility(t.meta)]
    tools = code_tools(visible)
    sandbox = CodeSandbox()
    try:
        yield {
            "names": {ident: tool.name for ident, tool in tools.items()},
            "tools": tools,
            "sandbox": sandbox,
            "repo": str(world / "workspace" / "repo"),
            "definitions": await pool.tool_definitions("openai"),
        }
    finally:
        await sandbox.aclose()


@contextlib.asynccontextmanager
async def world_pool(world: Path) -> AsyncIterator[WorkerPool]:
    """A pool over the world at ``world``: its data, workspace and external servers."""
    async with WorkerPool(
        data_dir=world / "data",
        workspace_root=world / "workspace",
        mcp_servers=external_servers(world),
        timeout=60,
    ) as pool:
        yield pool


@contextlib.asynccontextmanager
async def _contenders(template: Path, root: Path) -> AsyncIterator[tuple[WorkerPool, Any, Any]]:
    """nativemcp's pool and FastMCP's CodeMode, each over its own fresh copy of the
    template world (the same files, commits and stores), and the bench's context."""
    ours = copy_world(template, root / "nativemcp")
    theirs = copy_world(template, root / "fastmcp")
    async with world_pool(ours) as pool, code_context(pool, ours) as ctx:
        ctx["fastmcp_repo"] = str(theirs / "workspace" / "repo")
        ctx["servers"] = [*sorted(external_servers(ours)), "content-store", "planning", "workspace"]
        async with fastmcp_code_mode(
            theirs / "data", theirs / "workspace", external_servers(theirs)
        ) as fastmcp:
            yield pool, fastmcp, ctx


def load_tasks(name: str) -> list[dict[str, Any]]:
    """The tasks of the set ``name`` (``tuning`` or ``held-out``), in their order."""
    tasks: list[dict[str, Any]] = json.loads(SETS[name].read_text("utf-8"))["tasks"]
    return tasks


async def _measure_set(
    pool: WorkerPool, fastmcp: Any, ctx: Mapping[str, Any], name: str, rounds: int
) -> dict[str, Any]:
    """One set's rows (its tasks in order, then each one's runs timed) and the tasks
    skipped for a server not installed."""
    tasks = load_tasks(name)
    ready = [t for t in tasks if all(s in pool.names for s in t["servers"])]
    measured = [await _task(pool, fastmcp, t, ctx) for t in ready]
    for row, timers in measured:
        for key, timer in timers.items():
            row[key] = await _median_s(timer, rounds) * 1e3
    rows = [row for row, _ in measured]
    return {
        "file": f"bench/data/{SETS[name].name}",
        "tasks": rows,
        "skipped": [t["name"] for t in tasks if t not in ready],
        "summary": _summary(rows),
    }


async def run(quick: bool, sets: Sequence[str] = tuple(SETS)) -> dict[str, Any]:
    """Every measurement of this bench, as the JSON report: each set of ``sets`` on
    fresh worlds of its own; the inner call, the warm start and the definitions once,
    on the first set's."""
    rounds = 1 if quick else 5
    report: dict[str, Any] = {"sets": {}, "exact_tokens": exact_counts(), "quick": quick}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        template = await make_template(root / "template")
        for name in sets:
            async with _contenders(template, root / name) as (pool, fastmcp, ctx):
                report["sets"][name] = await _measure_set(pool, fastmcp, ctx, name, rounds)
                if "inner_call" in report:
                    continue
                report["servers"] = ctx["servers"]
                report["inner_call"] = await _inner_call(
                    pool, ctx, 50 if quick else 200, 5 if quick else 9
                )
                report["warm_start"] = await _warm_start(pool, fastmcp, 10 if quick else 50)
                report["definitions"] = await _definitions(pool, fastmcp)
    return report


def _summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A set's numbers against the issue's token goals (≥ 80% fewer than direct on
    tasks of 3+ steps; fewer than FastMCP's CodeMode on every task)."""
    long = [r for r in rows if r["steps"] >= 3]
    cut = [1 - r["nativemcp_tokens"] / r["direct_tokens"] for r in long]
    # Out of reach of any stubs: the program and its printed answer alone pass 20%.
    floor = [1 - r["floor_tokens"] / r["direct_tokens"] for r in long]
    vs_fastmcp = [ratio(r["nativemcp_tokens"], r["fastmcp_tokens"]) for r in rows]
    return {
        "tasks": len(rows),
        "long_tasks": len(long),
        "cut_min": min(cut, default=0.0),
        "cut_max": max(cut, default=0.0),
        "cut_met": sum(c >= 0.8 for c in cut),
        "floor_min": min(floor, default=0.0),
        "floor_max": max(floor, default=0.0),
        "beyond_any_stubs": sum(f < 0.8 for f in floor),
        "not_fewer_than_fastmcp": [
            r["task"] for r in rows if r["nativemcp_tokens"] >= r["fastmcp_tokens"]
        ],
        "vs_fastmcp_min": min(vs_fastmcp, default=0.0),
        "vs_fastmcp_max": max(vs_fastmcp, default=0.0),
        "same_answer": sum(r["same_answer"] for r in rows),
    }


def _token_goals(summary: Mapping[str, Any]) -> list[str]:
    if not summary["tasks"]:
        return ["no task ran (a server missing?)"]
    long, met = summary["long_tasks"], summary["cut_met"]
    not_fewer = summary["not_fewer_than_fastmcp"]
    return [
        f"tokens vs direct, tasks of 3+ steps: {summary['cut_min']:.0%} to "
        f"{summary['cut_max']:.0%} fewer (goal ≥ 80%: "
        f"{'met' if met == long else f'met on {met} of {long}'}; at best, stubs free: "
        f"{summary['floor_min']:.0%} to {summary['floor_max']:.0%}, so on "
        f"{summary['beyond_any_stubs']} of them the program and its output alone are over "
        "20% of direct)",
        f"fewer tokens than FastMCP's CodeMode: {summary['tasks'] - len(not_fewer)}/"
        f"{summary['tasks']} tasks ({summary['vs_fastmcp_min']:.2f}x to "
        f"{summary['vs_fastmcp_max']:.2f}x its tokens"
        + (f"; not: {', '.join(not_fewer)}" if not_fewer else "")
        + f"); the same answer on {summary['same_answer']}/{summary['tasks']}",
    ]


def _speed_goals(report: Mapping[str, Any]) -> list[str]:
    inner, warm = report["inner_call"], report["warm_start"]
    return [
        f"inner call {inner['inner_us']:.0f} µs vs direct {inner['direct_us']:.0f} µs: "
        f"{inner['ratio']:.2f}x (goal ≤ 1.5x: {'met' if inner['ratio'] <= 1.5 else 'NOT met'}); "
        f"the sandbox's round trip alone {inner['sandbox_us']:.0f} µs, so at best "
        f"{inner['floor_ratio']:.2f}x; Monty's own, with no nativemcp code, "
        f"{inner['monty_us']:.0f} µs (at best {inner['monty_floor_ratio']:.2f}x)",
        f"warm run start {warm['nativemcp_ms']:.2f} ms (goal ≤ 10 ms: "
        f"{'met' if warm['nativemcp_ms'] <= 10 else 'NOT met'}); FastMCP's execute "
        f"{warm['fastmcp_ms']:.2f} ms",
    ]


def _print_set(name: str, report: Mapping[str, Any]) -> None:
    rows = report["tasks"]
    print(f"== {SET_TITLES[name]}: {report['file']}\n")
    print_table(
        f"Tokens a model reads and writes per task, {name} set (o200k_base)",
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
        "The tools' descriptions: nativemcp stubs, JSON definitions, FastMCP get_schema; "
        "the same answer (each from the same fresh state)",
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
    for line in _token_goals(report["summary"]):
        print(f"- {name} set: {line}")
    failed = [r["task"] for r in rows if r["failed"]]
    if failed:
        print(f"programs that FAILED (their numbers mean little): {', '.join(failed)}")
    if report["skipped"]:
        print(f"skipped (server not installed): {', '.join(report['skipped'])}")
    print()


def _print(report: Mapping[str, Any]) -> None:
    for name, measured in report["sets"].items():
        _print_set(name, measured)
    definitions = report["definitions"]
    print(
        f"Definitions every request carries (OpenAI tools): every tool "
        f"{definitions['every_tool']}, nativemcp code mode {definitions['nativemcp_code_mode']}, "
        f"FastMCP CodeMode {definitions['fastmcp_code_mode']}"
    )
    for line in _speed_goals(report):
        print(f"- {line}")
    print(token_note())


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        choices=[*SETS, "both"],
        default="both",
        help="which task set to measure (default: both, each reported apart)",
    )


def main(argv: list[str] | None = None) -> None:
    """Run the bench and print its tables (``--json``: and one JSON line)."""
    args = parse_args(
        __doc__.splitlines()[0] if __doc__ else "bench.codemode", argv, extra=_add_options
    )
    sets = tuple(SETS) if args.set == "both" else (args.set,)
    report = anyio.run(run, args.quick, sets)
    _print(report)
    if args.json:
        emit_json(report)


if __name__ == "__main__":
    main(sys.argv[1:])
