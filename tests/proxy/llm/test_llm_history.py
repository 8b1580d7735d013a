"""History hygiene and response statistics, checked against the providers' SDK types."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from _provider_history import validate_history
from openai.types.chat import (
    ChatCompletionMessage,
    ChatCompletionMessageToolCall,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function

from nativemcp.protocol import (
    NativeMCPResponse,
    empty_response,
    error_response,
    text_response,
    tool_error_response,
)
from nativemcp.proxy.llm import (
    PROVIDERS,
    Provider,
    ResponseStats,
    UnknownProviderError,
    clean_history,
    response_stats,
    tool_result_message,
)


def openai_call(call_id: str, name: str = "search") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_openai_keeps_a_well_formed_history_as_it_is() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [openai_call("a"), openai_call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "assistant", "content": "done"},
    ]
    assert clean_history(history, provider="openai") == history


def test_openai_drops_orphan_results_unmatched_calls_and_empty_assistant_turns() -> None:
    history: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "cut_off", "content": "orphan at the head"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "trying",
            "tool_calls": [openai_call("a"), openai_call("b")],
        },
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "hurry"},
        {"role": "tool", "tool_call_id": "b", "content": "too late: a user turn came between"},
        {"role": "assistant", "content": None, "tool_calls": [openai_call("c")]},
        {"role": "user", "content": "never mind"},
    ]
    before = copy.deepcopy(history)
    cleaned = clean_history(history, provider="openai")
    assert cleaned == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "trying", "tool_calls": [openai_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "hurry"},
        {"role": "user", "content": "never mind"},
    ]
    assert history == before
    validate_history("openai", cleaned)


def test_sdk_message_objects_are_read_like_dicts() -> None:
    assistant = ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageToolCall(
                id="a", type="function", function=Function(name="search", arguments="{}")
            )
        ],
    )
    history = [
        {"role": "user", "content": "go"},
        assistant,
        {"role": "tool", "tool_call_id": "a", "content": "A"},
    ]
    cleaned = clean_history(history, provider="openai")
    assert [message["role"] for message in cleaned] == ["user", "assistant", "tool"]
    validate_history("openai", cleaned)
    with pytest.raises(TypeError):
        clean_history(["not a message"], provider="openai")


def test_openai_responses_pairs_outputs_with_any_earlier_call() -> None:
    history: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": "old", "output": "orphan"},
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "a", "name": "search", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "search", "arguments": "{}"},
        {"role": "user", "content": "also this"},
        {"type": "function_call_output", "call_id": "a", "output": "A"},
        {"type": "function_call_output", "call_id": "a", "output": "A twice"},
    ]
    cleaned = clean_history(history, provider="openai-responses")
    assert cleaned == [history[1], history[2], history[4], history[5]]
    validate_history("openai-responses", cleaned)


def test_anthropic_keeps_text_and_drops_only_the_unpaired_blocks() -> None:
    tool_use = {"type": "tool_use", "id": "a", "name": "search", "input": {}}
    history: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}],
        },
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "looking"},
                tool_use,
                {"type": "tool_use", "id": "b", "name": "search", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                {"type": "tool_result", "tool_use_id": "zzz", "content": "?"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]
    cleaned = clean_history(history, provider="anthropic")
    assert cleaned == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "looking"}, tool_use]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]
    validate_history("anthropic", cleaned)


def test_anthropic_results_must_be_in_the_very_next_message() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "s", "input": {}}],
        },
        {"role": "user", "content": "wait"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "A"}]},
    ]
    assert clean_history(history, provider="anthropic") == [history[0], history[2]]


def test_gemini_pairs_by_id_or_else_by_name_in_either_key_style() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "1", "name": "search", "args": {}}},
                {"function_call": {"name": "list", "args": {}}},
                {"functionCall": {"id": "3", "name": "list", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "1", "name": "search", "response": {"n": 1}}},
                {"function_response": {"name": "list", "response": {"n": 2}}},
                {"functionResponse": {"id": "9", "name": "list", "response": {"n": 3}}},
            ],
        },
    ]
    cleaned = clean_history(history, provider="gemini")
    assert cleaned == [
        history[1],
        {"role": "model", "parts": history[2]["parts"][:2]},
        {"role": "user", "parts": history[3]["parts"][:2]},
    ]
    validate_history("gemini", cleaned)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_history_starts_with_a_tool_result(provider: Provider) -> None:
    result = tool_result_message(text_response("x"), provider=provider, call_id="c", tool_name="t")
    head: dict[str, Any] = {
        "openai": result,
        "openai-responses": result,
        "anthropic": {"role": "user", "content": [result]},
        "gemini": {"role": "user", "parts": [result]},
    }[provider]
    user: dict[str, Any] = (
        {"role": "user", "parts": [{"text": "hi"}]}
        if provider == "gemini"
        else {"role": "user", "content": "hi"}
    )
    assert clean_history([head, user], provider=provider) == [user]


OUTCOMES: list[NativeMCPResponse[Any] | Exception] = [
    text_response('{"total": 2}'),
    text_response("2 files"),
    text_response("[1, 2]"),
    tool_error_response("Error: Mcp error: -32602: bad arguments"),
    error_response("no such tool", code=-32601),
    TimeoutError("too slow"),
    empty_response(),
]
EXPECTED = ResponseStats(total=7, json=2, text=1, error=3, empty=1)


def conversation(provider: Provider) -> list[dict[str, Any]]:
    """A valid history in which the model called a tool once per outcome."""
    history: list[dict[str, Any]] = []
    for index, outcome in enumerate(OUTCOMES):
        call_id = f"call_{index}"
        result = tool_result_message(outcome, provider=provider, call_id=call_id, tool_name="t")
        if provider == "openai":
            call = {"id": call_id, "type": "function", "function": {"name": "t", "arguments": "{}"}}
            history += [{"role": "assistant", "content": None, "tool_calls": [call]}, result]
        elif provider == "openai-responses":
            call = {"type": "function_call", "call_id": call_id, "name": "t", "arguments": "{}"}
            history += [call, result]
        elif provider == "anthropic":
            use = {"type": "tool_use", "id": call_id, "name": "t", "input": {}}
            history += [
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]},
            ]
        else:
            call = {"functionCall": {"id": call_id, "name": "t", "args": {}}}
            history += [{"role": "model", "parts": [call]}, {"role": "user", "parts": [result]}]
    return history


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_history_of_our_own_tool_results_is_valid_and_kept_whole(provider: Provider) -> None:
    history = conversation(provider)
    validate_history(provider, history)
    assert clean_history(history, provider=provider) == history


@pytest.mark.parametrize("provider", PROVIDERS)
def test_response_stats_count_each_kind_and_log_at_debug(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="nativemcp")
    assert response_stats(conversation(provider), provider=provider) == EXPECTED
    records = [r for r in caplog.records if "statistics" in r.getMessage()]
    assert [r.levelno for r in records] == [logging.DEBUG]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_response_stats_read_foreign_results_too() -> None:
    history: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "a", "content": ""},
        {"role": "tool", "tool_call_id": "b", "content": "MCP error -32603: boom"},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": '{"a": 1}'}]},
        {"role": "tool", "tool_call_id": "d", "content": "Everything is fine (really)."},
    ]
    assert response_stats(history, provider="openai") == ResponseStats(
        total=4, json=1, text=1, error=1, empty=1
    )


@pytest.mark.parametrize("function", [clean_history, response_stats])
def test_history_functions_reject_an_unknown_provider(function: Any) -> None:
    with pytest.raises(UnknownProviderError, match="openai-responses"):
        function([], provider="chatgpt")
