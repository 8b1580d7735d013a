"""Conversion to and from the official SDK's types, and results from a real SDK server."""

from __future__ import annotations

import datetime as dt
from typing import Any

import mcp_types
import msgspec
import pydantic
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import (
    STRUCTURED_RESULT_META_KEY,
    Annotations,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ErrorObject,
    Icon,
    ImageContent,
    JSONRPCErrorResponse,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    NativeMCPResponse,
    ProtocolError,
    ResourceContents,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolError,
    ToolExecution,
    UnknownContent,
    decode,
    encode,
    error_response,
    from_sdk,
    response_from_sdk,
    response_to_sdk,
    structured_response,
    text_response,
    to_sdk,
    unwrap,
)

pytestmark = pytest.mark.anyio_backends("asyncio")

META = {"io.example/trace": {"id": "t-1", "hops": [1, 2]}, "note": None}
ANNOTATIONS = Annotations(
    audience=["user", "assistant"], priority=0.5, last_modified="2026-01-05T09:30:00Z"
)

ICON = Icon(src="https://example.com/i.png", mime_type="image/png", sizes=["48x48"], theme="dark")
TEXT_RESOURCE = ResourceContents(
    uri="file:///a.md", mime_type="text/markdown", text="# a", meta=META
)
BLOB_RESOURCE = ResourceContents(uri="file:///a.bin", blob="AAE=", meta=META)

EVERY_TYPE: list[tuple[str, Any, type[pydantic.BaseModel]]] = [
    ("text", TextContent(text="hi", annotations=ANNOTATIONS, meta=META), mcp_types.TextContent),
    (
        "image",
        ImageContent(data="AAE=", mime_type="image/png", annotations=ANNOTATIONS, meta=META),
        mcp_types.ImageContent,
    ),
    ("audio", AudioContent(data="AAE=", mime_type="audio/wav", meta=META), mcp_types.AudioContent),
    (
        "resource link",
        ResourceLink(
            uri="file:///a.md",
            name="a.md",
            title="A",
            description="d",
            mime_type="text/markdown",
            size=3,
            icons=[ICON],
            annotations=ANNOTATIONS,
            meta=META,
        ),
        mcp_types.ResourceLink,
    ),
    (
        "embedded text",
        EmbeddedResource(resource=TEXT_RESOURCE, annotations=ANNOTATIONS, meta=META),
        mcp_types.EmbeddedResource,
    ),
    (
        "embedded blob",
        EmbeddedResource(resource=BLOB_RESOURCE, meta=META),
        mcp_types.EmbeddedResource,
    ),
    ("text resource contents", TEXT_RESOURCE, mcp_types.TextResourceContents),
    ("blob resource contents", BLOB_RESOURCE, mcp_types.BlobResourceContents),
    ("annotations", ANNOTATIONS, mcp_types.Annotations),
    ("icon", ICON, mcp_types.Icon),
    (
        "call tool result",
        CallToolResult(
            content=[TextContent(text="t", meta=META), EmbeddedResource(resource=TEXT_RESOURCE)],
            structured_content={"a": [1, None]},
            is_error=True,
            meta=META,
        ),
        mcp_types.CallToolResult,
    ),
    (
        "tool",
        Tool(
            name="list_content",
            title="List",
            description="Lists.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            output_schema={"type": "object"},
            execution=ToolExecution(task_support="optional"),
            icons=[ICON],
            annotations=ToolAnnotations(
                title="L",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
            meta=META,
        ),
        mcp_types.Tool,
    ),
    ("tool annotations", ToolAnnotations(read_only_hint=True), mcp_types.ToolAnnotations),
    ("tool execution", ToolExecution(task_support="required"), mcp_types.ToolExecution),
    (
        "error data",
        ErrorObject(code=-32602, message="bad", data={"field": "n"}),
        mcp_types.ErrorData,
    ),
    (
        "request",
        JSONRPCRequest(id=1, method="tools/call", params={"name": "x", "_meta": META}),
        mcp_types.JSONRPCRequest,
    ),
    (
        "notification",
        JSONRPCNotification(method="notifications/progress", params={"_meta": META}),
        mcp_types.JSONRPCNotification,
    ),
    (
        "response",
        JSONRPCResponse(id="r", result={"_meta": META, "tools": []}),
        mcp_types.JSONRPCResponse,
    ),
    (
        "error response",
        JSONRPCErrorResponse(id=None, error=ErrorObject(code=-32700, message="parse")),
        mcp_types.JSONRPCError,
    ),
]
IDS = [t[0] for t in EVERY_TYPE]


@pytest.mark.parametrize(("ours", "sdk_type"), [t[1:] for t in EVERY_TYPE], ids=IDS)
def test_every_type_converts_to_the_sdk_and_back_unchanged(
    ours: Any, sdk_type: type[pydantic.BaseModel]
) -> None:
    model = to_sdk(ours)
    assert type(model) is sdk_type
    assert from_sdk(model) == ours


@pytest.mark.parametrize(("ours", "sdk_type"), [t[1:] for t in EVERY_TYPE], ids=IDS)
def test_every_type_decodes_on_the_other_side_of_the_wire(
    ours: Any, sdk_type: type[pydantic.BaseModel]
) -> None:
    # Ours → SDK: our JSON validates as the SDK model, field for field.
    model = sdk_type.model_validate_json(encode(ours))
    assert model == to_sdk(ours)
    # SDK → ours: the SDK's JSON (as its transports write it) decodes as our type.
    assert decode(model.model_dump_json(by_alias=True, exclude_unset=True), type(ours)) == ours


def test_meta_survives_conversion_on_blocks_results_and_tools() -> None:
    for ours, _ in [(t[1], t[2]) for t in EVERY_TYPE if getattr(t[1], "meta", None)]:
        dumped = to_sdk(ours).model_dump(by_alias=True)
        assert dumped["_meta"] == META


def test_types_without_an_sdk_counterpart_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="no official SDK type for NativeMCPResponse"):
        to_sdk(text_response("x"))
    with pytest.raises(ProtocolError, match="SDK has no type for content block 'video'"):
        to_sdk(CallToolResult(content=[UnknownContent(data={"type": "video"})]))
    with pytest.raises(ProtocolError, match="no nativemcp type for SDK type"):
        from_sdk(mcp_types.ListToolsResult(tools=[]))
    with pytest.raises(ProtocolError, match="no nativemcp type"):
        from_sdk(TextContent(text="ours, not the SDK's"))  # type: ignore[arg-type]


def test_values_the_sdk_rejects_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="the SDK rejects this Annotations"):
        to_sdk(Annotations(priority=5.0))


class Listing(msgspec.Struct):
    names: list[str]
    added: dt.date


def test_a_structured_result_equal_to_the_content_travels_once() -> None:
    model = response_to_sdk(structured_response("one file", {"names": ["a"]}))
    assert model.structured_content == {"names": ["a"]}
    assert model.meta is None


@pytest.mark.parametrize(
    ("value", "type_"),
    [
        ([Listing(["a"], dt.date(2026, 1, 5))], list[Listing]),
        (42, int),
        ("text", str),
    ],
)
def test_a_structured_result_that_differs_travels_in_meta_and_comes_back(
    value: Any, type_: Any
) -> None:
    response = structured_response("rich", value, id=9, meta={"k": 1})
    model = response_to_sdk(response)
    assert model.meta is not None
    assert model.meta["k"] == 1
    assert STRUCTURED_RESULT_META_KEY in model.meta
    back = response_from_sdk(
        mcp_types.CallToolResult.model_validate_json(model.model_dump_json(by_alias=True)), id=9
    )
    assert back.result is not None and back.result.meta == {"k": 1}
    assert back.structured_result == msgspec.to_builtins(value)
    assert unwrap(back, type_) == value


def test_an_error_response_has_no_call_tool_result_form() -> None:
    with pytest.raises(ProtocolError, match="no CallToolResult form"):
        response_to_sdk(error_response("boom"))


def test_sdk_errors_become_error_responses() -> None:
    data = mcp_types.ErrorData(code=-32602, message="bad args", data={"field": "n"})
    response = response_from_sdk(data, id=3)
    assert response == NativeMCPResponse(
        id=3, error=ErrorObject(code=-32602, message="bad args", data={"field": "n"})
    )
    jsonrpc = mcp_types.JSONRPCError(jsonrpc="2.0", id=5, error=data)
    assert response_from_sdk(jsonrpc).id == 5


def test_response_from_sdk_refuses_other_things() -> None:
    with pytest.raises(ProtocolError, match="expected a CallToolResult"):
        response_from_sdk(mcp_types.TextContent(type="text", text="x"))  # type: ignore[arg-type]


# --- a real official SDK server, in memory -------------------------------------------------


class Item(pydantic.BaseModel):
    name: str
    n: int
    added: dt.date


class ItemStruct(msgspec.Struct):
    name: str
    n: int
    added: dt.date


A = Item(name="a", n=1, added=dt.date(2026, 1, 5))
B = Item(name="b", n=2, added=dt.date(2026, 1, 6))
A_STRUCT = ItemStruct("a", 1, dt.date(2026, 1, 5))
B_STRUCT = ItemStruct("b", 2, dt.date(2026, 1, 6))


def _sdk_app() -> MCPServer:
    app = MCPServer("sdk-under-test")

    @app.tool()
    def model_tool() -> Item:
        return A

    @app.tool()
    def scalar_tool() -> int:
        return 42

    @app.tool()
    def list_tool() -> list[Item]:
        return [A, B]

    @app.tool()
    def one_item_list_tool() -> list[Item]:
        return [A]

    @app.tool()
    def empty_list_tool() -> list[Item]:
        return []

    @app.tool()
    def text_tool() -> str:
        return "hello"

    @app.tool(structured_output=False)
    def unstructured_list_tool() -> list[Item]:
        return [A, B]

    @app.tool()
    def failing_tool() -> str:
        raise SDKToolError("Mcp error: -32602: angle is required")

    @app.tool()
    def crashing_tool() -> str:
        raise ValueError("boom")

    @app.tool()
    def protocol_error_tool() -> str:
        raise MCPError(-32001, "took too long", {"after_s": 5})

    return app


async def _call(name: str) -> NativeMCPResponse[Any]:
    async with Client(_sdk_app()) as client:
        result = await client.call_tool(name, {})
    # What a bridge receives: JSON on the wire, read by our decoder.
    return response_from_sdk(
        mcp_types.CallToolResult.model_validate_json(result.model_dump_json(by_alias=True))
    )


@pytest.mark.anyio
async def test_a_real_sdk_model_result_unwraps_to_the_model_type() -> None:
    response = await _call("model_tool")
    assert unwrap(response, ItemStruct) == A_STRUCT
    assert unwrap(encode(response), ItemStruct) == A_STRUCT


@pytest.mark.anyio
async def test_a_real_sdk_scalar_result_unwraps_from_its_result_wrapper() -> None:
    response = await _call("scalar_tool")
    assert unwrap(response, int) == 42
    assert unwrap(response) == 42
    assert unwrap(encode(response, "msgpack"), int, format="msgpack") == 42


@pytest.mark.anyio
async def test_a_real_sdk_list_result_unwraps_to_a_typed_list() -> None:
    response = await _call("list_tool")
    assert response.result is not None and len(response.result.content) == 2
    assert unwrap(response, list[ItemStruct]) == [A_STRUCT, B_STRUCT]
    assert unwrap(encode(response), list[ItemStruct]) == [A_STRUCT, B_STRUCT]
    assert unwrap(response) == [
        {"name": "a", "n": 1, "added": "2026-01-05"},
        {"name": "b", "n": 2, "added": "2026-01-06"},
    ]


@pytest.mark.anyio
async def test_real_sdk_one_item_and_empty_lists_unwrap_as_lists() -> None:
    assert unwrap(await _call("one_item_list_tool"), list[ItemStruct]) == [A_STRUCT]
    empty = await _call("empty_list_tool")
    assert unwrap(empty, list[ItemStruct]) == []
    assert unwrap(empty) == []


@pytest.mark.anyio
async def test_a_real_sdk_list_without_structured_content_unwraps_from_its_mirror_text() -> None:
    response = await _call("unstructured_list_tool")
    assert response.result is not None and response.result.structured_content is None
    assert unwrap(response, list[ItemStruct]) == [A_STRUCT, B_STRUCT]


@pytest.mark.anyio
async def test_a_real_sdk_text_result_unwraps_as_str() -> None:
    response = await _call("text_tool")
    assert unwrap(response, str) == "hello"
    assert unwrap(response) == "hello"


@pytest.mark.anyio
async def test_a_real_sdk_tool_error_raises_tool_error_with_its_code() -> None:
    response = await _call("failing_tool")
    with pytest.raises(ToolError) as caught:
        unwrap(response, str, tool="failing_tool")
    assert caught.value.code == -32602
    assert "angle is required" in caught.value.message
    assert caught.value.text is not None and "Mcp error: -32602" in caught.value.text


@pytest.mark.anyio
async def test_a_real_sdk_crash_raises_tool_error_with_the_sdk_text() -> None:
    response = await _call("crashing_tool")
    with pytest.raises(ToolError) as caught:
        unwrap(response, str, tool="crashing_tool")
    assert caught.value.code is None
    assert caught.value.message == "Error executing tool crashing_tool"


@pytest.mark.anyio
async def test_a_real_sdk_protocol_error_becomes_a_tool_error_with_code_and_data() -> None:
    async with Client(_sdk_app()) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("protocol_error_tool", {})
    response = response_from_sdk(raised.value.error, id=1)
    with pytest.raises(ToolError) as caught:
        unwrap(encode(response), str)
    error = caught.value
    assert (error.code, error.message, error.data) == (-32001, "took too long", {"after_s": 5})
