"""A tool result over its token budget: cut at a readable boundary, kept whole, read on.

Property tests hold the cut's promises for any text: never over the budget, never
inside a word or a UTF-8 sequence, a notice whose numbers are true, a result within its
budget untouched byte for byte; and `read_result` gives back exactly what was left out.
They run with exact o200k counts (the ``tokens`` extra, which the test extra installs)
and again with the characters / 4 estimate.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativemcp.protocol import ToolError, result_text, structured_response, text_response
from nativemcp.proxy.llm import (
    MIN_BUDGET,
    PROVIDERS,
    RESULTS_URI,
    KeptResults,
    count_tokens,
    read_result,
    tool_result_message,
)
from nativemcp.proxy.llm._budget import human_size
from nativemcp.proxy.llm._tokens import _encoding

_NOTICE = re.compile(
    r"\n?\[cut to fit the token budget: lines (\d[\d,]*)-(\d[\d,]*) of (\d[\d,]*) shown, "
    r"(\d[\d,]*) lines? \(([^)]*)\) left out\. The whole result is kept as "
    r"nativemcp://results/(r[0-9a-f]{16}): read_result\(id='\6', from_line=(\d+)\) reads on"
)

# Words of several scripts: ASCII, accented Latin, Korean (3 UTF-8 bytes), emoji (4).
_WORD = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789éüß한국어글자😀🚀.,:-_"),
    min_size=1,
    max_size=12,
)
_LINE = st.lists(_WORD, max_size=25).map(" ".join)
_TEXT = st.lists(_LINE, min_size=1, max_size=300).map("\n".join).filter(str.strip)


@pytest.fixture
def estimated_counts() -> Iterator[None]:
    """As if the ``tokens`` extra were not installed: characters / 4."""
    _encoding.cache_clear()
    saved = sys.modules.get("quicktok")
    sys.modules["quicktok"] = None  # type: ignore[assignment]
    yield
    if saved is None:
        del sys.modules["quicktok"]
    else:
        sys.modules["quicktok"] = saved
    _encoding.cache_clear()


def _read(arguments: dict[str, Any], **options: Any) -> str:
    """What ``read_result`` answers, as the text the model reads."""
    response = read_result(arguments, **options)
    assert response.result is not None
    return result_text(response.result)


def _message(text: str, budget: int, kept: KeptResults, owner: str = "me") -> str:
    message = tool_result_message(
        text_response(text),
        provider="openai",
        call_id="c1",
        tool_name="fs__read_file",
        budget=budget,
        kept=kept,
        owner=owner,
    )
    content = message["content"]
    assert isinstance(content, str)
    return content


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _check_cut(text: str, budget: int) -> None:
    kept = KeptResults()
    shown = _message(text, budget, kept)
    assert count_tokens(shown) <= budget
    if count_tokens(text) <= budget:
        assert shown == text
        assert len(kept) == 0
        return
    found = _NOTICE.search(shown)
    if found is None:  # not even one whole line fits: a line's first words
        assert "of line 1 of" in shown
        before = shown.rpartition("\n[cut to fit")[0]
        assert text.startswith(before)
        assert before == "" or text[len(before)].isspace()
        return
    first, last, total, left, size, result_id, next_line = found.groups()
    lines = text.split("\n")
    body = shown[: found.start()]
    # Whole lines only, never part of a word or of a UTF-8 sequence.
    assert body.split("\n") == lines[: _number(last)]
    assert body.encode() == text.encode()[: len(body.encode())]
    assert (_number(first), _number(total)) == (1, len(lines))
    assert _number(left) == len(lines) - _number(last)
    assert size == human_size(len("\n".join(lines[_number(last) :]).encode()) + 1)
    assert int(next_line) == _number(last) + 1
    # Nothing lost: reading on gives back every line that was left out, in order.
    rest = _read(
        {"id": result_id, "from_line": int(next_line)}, budget=10**9, kept=kept, owner="me"
    )
    assert rest.split("\n")[1:] == lines[_number(last) :]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, budget=st.integers(MIN_BUDGET, 1500))
def test_a_cut_text_is_within_budget_whole_lines_with_a_true_notice(text: str, budget: int) -> None:
    _check_cut(text, budget)


@pytest.mark.usefixtures("estimated_counts")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, budget=st.integers(MIN_BUDGET, 1500))
def test_the_cut_keeps_its_promises_with_estimated_counts_too(text: str, budget: int) -> None:
    _check_cut(text, budget)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(_WORD, min_size=1, max_size=3000), budget=st.integers(MIN_BUDGET, 600))
def test_one_long_line_is_cut_after_a_whole_word(words: list[str], budget: int) -> None:
    text = " ".join(words)
    shown = _message(text, budget, KeptResults())
    assert count_tokens(shown) <= budget
    if shown == text:
        return
    before, _, notice = shown.rpartition("[cut to fit")
    before = before.removesuffix("\n")
    assert text.startswith(before)
    assert before == "" or text[len(before)] == " "
    left = len(text.encode()) - len(before.encode()) + 1
    assert f"{human_size(left)} left out" in notice


@settings(max_examples=25, deadline=None)
@given(text=_TEXT, budget=st.integers(MIN_BUDGET, 5000))
def test_a_result_within_its_budget_is_sent_byte_for_byte_for_every_provider(
    text: str, budget: int
) -> None:
    response = text_response(text)
    if count_tokens(text) > budget:
        return
    for provider in PROVIDERS:
        plain = tool_result_message(response, provider=provider, call_id="c", tool_name="t")
        kept = KeptResults()
        budgeted = tool_result_message(
            response, provider=provider, call_id="c", tool_name="t", budget=budget, kept=kept
        )
        assert json.dumps(budgeted) == json.dumps(plain)
        assert len(kept) == 0


def test_a_budget_below_the_minimum_or_not_a_number_is_refused_by_name() -> None:
    for budget in (MIN_BUDGET - 1, 0, -5, True, 1000.0, "1000"):
        with pytest.raises(ValueError, match="budget must be a whole number of tokens"):
            tool_result_message(
                text_response("x"),
                provider="openai",
                call_id="c",
                tool_name="t",
                budget=budget,  # type: ignore[arg-type]
            )


def _log(lines: int) -> list[str]:
    return [
        f"2026-05-01T10:{i % 60:02d}:00Z INFO request {i} served in {i % 97} ms"
        for i in range(lines)
    ]


def test_a_fact_past_the_cut_is_found_by_a_query_of_the_kept_result() -> None:
    lines = _log(20_000)
    lines[19_500] = "2026-05-01T10:00:00Z ERROR disk quota exceeded on volume zeta-7"
    kept = KeptResults()
    shown = _message("\n".join(lines), 2000, kept)
    assert "zeta-7" not in shown
    result_id = shown.rpartition(RESULTS_URI)[2].partition(":")[0]
    answer = _read({"id": result_id, "query": "quota zeta-7"}, budget=500, kept=kept, owner="me")
    assert count_tokens(answer) <= 500
    assert "ERROR disk quota exceeded on volume zeta-7" in answer
    # The passage says where it lies: its lines hold line 19,501.
    first, last = re.search(r"\[lines ([\d,]+)-([\d,]+), score", answer).groups()  # type: ignore[union-attr]
    assert _number(first) <= 19_501 <= _number(last)
    # The id may be given as its URI too.
    again = _read(
        {"id": f"{RESULTS_URI}{result_id}", "from_line": 19_501, "to_line": 19_501},
        budget=500,
        kept=kept,
        owner="me",
    )
    assert again.split("\n")[1] == lines[19_500]


def test_another_owner_cannot_read_a_kept_result_and_learns_nothing_of_it() -> None:
    kept = KeptResults()
    shown = _message("\n".join(_log(5000)), 500, kept, owner="alice")
    result_id = shown.rpartition(RESULTS_URI)[2].partition(":")[0]
    assert _read({"id": result_id}, budget=500, kept=kept, owner="alice")
    with pytest.raises(ToolError) as theirs:
        _read({"id": result_id}, budget=500, kept=kept, owner="bob")
    with pytest.raises(ToolError) as unknown:
        _read({"id": "r0000000000000000"}, budget=500, kept=kept, owner="bob")
    # The same message either way: an id says nothing about whose it is.
    assert theirs.value.message.replace(result_id, "?") == unknown.value.message.replace(
        "r0000000000000000", "?"
    )


def test_kept_results_expire_after_their_ttl_and_the_oldest_go_past_the_size_cap() -> None:
    now = [0.0]
    kept = KeptResults(ttl=60, max_bytes=10_000, clock=lambda: now[0])
    first = kept.keep(["a" * 4000], owner="o", tool="t")
    second = kept.keep(["b" * 4000], owner="o", tool="t")
    assert kept.get(first.id, owner="o") is first
    third = kept.keep(["c" * 4000], owner="o", tool="t")  # 12 KB > 10 KB: the oldest goes
    with pytest.raises(ToolError, match="no kept result"):
        kept.get(first.id, owner="o")
    assert kept.get(second.id, owner="o") is second
    now[0] = 61.0
    with pytest.raises(ToolError, match="no kept result"):
        kept.get(third.id, owner="o")
    assert len(kept) == 0
    with pytest.raises(ValueError, match="ttl and max_bytes must be positive"):
        KeptResults(ttl=0)


def test_a_line_range_outside_the_result_is_a_clear_error() -> None:
    kept = KeptResults()
    result = kept.keep(["one", "two", "three"], owner="", tool="t")
    with pytest.raises(ToolError, match=r"lines 7\.\.7 are not in result .* which has 3 lines"):
        _read({"id": result.id, "from_line": 7, "to_line": 7}, budget=500, kept=kept)
    with pytest.raises(ToolError, match="top_n must be between 1 and 50"):
        _read({"id": result.id, "query": "two", "top_n": 99}, budget=500, kept=kept)


def _json_message(value: Any, budget: int, kept: KeptResults) -> str:
    content = _message(json.dumps(value), budget, kept)
    assert count_tokens(content) <= budget
    return content


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.fixed_dictionaries({"id": st.integers(), "name": _LINE, "tags": st.lists(_WORD)}),
        min_size=1,
        max_size=400,
    ),
    budget=st.integers(MIN_BUDGET, 2000),
)
def test_a_json_list_over_budget_shows_whole_items_as_valid_json(
    rows: list[dict[str, Any]], budget: int
) -> None:
    kept = KeptResults()
    content = _json_message(rows, budget, kept)
    if count_tokens(json.dumps(rows)) <= budget:
        return
    shown, cut, notice = content.rpartition("\n[cut to fit")
    if not cut:  # written compactly, every item fits: nothing is left out
        assert json.loads(content) == rows
        return
    if "summarised by shape" in notice:
        return  # not even one item fits whole
    items = json.loads(shown)
    assert items == rows[: len(items)]
    assert f"items 1-{len(items):,} of {len(rows):,} shown" in notice
    result_id = notice.rpartition(RESULTS_URI)[2].partition(":")[0]
    rest = _read(
        {"id": result_id, "from_line": len(items) + 1}, budget=10**9, kept=kept, owner="me"
    )
    assert [json.loads(line) for line in rest.split("\n")[1:]] == rows[len(items) :]


def test_a_json_object_over_budget_is_summarised_by_shape_and_unwrap_still_gets_it_whole() -> None:
    rows = [{"id": i, "name": f"row {i}", "tags": ["red", "blue"]} for i in range(10_000)]
    value = {"total": 10_000, "rows": rows, "next": None}
    response = structured_response(json.dumps(value), value)
    kept = KeptResults()
    message = tool_result_message(
        response, provider="anthropic", call_id="c", tool_name="t", budget=600, kept=kept
    )
    text = message["content"][0]["text"]
    assert count_tokens(text) <= 600
    summary, _, notice = text.rpartition("\n[cut to fit")
    shape = json.loads(summary)  # a summary is valid JSON, never half an object
    assert list(shape) == ["total", "rows", "next"]
    assert shape["total"] == 10_000
    shown = [row for row in shape["rows"] if isinstance(row, dict)]
    assert shown == rows[: len(shown)]
    more = shape["rows"][-1]
    assert more.startswith(
        f"… {10_000 - len(shown):,} more items, each an object with id, name, tags"
    )
    assert "summarised by shape" in notice
    # The app's side is untouched: the response still holds the whole value.
    assert response.result is not None
    assert response.result.structured_content == value
    # ... and the model reads any of it: the line the summary names holds that row.
    result_id = notice.rpartition(RESULTS_URI)[2].partition(" ")[0]
    line = int(re.search(r"lines ([\d,]+)-", more).group(1).replace(",", ""))  # type: ignore[union-attr]
    read = _read({"id": result_id, "from_line": line, "to_line": line}, budget=300, kept=kept)
    assert json.loads(read.split("\n")[1].rstrip(",")) == rows[len(shown)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _LINE,
    lambda inner: st.lists(inner, max_size=60) | st.dictionaries(_WORD, inner, max_size=25),
    max_leaves=400,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(value=st.dictionaries(_WORD, _JSON, min_size=1, max_size=40), budget=st.integers(200, 800))
def test_any_json_object_over_budget_is_summarised_within_it_as_valid_json(
    value: dict[str, Any], budget: int
) -> None:
    content = _json_message(value, budget, KeptResults())
    if count_tokens(json.dumps(value)) <= budget:
        return
    shown, cut, notice = content.rpartition("\n[cut to fit")
    if not cut:  # compact JSON within the budget: sent as it is, every key
        assert json.loads(content) == value
        return
    if "summarised by shape" in notice:
        assert list(json.loads(shown)) == list(value)  # every key, in order
    else:  # its keys alone are over: whole lines of its kept form
        assert "lines 1-" in notice
