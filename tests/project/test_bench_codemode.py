"""bench.codemode's mechanical translation of a task's program to FastMCP's ``execute``
form, and its two task sets: the tuning set and the held-out set, each in the schema,
each program run on a fresh world."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from _node import node_tool

from bench._codemode_setup import copy_world, make_template, to_fastmcp, tools_used
from bench.codemode import HELD_OUT, SETS, code_context, load_tasks, recorded_run, world_pool

NAMES = {"store__list": "store-x__list", "time__now": "time__now"}


def test_each_tool_call_becomes_call_tool_with_the_full_name_and_the_last_print_the_value() -> None:
    code = (
        "import asyncio\n"
        "a = await store__list(limit=2, name=f'x{1}')\n"
        "b = await asyncio.gather(*[time__now(zone=z) for z in 'ab'])\n"
        "print(len(a) + len(b))\n"
    )
    assert to_fastmcp(code, NAMES) == (
        "import asyncio\n"
        "a = await call_tool('store-x__list', {'limit': 2, 'name': f'x{1}'})\n"
        "b = await asyncio.gather(*[call_tool('time__now', {'zone': z}) for z in 'ab'])\n"
        "len(a) + len(b)\n"
    )
    assert sorted(tools_used(code, NAMES)) == ["store__list", "time__now"]
    # A print that is not the last statement, and other calls, stay as they are.
    assert to_fastmcp("print(1)\nx = len('a')\n", NAMES) == "print(1)\nx = len('a')\n"


SERVERS = {"content-store", "planning", "workspace", "git", "time", "memory"}
"""The servers bench.codemode starts (memory where ``.ci/.node`` has it)."""


@pytest.mark.parametrize("name", list(SETS))
def test_each_set_is_eight_or_more_tasks_in_the_schema_each_program_ending_in_a_print(
    name: str,
) -> None:
    data = json.loads(SETS[name].read_text("utf-8"))
    assert set(data) == {"about", "tasks"} and data["about"]
    tasks = data["tasks"]
    assert len(tasks) >= 8
    assert len({t["name"] for t in tasks}) == len(tasks)
    for task in tasks:
        assert set(task) == {"name", "servers", "task", "code"}, task["name"]
        assert task["task"] and task["servers"] and set(task["servers"]) <= SERVERS
        last = ast.parse(task["code"]).body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), task["name"]
        assert isinstance(last.value.func, ast.Name) and last.value.func.id == "print"


def test_the_held_out_set_says_how_it_was_written_and_shares_no_task_with_the_tuning_set() -> None:
    about = json.loads(HELD_OUT.read_text("utf-8"))["about"]
    assert "after the stub format" in about and "never tuned on" in about
    tuning, held_out = load_tasks("tuning"), load_tasks("held-out")
    for key in ("name", "task", "code"):
        assert not {t[key] for t in tuning} & {t[key] for t in held_out}, key


def _server(tool: str) -> str:
    """The server of a full tool name: ``builtin_planning__add_todo`` → ``planning``."""
    return tool.partition("__")[0].removeprefix("builtin_")


@pytest.mark.anyio
@pytest.mark.anyio_backends("asyncio")
async def test_every_program_runs_in_order_on_a_fresh_world_calling_its_servers_three_times_or_more(
    tmp_path: Path,
) -> None:
    template = await make_template(tmp_path / "template")
    skipped = []
    for name in SETS:  # each set on a world of its own, as the bench runs it
        world = copy_world(template, tmp_path / name)
        async with world_pool(world) as pool, code_context(pool, world) as ctx:
            for task in load_tasks(name):
                if not all(server in pool.names for server in task["servers"]):
                    skipped.append(task["name"])
                    continue
                # Every tool it names exists, on a branch this run takes or not.
                named = set(re.findall(r"\b(\w+__\w+)\(", task["code"]))
                assert named <= set(ctx["names"]), (task["name"], named - set(ctx["names"]))
                assert set(tools_used(task["code"], ctx["names"])) == named
                inputs = {"REPO": ctx["repo"]}
                answer, calls, failed = await recorded_run(pool, ctx, task["code"], inputs)
                assert not failed, (task["name"], answer)
                assert len(calls) >= 3, task["name"]
                assert {_server(call) for call, _, _ in calls} <= set(task["servers"])
    if skipped:  # only the memory server is optional: say so (CI=true: fail)
        node_tool("mcp-server-memory")
