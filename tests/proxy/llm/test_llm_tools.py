"""The agent loop over the catalog: tool declarations each provider's SDK types accept,
and model tool calls (SDK objects and dicts) run into the provider's tool-result message.

Real sources: an official-SDK server over stdio and built-in servers; the provider SDKs'
own types validate every declaration and message.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _pages import ROOT, blocks
from _provider_history import validate_turns
from anthropic.types import ToolParam, ToolResultBlockParam, ToolUseBlock
from google.genai import types as genai_types
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import (
    FunctionToolParam,
    ResponseFunctionToolCall,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

from nativemcp.proxy import WorkerPool
from nativemcp.proxy.llm import PROVIDERS, Provider, UnknownProviderError, clean_history
from nativemcp.proxy.llm._tools import gemini_schema
from nativemcp.workers import Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


TESTS = Path(__file__).parents[2]
_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_GEMINI_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")

LONG = "a_tool_name_that_is_long_enough_to_break_the_sixty_four_character_limit_of_providers"

odd = Server("odd-names")


@odd.tool(name=LONG)
def long_tool(n: int) -> int:
    """A tool with a very long name."""
    return n + 1


@odd.tool(name="dotted.name")
def dotted(text: str | None = None) -> str:
    """A tool with a dot in its name and a nullable argument."""
    return text or "none"


@odd.tool(name="dotted_name")
def underscored() -> str:
    """A tool whose name is what `dotted.name` becomes where dots are not allowed."""
    return "the underscored tool"


@pytest.fixture(scope="module")
async def pool(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WorkerPool]:
    marker = tmp_path_factory.mktemp("m")
    ext = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(marker)]}
    async with WorkerPool(
        [odd],
        data_dir=tmp_path_factory.mktemp("data"),
        builtins=["workspace"],
        in_process=["workspace", "odd-names"],
        mcp_servers={"ext": ext},
    ) as pool:
        yield pool


def _validate(provider: Provider, declaration: dict[str, Any]) -> str:
    if provider == "openai":
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(declaration)
        name = declaration["function"]["name"]
    elif provider == "openai-responses":
        TypeAdapter(FunctionToolParam).validate_python(declaration)
        name = declaration["name"]
    elif provider == "anthropic":
        TypeAdapter(ToolParam).validate_python(declaration)
        assert declaration["input_schema"]["type"] == "object"
        name = declaration["name"]
    else:
        model = genai_types.FunctionDeclaration.model_validate(declaration)
        genai_types.Tool(function_declarations=[model])
        name = declaration["name"]
        assert "$schema" not in json.dumps(declaration) and "$ref" not in json.dumps(declaration)
    pattern = _GEMINI_NAME if provider == "gemini" else _OPENAI_NAME
    assert pattern.fullmatch(name), name
    return str(name)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_every_tool_is_declared_in_a_shape_the_providers_sdk_accepts(
    pool: WorkerPool, provider: Provider
) -> None:
    declarations = await pool.tool_definitions(provider)
    names = [_validate(provider, d) for d in declarations]
    # Every tool, and read_result for what a cut result left out (the default budget).
    assert len(names) == len(set(names)) == len(await pool.list_tools()) + 1
    assert names[-1] == "read_result"
    assert "ext__get-sum" in names and "builtin_workspace__read_file" in names
    assert not any(LONG in name for name in names)  # shortened
    assert await pool.tool_definitions(provider) == declarations  # stable


def _call(provider: Provider, name: str, arguments: Any, call_id: str = "call_1") -> Any:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if provider == "openai":
        return ChatCompletionMessageFunctionToolCall(
            id=call_id, type="function", function=Function(name=name, arguments=text)
        )
    if provider == "openai-responses":
        return ResponseFunctionToolCall(
            call_id=call_id, name=name, arguments=text, type="function_call"
        )
    if provider == "anthropic":
        return ToolUseBlock(id=call_id, name=name, input=arguments, type="tool_use")
    return genai_types.Part(
        function_call=genai_types.FunctionCall(id=call_id, name=name, args=arguments)
    )


def _result(provider: Provider, message: dict[str, Any]) -> tuple[str, bool]:
    """The message's text and whether it is an error, after SDK validation."""
    if provider == "openai":
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(message)
        text = message["content"]
        return text, text.startswith('{"error"')
    if provider == "openai-responses":
        TypeAdapter(FunctionCallOutput).validate_python(message)
        text = message["output"]
        return text, text.startswith('{"error"')
    if provider == "anthropic":
        TypeAdapter(ToolResultBlockParam).validate_python(message)
        return " ".join(b.get("text", "") for b in message["content"]), message["is_error"]
    genai_types.Part.model_validate(message)
    response = message["functionResponse"]["response"]
    return json.dumps(response), "error" in response


def _assistant_turn(provider: Provider, calls: list[Any]) -> list[dict[str, Any]]:
    """The history entries of a model turn that made ``calls`` (as each SDK dumps them)."""
    dumped = [call.model_dump(exclude_none=True, mode="json") for call in calls]
    if provider == "openai":
        return [{"role": "assistant", "content": None, "tool_calls": dumped}]
    if provider == "openai-responses":
        return dumped
    if provider == "anthropic":
        return [{"role": "assistant", "content": dumped}]
    return [{"role": "model", "parts": dumped}]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_one_turns_tool_calls_make_a_history_each_providers_api_takes(
    pool: WorkerPool, provider: Provider
) -> None:
    """The README's loop: a model turn with two calls, answered by run_tool_calls.
    Anthropic takes every tool_result of a turn in the one user message after it."""
    calls = [
        _call(provider, "ext__get-sum", {"a": 2, "b": 40}, "call_1"),
        _call(provider, "ext__echo", {"text": "hi"}, "call_2"),
    ]
    user: dict[str, Any] = (
        {"role": "user", "parts": [{"text": "add"}]}
        if provider == "gemini"
        else {"role": "user", "content": "add"}
    )
    answers = await pool.run_tool_calls(calls, provider=provider)
    history = [user, *_assistant_turn(provider, calls), *answers]
    validate_turns(provider, history)
    results = answers
    if provider == "anthropic":
        (turn,) = answers
        results = turn["content"]
    elif provider == "gemini":
        (turn,) = answers
        results = turn["parts"]
    texts = [_result(provider, result)[0] for result in results]
    assert "42" in texts[0] and "hi" in texts[1]
    assert clean_history(history, provider=provider) == history  # nothing unpaired


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_call_round_trips_for_every_provider(
    pool: WorkerPool, provider: Provider
) -> None:
    name = "ext__get-sum"
    message = await pool.run_tool_call(_call(provider, name, {"a": 2, "b": 40}), provider=provider)
    text, error = _result(provider, message)
    assert not error and "42" in text
    # As plain dicts too (what a JSON history holds).
    as_dict = _call(provider, name, {"a": 1, "b": 1})
    dumped = as_dict.model_dump(exclude_none=True) if hasattr(as_dict, "model_dump") else as_dict
    again = await pool.run_tool_call(dumped, provider=provider)
    assert "2" in _result(provider, again)[0]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_shortened_name_maps_back_to_its_tool(pool: WorkerPool, provider: Provider) -> None:
    declared = [
        d.get("name") or d["function"]["name"] for d in await pool.tool_definitions(provider)
    ]
    short = next(n for n in declared if n.startswith("odd-names__a_tool_name"))
    message = await pool.run_tool_call(_call(provider, short, {"n": 41}), provider=provider)
    text, error = _result(provider, message)
    assert not error and "42" in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_two_names_that_read_alike_to_a_provider_get_two_names_and_map_back_apart(
    pool: WorkerPool, provider: Provider
) -> None:
    # Without dots (OpenAI, Anthropic) `dotted.name` reads as `dotted_name`: one of the
    # two must be renamed, or the way back from the provider's name loses a tool.
    declared = {
        d.get("name") or d["function"]["name"] for d in await pool.tool_definitions(provider)
    }
    ours = sorted(n for n in declared if n.startswith("odd-names__dotted"))
    assert len(ours) == 2, ours
    answers = set()
    for name in ours:
        message = await pool.run_tool_call(_call(provider, name, {}), provider=provider)
        text, error = _result(provider, message)
        assert not error, text
        answers.add(text)
    assert len(answers) == 2 and any("the underscored tool" in text for text in answers)
    assert any("none" in text for text in answers)


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
async def test_arguments_that_are_not_json_become_an_error_the_model_reads(
    pool: WorkerPool, provider: Provider
) -> None:
    message = await pool.run_tool_call(
        _call(provider, "ext__get-sum", '{"a": 1, "b":'), provider=provider
    )
    text, error = _result(provider, message)
    assert error and "not valid JSON" in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_unknown_tools_bad_arguments_and_tool_errors_are_messages_not_exceptions(
    pool: WorkerPool, provider: Provider
) -> None:
    unknown = await pool.run_tool_call(_call(provider, "ext__nope", {}), provider=provider)
    text, error = _result(provider, unknown)
    assert error and "ext__nope" in text
    bad = await pool.run_tool_call(_call(provider, "ext__get-sum", {"a": "x"}), provider=provider)
    assert _result(provider, bad)[1]
    failed = await pool.run_tool_call(
        _call(provider, "ext__fail", {"message": "m"}), provider=provider
    )
    assert _result(provider, failed)[1]


async def test_an_unknown_provider_is_an_error(pool: WorkerPool) -> None:
    with pytest.raises(UnknownProviderError):
        await pool.tool_definitions("cohere")  # type: ignore[arg-type]


def test_gemini_schemas_inline_refs_and_turn_null_unions_into_nullable() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "properties": {
            "item": {"$ref": "#/$defs/Item"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "kind": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["item"],
        "additionalProperties": False,
    }
    reduced = gemini_schema(schema)
    genai_types.Schema.model_validate(reduced)
    assert reduced["properties"]["item"] == {
        "type": "OBJECT",
        "properties": {"n": {"type": "INTEGER"}},
    }
    assert reduced["properties"]["maybe"] == {"type": "STRING", "nullable": True}
    assert reduced["properties"]["kind"]["enum"] == ["a", "b"]
    assert reduced["properties"]["kind"]["nullable"] is True
    assert "additionalProperties" not in reduced and "$schema" not in reduced


# sequential-thinking as earlier releases of the npm server listed it (zod-to-json-schema
# reuses a property's schema through a $ref into #/properties).
SEQUENTIAL_THINKING: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "thought": {"type": "string", "description": "Your current thinking step"},
        "nextThoughtNeeded": {"type": "boolean", "description": "Whether another step is needed"},
        "thoughtNumber": {"type": "integer", "minimum": 1},
        "isRevision": {
            "$ref": "#/properties/nextThoughtNeeded",
            "description": "Whether this revises previous thinking",
        },
        "needsMoreThoughts": {
            "$ref": "#/properties/nextThoughtNeeded",
            "description": "If more thoughts are needed",
        },
        "revisesThought": {"$ref": "#/properties/thoughtNumber"},
        "branch": {"$ref": "#/definitions/Branch"},
        "escaped": {"$ref": "#/definitions/a~1b%20c"},
        "tree": {"$ref": "#"},
    },
    "definitions": {
        "Branch": {"type": "object", "properties": {"id": {"type": "string"}}},
        "a/b c": {"type": "number"},
    },
    "required": ["thought", "nextThoughtNeeded", "thoughtNumber"],
}


def _untyped(schema: dict[str, Any], path: str = "") -> list[str]:
    """The paths of the reduced schema's properties and items that lost their type."""
    lost = [] if "type" in schema or "anyOf" in schema else [path or "(root)"]
    for name, value in schema.get("properties", {}).items():
        lost += _untyped(value, f"{path}.{name}")
    if "items" in schema:
        lost += _untyped(schema["items"], f"{path}[]")
    return lost


def test_gemini_resolves_every_local_ref_and_no_property_loses_its_type() -> None:
    reduced = gemini_schema(SEQUENTIAL_THINKING)
    genai_types.Schema.model_validate(reduced)
    properties = reduced["properties"]
    assert properties["isRevision"] == {
        "type": "BOOLEAN",
        "description": "Whether this revises previous thinking",
    }
    assert properties["needsMoreThoughts"]["type"] == "BOOLEAN"
    assert properties["revisesThought"] == {"type": "INTEGER", "minimum": 1}
    assert properties["branch"]["properties"] == {"id": {"type": "STRING"}}
    assert properties["escaped"] == {"type": "NUMBER"}
    # The root inlined once, and inside it only its type: a recursive type stays small.
    assert properties["tree"]["properties"]["tree"] == {"type": "OBJECT"}
    assert _untyped(reduced) == []


def test_a_recursive_type_with_two_recursive_fields_stays_small() -> None:
    node = {
        "type": "object",
        "properties": {
            "left": {"$ref": "#/$defs/Node"},
            "right": {"$ref": "#/$defs/Node"},
            "value": {"type": "integer"},
        },
    }
    schema = {"type": "object", "$defs": {"Node": node}, "properties": {"root": node}}
    reduced = gemini_schema(schema)
    assert len(json.dumps(reduced)) < 1000
    assert reduced["properties"]["root"]["properties"]["left"]["properties"]["left"] == {
        "type": "OBJECT"
    }


def test_a_ref_that_points_nowhere_keeps_what_the_property_says() -> None:
    reduced = gemini_schema(
        {
            "type": "object",
            "properties": {
                "remote": {"$ref": "https://example.com/schema.json", "type": "string"},
                "missing": {"$ref": "#/definitions/Nope", "type": "integer"},
            },
        }
    )
    assert reduced["properties"] == {"remote": {"type": "STRING"}, "missing": {"type": "INTEGER"}}


def test_the_agent_loop_guide_is_valid_python_using_these_names() -> None:
    guide = ROOT / "docs" / "guides" / "agent-loop.md"
    loops = [b for b in blocks(guide, "python") if "run_tool_call" in b]
    assert len(loops) == 1
    code = loops[0]
    compile(code, str(guide), "exec")
    assert "tool_definitions(" in code and 'provider="openai"' in code
    body = code[code.index("async def agent") :].strip().splitlines()
    assert len(body) <= 15  # the loop in 15 lines
