"""One run's bookkeeping without a sandbox: the arguments a call passes on, the limits
the run counts itself, and the identifiers tools get."""

from __future__ import annotations

import pytest

from nativemcp.protocol import Tool
from nativemcp.proxy.codemode import CodeLimits, python_names
from nativemcp.proxy.codemode._calls import RunState

TOOLS = {"t__range": Tool(name="t__range")}


def test_a_keyword_named_parameter_written_with_an_underscore_reaches_the_tool_as_named() -> None:
    state = RunState(TOOLS, CodeLimits())
    assert state.begin("t__range", (), {"from_": 1, "to": 2, "size_": 3}) == {
        "from": 1,
        "to": 2,
        "size_": 3,
    }
    with pytest.raises(TypeError, match="keyword arguments only"):
        state.begin("t__range", (1,), {})


def test_the_call_limit_refuses_the_call_past_it_and_is_remembered() -> None:
    state = RunState(TOOLS, CodeLimits(calls=2))
    state.begin("t__range", (), {})
    state.begin("t__range", (), {})
    with pytest.raises(RuntimeError, match="limit of 2 tool calls"):
        state.begin("t__range", (), {})
    assert state.exceeded is not None and state.exceeded.limit == "calls"


def test_printed_output_past_the_limit_keeps_the_part_that_fits() -> None:
    state = RunState(TOOLS, CodeLimits(output=10))
    state.on_print("stdout", "héllo\n")
    state.on_print("stdout", "world and more\n")
    assert state.output.encode() == "héllo\nwor".encode()
    assert state.exceeded is not None and state.exceeded.limit == "output"


def test_every_tool_gets_an_identifier_of_its_own() -> None:
    names = python_names(["a-b__c", "a_b__c", "x__class", "9s__t"])
    assert names == {
        "_9s__t": "9s__t",
        "a_b__c": "a-b__c",
        "a_b__c_2": "a_b__c",
        "x__class": "x__class",
    }
    with pytest.raises(ValueError, match="positive number"):
        CodeLimits(calls=0)
