"""bench.payload: a row per built-in tool, counted with the exact tokenizer, and a fact
check that catches a text leaving out what the JSON holds."""

from __future__ import annotations

import json
import os

import pytest

from bench.payload import cli, missing_facts


def test_the_fact_check_accepts_the_forms_a_reader_takes_as_the_same() -> None:
    structured = {
        "createdAt": "2026-11-26T08:23:38.543000Z",
        "score": 2.3523859995436593,
        "content": "first line\n\nsecond line",
        "count": 3,
        "ok": True,
    }
    text = "Created: 2026-11-26 08:23 UTC, BM25 2.35, 3 lines:\n1 | first line\n3 | second line"
    assert missing_facts(structured, text) == []
    assert missing_facts({**structured, "hash": "b63f135d"}, text) == ["b63f135d"]
    assert missing_facts({"count": 4}, text) == ["4"]


def test_the_bench_prints_a_row_per_built_in_tool_with_exact_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = cli(["--quick", "--json"])
    out = capsys.readouterr().out
    assert json.loads(out.strip().splitlines()[-1]) == report
    assert report["exact_tokens"] is True
    servers = {row["server"] for row in report["tools"]}
    assert servers == {"content-store", "planning", "workspace"}
    search = next(r for r in report["tools"] if r["tool"] == "keyword_similarity_search")
    assert search["rich_tokens"] > 0
    assert 0 < search["status_tokens"] < search["sdk_json_tokens"]
    assert all(f"{row['server']}.{row['tool']}" in out for row in report["tools"])


def test_every_built_in_tool_states_every_fact_in_no_more_tokens_than_the_json() -> None:
    report = cli(["--quick"])
    assert report["exact_tokens"] is True
    misses = {
        f"{row['server']}.{row['tool']}": (
            row["rich_tokens"],
            row["sdk_json_tokens"],
            row["facts_missing"],
        )
        for row in report["tools"]
        if not row["met"]
    }
    assert misses == {}


def test_large_results_held_to_a_budget_meet_every_goal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = cli(["--quick", "--json", "--budget", "2000"])
    out = capsys.readouterr().out
    assert json.loads(out.strip().splitlines()[-1]) == report
    assert report["budget"] == 2000 and report["exact_tokens"] is True
    sources = {row["source"]: row for row in report["sources"]}
    # Node's two sources run where .ci/node installed them, the browser where Debian's
    # chromium is (CI); git and our own always.
    assert {"git", "rows (own tool)"} <= set(sources)
    if os.environ.get("CI", "").lower() == "true":
        assert report["not_run"] == []
        assert {"filesystem", "memory", "browser (long page)"} <= set(sources)
    for row in report["sources"]:
        assert row["max_message_tokens"] <= 2000, row
        assert row["found"] and 1 <= row["read_calls"] <= 2, row
        assert row["fewer"] >= 0.9 and row["met"], row
