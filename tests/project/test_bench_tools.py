"""bench.tools: its query set is what the bench claims, and recall counts as it says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.tools import QUERIES, TASK_QUERIES, _recall, load_queries, query_half

CODEMODE_TASKS = Path(QUERIES).with_name("codemode_tasks.json")


def test_the_query_set_holds_100_tasks_in_three_languages_and_says_how_it_was_written() -> None:
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    assert "written by hand" in data["how_written"].lower()
    queries = load_queries()
    assert len(queries) >= 100
    languages = {q["language"] for q in queries}
    assert {"en", "ko", "ja"} <= languages
    assert all("__" in q["tool"] and q["query"].strip() for q in queries)
    # Paraphrased, not copied: no query is its tool's own name in words.
    assert all(q["query"] != q["tool"].rpartition("__")[2].replace("_", " ") for q in queries)


def test_recall_at_k_counts_the_right_tool_within_the_first_k() -> None:
    ranked = [["a", "b"], ["c", "a"], []]
    assert _recall(ranked, ["a", "a", "a"], 1) == 1 / 3
    assert _recall(ranked, ["a", "a", "a"], 5) == 2 / 3


def test_the_halves_split_by_tool_so_no_tool_is_tuned_on_and_held_out() -> None:
    queries = load_queries()
    halves: dict[str, set[int]] = {}
    for query in queries:
        halves.setdefault(query["tool"], set()).add(query_half(query))
    assert all(len(found) == 1 for found in halves.values())
    held_out = sum(query_half(q) for q in queries)
    assert 0.4 * len(queries) < held_out < 0.6 * len(queries)
    assert "held-out half" in json.loads(QUERIES.read_text(encoding="utf-8"))["how_written"]


def test_the_task_set_asks_each_codemode_task_for_the_tools_its_program_calls() -> None:
    tasks = {t["name"]: t for t in json.loads(CODEMODE_TASKS.read_text("utf-8"))["tasks"]}
    queries = load_queries(TASK_QUERIES)
    assert {q["task"] for q in queries} == set(tasks)
    for query in queries:
        code = tasks[query["task"]]["code"]
        called = re.findall(r"\b(\w+__\w+)\(", code)
        # A program calls a tool by its identifier: its full name with - as _.
        identifier = query["tool"].replace("-", "_")
        if query["kind"] == "request":
            assert query["query"] == tasks[query["task"]]["task"]
            assert called[0] == identifier
        else:
            assert query["kind"] == "step" and identifier in called
    assert "never tuned on" in json.loads(TASK_QUERIES.read_text("utf-8"))["how_written"]
