"""`tool_result_message`: every payload is valid for the provider's official SDK types.

No network: OpenAI and Anthropic params are TypedDicts validated with pydantic's
`TypeAdapter` (lazy iterables consumed, and the validated value must equal the payload,
so an unknown key that validation would drop fails too); Gemini Parts are validated with
`google.genai.types.Part`, which forbids unknown fields.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from anthropic.types import ToolResultBlockParam
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionToolMessageParam
from openai.types.responses import ResponseInputItemParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

import nativemcp.proxy.llm as llm
from nativemcp.protocol import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    NativeMCPError,
    NativeMCPResponse,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolError,
    decode_response,
    empty_response,
    error_response,
    structured_response,
    text_resource_response,
    text_response,
    tool_error_response,
)
from nativemcp.proxy.llm import (
    EMPTY_RESULT_TEXT,
    PROVIDERS,
    Provider,
    UnknownProviderError,
    tool_result_message,
)

SEED_ERROR = (
    "Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool manipulateCube: [] "
    "(Code: -32603)"
)
# The PNG signature and padding: providers get base64 data, nothing decodes it here.
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(62)).decode()
PNG_SIZE = 70
HTML = "<!doctype html><html><body><button onclick='go()'>Run</button></body></html>"


class WorkerGone(Exception):
    """Stands in for a runtime error with a ``code`` attribute (not imported: any works)."""

    code = -32000


def _result(*content: Any, structured: dict[str, Any] | None = None) -> NativeMCPResponse[Any]:
    return NativeMCPResponse(
        id=1, result=CallToolResult(content=list(content), structured_content=structured)
    )


CASES: dict[str, NativeMCPResponse[Any] | Exception] = {
    "json_object_text": text_response('{"files": ["보고서.md", "b.txt"], "total": 2}'),
    "json_array_text": text_response('[{"name": "a"}, {"name": "b"}]'),
    "json_per_item_blocks": _result(TextContent(text='{"n": 1}'), TextContent(text='{"n": 2}')),
    "plain_text": text_response("파일 2개를 찾았습니다:\n1. 보고서.md (2026-11-02)\n2. b.txt"),
    "brace_text_not_json": text_response("{draft} notes: see below"),
    "nan_is_not_json": text_response("[NaN, 1]"),
    "rich_text_with_structured": structured_response("1 file: report.md", {"total": 1}),
    "mcp_error_text": tool_error_response(SEED_ERROR),
    "is_error_with_structured": tool_error_response(
        "File not found: a.md", structured_content={"code": 404, "path": "a.md"}
    ),
    "jsonrpc_error": error_response(
        "Invalid arguments", code=INVALID_PARAMS, data={"field": "store_id"}
    ),
    "jsonrpc_unknown_tool": error_response("Unknown tool: nope", code=METHOD_NOT_FOUND),
    "tool_error_exception": ToolError("저장소가 없습니다", code=-32602, data={"store_id": "s1"}),
    "timeout_exception": TimeoutError("call to list_content timed out after 5.0s"),
    "exception_with_code": WorkerGone("worker exited with status -9"),
    "exception_without_message": RuntimeError(),
    "image_png": _result(
        TextContent(text="chart:"), ImageContent(data=PNG_B64, mime_type="image/png")
    ),
    "image_only": _result(ImageContent(data=PNG_B64, mime_type="image/png")),
    "image_svg": _result(ImageContent(data="PHN2Zy8+", mime_type="image/svg+xml")),
    "audio": _result(
        TextContent(text="recording"), AudioContent(data="UklGRg==", mime_type="audio/wav")
    ),
    "ui_html_resource": _result(
        TextContent(text="Opened the editor."),
        EmbeddedResource(
            resource=ResourceContents(uri="ui://editor/1", mime_type="text/html", text=HTML)
        ),
    ),
    "ui_mcp_app_profile": _result(
        EmbeddedResource(
            resource=ResourceContents(
                uri="https://x.test/w", mime_type="text/html;profile=mcp-app", text=HTML
            )
        )
    ),
    "ui_blob": _result(
        EmbeddedResource(resource=ResourceContents(uri="ui://w/2", blob="PGh0bWw+"))
    ),
    "ui_link": _result(ResourceLink(uri="ui://w/3", name="widget", mime_type="text/html")),
    "text_resource": text_resource_response(
        "Exported 1 file.",
        ResourceContents(
            uri="file:///exports/notes.md", mime_type="text/markdown", text="# Notes\n- a"
        ),
    ),
    "blob_resource": _result(
        EmbeddedResource(
            resource=ResourceContents(
                uri="file:///a.pdf", mime_type="application/pdf", blob="JVBERg=="
            )
        )
    ),
    "resource_link": _result(
        ResourceLink(uri="file:///b.txt", name="b.txt", mime_type="text/plain", size=12)
    ),
    "structured_only": _result(structured={"contents": [{"filename": "a.md"}], "total": 1}),
    "structured_with_image": _result(
        ImageContent(data=PNG_B64, mime_type="image/png"), structured={"width": 1}
    ),
    "empty": empty_response(id=1),
    "whitespace_text": text_response("  \n"),
    "unknown_block": decode_response(
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "hologram", "x": 1}]}}
    ),
}

ERROR_CASES = {
    "mcp_error_text",
    "is_error_with_structured",
    "jsonrpc_error",
    "jsonrpc_unknown_tool",
    "tool_error_exception",
    "timeout_exception",
    "exception_with_code",
    "exception_without_message",
}

_TOOL_MESSAGE = TypeAdapter(ChatCompletionToolMessageParam)
_FUNCTION_CALL_OUTPUT = TypeAdapter(FunctionCallOutput)
_INPUT_ITEM = TypeAdapter(ResponseInputItemParam)
_TOOL_RESULT = TypeAdapter(ToolResultBlockParam)


def _materialise(value: Any) -> Any:
    """Plain containers, consuming pydantic's lazy iterators (that is when they validate)."""
    if isinstance(value, Mapping):
        return {key: _materialise(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [_materialise(item) for item in value]
    return value


def _validate_typed_dict(adapter: TypeAdapter[Any], payload: dict[str, Any]) -> None:
    validated = _materialise(adapter.validate_python(payload))
    # Equality catches keys validation would silently drop, and any coercion.
    assert validated == payload


def validate_for_sdk(provider: Provider, payload: dict[str, Any], tool_name: str) -> None:
    """Fail unless ``payload`` is valid for ``provider``'s official SDK type."""
    assert json.loads(json.dumps(payload, allow_nan=False)) == payload
    if provider == "openai":
        _validate_typed_dict(_TOOL_MESSAGE, payload)
    elif provider == "openai-responses":
        _validate_typed_dict(_FUNCTION_CALL_OUTPUT, payload)
        _validate_typed_dict(_INPUT_ITEM, payload)
    elif provider == "anthropic":
        _validate_typed_dict(_TOOL_RESULT, payload)
    else:
        part = genai_types.Part.model_validate(payload)
        assert part.function_response is not None
        assert part.function_response.name == tool_name
        assert isinstance(part.function_response.response, dict)
        dumped = part.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert dumped == payload


def message(case: str, provider: Provider, call_id: str = "call_1") -> dict[str, Any]:
    return tool_result_message(
        CASES[case], provider=provider, call_id=call_id, tool_name="list_content"
    )


def text_of(payload: dict[str, Any]) -> str:
    """Everything a text-reading model sees in the payload (Gemini: the response as JSON)."""
    if "content" in payload and isinstance(payload["content"], str):
        return payload["content"]
    if "output" in payload:
        return str(payload["output"])
    if payload.get("type") == "tool_result":
        return "\n".join(block.get("text", "") for block in payload["content"])
    return json.dumps(payload["functionResponse"]["response"], ensure_ascii=False)


def gemini_response(case: str) -> Any:
    return message(case, "gemini")["functionResponse"]["response"]


def error_object(case: str, provider: Provider) -> Any:
    if provider == "gemini":
        return gemini_response(case)["error"]
    return json.loads(text_of(message(case, provider)))["error"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_payload_validates_against_the_provider_sdk_types(
    case: str, provider: Provider
) -> None:
    validate_for_sdk(provider, message(case, provider), "list_content")


def test_no_warning_is_logged_for_any_kind_of_result(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for case in CASES:
        for provider in PROVIDERS:
            message(case, provider)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any(r.name == "nativemcp.proxy.llm" for r in caplog.records)


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
def test_json_text_reaches_string_providers_exactly_as_written(provider: Provider) -> None:
    original = '{"files": ["보고서.md", "b.txt"], "total": 2}'
    assert text_of(message("json_object_text", provider)) == original


def test_a_json_object_is_the_gemini_response_itself() -> None:
    assert gemini_response("json_object_text") == {"files": ["보고서.md", "b.txt"], "total": 2}


def test_json_that_is_not_an_object_is_wrapped_for_gemini_as_a_value_not_a_string() -> None:
    assert gemini_response("json_array_text") == {"output": [{"name": "a"}, {"name": "b"}]}
    assert gemini_response("json_per_item_blocks") == {"output": [{"n": 1}, {"n": 2}]}


def test_text_blocks_are_joined_in_order() -> None:
    assert text_of(message("json_per_item_blocks", "openai")) == '{"n": 1}\n{"n": 2}'


def test_rich_text_wins_over_structured_content() -> None:
    assert text_of(message("rich_text_with_structured", "openai")) == "1 file: report.md"
    assert gemini_response("rich_text_with_structured") == {"output": "1 file: report.md"}


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
def test_plain_text_stays_text(provider: Provider) -> None:
    expected = "파일 2개를 찾았습니다:\n1. 보고서.md (2026-11-02)\n2. b.txt"
    assert text_of(message("plain_text", provider)) == expected


@pytest.mark.parametrize("case", ["plain_text", "brace_text_not_json", "nan_is_not_json"])
def test_text_that_is_not_json_is_wrapped_as_output_for_gemini(case: str) -> None:
    response = gemini_response(case)
    assert set(response) == {"output"}
    assert isinstance(response["output"], str)


def test_anthropic_flags_errors_only() -> None:
    for case in CASES:
        assert message(case, "anthropic")["is_error"] is (case in ERROR_CASES), case


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_mcp_error_text_is_an_error_with_the_code_of_the_failure(provider: Provider) -> None:
    # The first `Mcp error` code wins over the wrapper's trailing (Code: -32603).
    assert error_object("mcp_error_text", provider) == {
        "code": -32602,
        "message": "Invalid arguments for tool manipulateCube: []",
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_is_error_result_keeps_its_structured_content(provider: Provider) -> None:
    assert error_object("is_error_with_structured", provider) == {
        "code": 404,
        "message": "File not found: a.md",
        "data": {"code": 404, "path": "a.md"},
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_jsonrpc_error_keeps_code_message_and_data(provider: Provider) -> None:
    assert error_object("jsonrpc_error", provider) == {
        "code": INVALID_PARAMS,
        "message": "Invalid arguments",
        "data": {"field": "store_id"},
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_raised_tool_error_keeps_code_message_and_data(provider: Provider) -> None:
    assert error_object("tool_error_exception", provider) == {
        "code": -32602,
        "message": "저장소가 없습니다",
        "data": {"store_id": "s1"},
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_other_exception_says_its_class_and_message(provider: Provider) -> None:
    assert error_object("timeout_exception", provider) == {
        "type": "TimeoutError",
        "message": "call to list_content timed out after 5.0s",
    }
    assert error_object("exception_with_code", provider) == {
        "type": "WorkerGone",
        "code": -32000,
        "message": "worker exited with status -9",
    }
    assert error_object("exception_without_message", provider) == {
        "type": "RuntimeError",
        "message": "RuntimeError",
    }


def test_korean_error_text_is_not_escaped_for_the_model() -> None:
    assert "저장소가 없습니다" in text_of(message("tool_error_exception", "openai"))


def test_images_reach_anthropic_as_image_blocks() -> None:
    payload = message("image_png", "anthropic")
    assert payload["content"] == [
        {"type": "text", "text": "chart:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "gemini"])
def test_images_become_a_short_note_with_mime_type_and_size_elsewhere(provider: Provider) -> None:
    text = text_of(message("image_png", provider))
    assert f"[image omitted: image/png, {PNG_SIZE} bytes]" in text
    assert PNG_B64 not in text


def test_an_image_type_anthropic_cannot_take_becomes_a_note_there_too() -> None:
    assert message("image_svg", "anthropic")["content"] == [
        {"type": "text", "text": "[image omitted: image/svg+xml, 6 bytes]"}
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_audio_becomes_a_short_note(provider: Provider) -> None:
    text = text_of(message("audio", provider))
    assert "recording" in text
    assert "[audio omitted: audio/wav, 4 bytes]" in text
    assert "UklGRg==" not in text


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", ["ui_html_resource", "ui_mcp_app_profile", "ui_blob", "ui_link"])
def test_ui_resources_reach_the_model_as_a_one_line_summary_never_as_html(
    case: str, provider: Provider
) -> None:
    payload = message(case, provider)
    dumped = json.dumps(payload, ensure_ascii=False)
    assert "<html" not in dumped and "<button" not in dumped and "PGh0bWw+" not in dumped
    summaries = [line for line in text_of(payload).splitlines() if "UI resource" in line]
    assert len(summaries) == 1
    assert "interactive view shown to the user" in summaries[0]


def test_the_ui_summary_names_the_resource_its_type_and_size() -> None:
    text = text_of(message("ui_html_resource", "openai"))
    assert text == (
        f"Opened the editor.\n[UI resource ui://editor/1 (text/html, {len(HTML)} bytes): "
        "an interactive view shown to the user, not included here]"
    )


def test_text_resources_reach_the_model_with_a_header() -> None:
    assert text_of(message("text_resource", "openai")) == (
        "Exported 1 file.\n"
        "[resource file:///exports/notes.md (text/markdown, 11 bytes)]\n"
        "# Notes\n- a"
    )


def test_binary_resources_and_links_become_one_line_notes() -> None:
    assert text_of(message("blob_resource", "openai")) == (
        "[resource omitted: file:///a.pdf (application/pdf, 4 bytes)]"
    )
    assert text_of(message("resource_link", "openai")) == (
        "[resource link: b.txt <file:///b.txt> (text/plain, 12 bytes)]"
    )
    assert (
        text_of(message("unknown_block", "openai")) == "[content block of type 'hologram' omitted]"
    )


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
def test_structured_content_is_offered_as_json_when_there_is_no_text(provider: Provider) -> None:
    text = text_of(message("structured_only", provider))
    assert json.loads(text) == {"contents": [{"filename": "a.md"}], "total": 1}


def test_structured_content_is_the_gemini_response_when_there_is_no_text() -> None:
    assert gemini_response("structured_only") == {"contents": [{"filename": "a.md"}], "total": 1}
    assert gemini_response("structured_with_image") == {
        "output": {"width": 1},
        "attachments": [f"[image omitted: image/png, {PNG_SIZE} bytes]"],
    }


@pytest.mark.parametrize("case", ["empty", "whitespace_text"])
def test_an_empty_result_says_so_and_is_not_an_error(case: str) -> None:
    for provider in ("openai", "openai-responses", "anthropic"):
        assert text_of(message(case, provider)) == EMPTY_RESULT_TEXT
    assert gemini_response(case) == {"output": EMPTY_RESULT_TEXT}
    assert message(case, "anthropic")["is_error"] is False


def test_each_provider_gets_its_own_ids_and_names() -> None:
    assert message("plain_text", "openai")["tool_call_id"] == "call_1"
    assert message("plain_text", "openai")["role"] == "tool"
    assert message("plain_text", "openai-responses")["call_id"] == "call_1"
    assert message("plain_text", "anthropic")["tool_use_id"] == "call_1"
    function_response = message("plain_text", "gemini")["functionResponse"]
    # The seed put the call id where Gemini wants the function's name.
    assert function_response["name"] == "list_content"
    assert function_response["id"] == "call_1"
    assert "id" not in message("plain_text", "gemini", call_id="")["functionResponse"]


@pytest.mark.parametrize("provider", ["OpenAI", "claude", "", "gemini ", None, 3])
def test_an_unknown_provider_is_a_clear_error_listing_the_valid_ones(provider: Any) -> None:
    with pytest.raises(UnknownProviderError) as info:
        tool_result_message(text_response("x"), provider=provider, call_id="c", tool_name="t")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, NativeMCPError)
    for name in PROVIDERS:
        assert repr(name) in str(info.value)


@pytest.mark.parametrize("outcome", ["just text", {"result": {}}, None])
def test_anything_but_a_response_or_an_exception_is_a_type_error(outcome: Any) -> None:
    with pytest.raises(TypeError):
        tool_result_message(outcome, provider="openai", call_id="c", tool_name="t")


def test_a_cancellation_is_never_turned_into_a_message() -> None:
    with pytest.raises(TypeError):
        tool_result_message(
            asyncio.CancelledError(),  # type: ignore[arg-type]
            provider="openai",
            call_id="c",
            tool_name="t",
        )


def test_the_input_response_is_not_changed() -> None:
    response = CASES["image_png"]
    before = repr(response)
    for provider in PROVIDERS:
        message("image_png", provider)
    assert repr(response) == before


def test_llm_module_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(llm).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    public.discard("annotations")
    assert set(llm.__all__) == public
    assert len(llm.__all__) == len(set(llm.__all__))


def test_the_public_functions_document_what_they_raise() -> None:
    functions: list[Callable[..., Any]] = [
        llm.tool_result_message,
        llm.clean_history,
        llm.response_stats,
    ]
    for function in functions:
        assert "Raises:" in (function.__doc__ or ""), function.__name__
