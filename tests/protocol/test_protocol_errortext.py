"""Reading codes and messages out of MCP error texts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativemcp.protocol import ErrorInfo, extract_error_info

CASES = [
    (
        "Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool "
        "manipulateCube: [] (Code: -32603)",
        ErrorInfo(-32602, "Invalid arguments for tool manipulateCube: []"),
    ),
    (
        "Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool manipulateCube",
        ErrorInfo(-32602, "Invalid arguments for tool manipulateCube"),
    ),
    ("MCP error -32001: Request timed out", ErrorInfo(-32001, "Request timed out")),
    ("mcp error: 7 lower case", ErrorInfo(7, "lower case")),
    (
        "Error executing tool tool_err: Mcp error: -32602: bad args",
        ErrorInfo(-32602, "Error executing tool tool_err: bad args"),
    ),
    ("Error: x", ErrorInfo(None, "x")),
    ("Error: Error: twice", ErrorInfo(None, "twice")),
    ("error:   spaced  ", ErrorInfo(None, "spaced")),
    ("boom (Code: -32000)", ErrorInfo(-32000, "boom")),
    ("Error: boom (Code: -32000)", ErrorInfo(-32000, "boom")),
    ("Something went wrong", ErrorInfo(None, "Something went wrong")),
    ("  kept as it is  ", ErrorInfo(None, "  kept as it is  ")),
    ("The Error: is inside", ErrorInfo(None, "The Error: is inside")),
    ("", ErrorInfo(None, "")),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_error_texts_give_code_and_message(text: str, expected: ErrorInfo) -> None:
    assert extract_error_info(text) == expected


def test_the_mcp_error_code_wins_over_the_trailing_wrapper_code() -> None:
    info = extract_error_info("Mcp error: -32602: bad (Code: -32603)")
    assert info.code == -32602


@given(text=st.text(max_size=200))
def test_any_text_gives_an_error_info_and_plain_text_is_the_whole_message(text: str) -> None:
    info = extract_error_info(text)
    lowered = text.lower()
    if "error" not in lowered and "code" not in lowered:
        assert info == ErrorInfo(None, text)


@pytest.mark.parametrize(
    "text",
    [
        "x" + " " * 30_000 + "y",
        "mcp error" + " " * 30_000 + "y",
        "(code:" + " " * 30_000 + "x",
        "Error:" + " " * 30_000,
    ],
)
@pytest.mark.timeout(10)
def test_long_blank_runs_are_read_in_linear_time(text: str) -> None:
    # A quadratic pattern takes minutes on these (ten times the blanks of a
    # real error text); a linear one, milliseconds. The per-test limit fails it, not CI's clock.
    big = text.replace(" " * 30_000, " " * 300_000)
    info = extract_error_info(big)
    assert isinstance(info, ErrorInfo)
