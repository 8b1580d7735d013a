"""bench.codemode's mechanical translation of a task's program to FastMCP's ``execute``
form, and its task file."""

from __future__ import annotations

import ast
import json

from bench._codemode_setup import to_fastmcp, tools_used
from bench.codemode import TASKS

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


def test_the_tasks_are_eight_or_more_programs_that_parse_and_end_in_a_print() -> None:
    tasks = json.loads(TASKS.read_text())["tasks"]
    assert len(tasks) >= 8
    assert len({t["name"] for t in tasks}) == len(tasks)
    for task in tasks:
        last = ast.parse(task["code"]).body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), task["name"]
        assert isinstance(last.value.func, ast.Name) and last.value.func.id == "print"
        assert task["servers"] and task["task"]
