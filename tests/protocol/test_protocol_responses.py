"""Response constructors: what each one puts on the wire."""

from __future__ import annotations

import msgspec

from nativemcp.protocol import (
    INTERNAL_ERROR,
    EmbeddedResource,
    ImageContent,
    NativeMCPResponse,
    ResourceContents,
    TextContent,
    empty_response,
    encode,
    error_response,
    structured_response,
    text_resource_response,
    text_response,
    to_structured_content,
    tool_error_response,
)


class Point(msgspec.Struct):
    x: int
    y: int


def test_a_text_response_is_one_text_block() -> None:
    response = text_response("hello", id=1, meta={"k": "v"})
    assert response.result is not None
    assert response.result.content == [TextContent(text="hello")]
    assert response.result.meta == {"k": "v"}
    assert response.structured_result is None and not response.is_error


def test_a_structured_response_has_rich_text_first_then_extra_blocks_and_the_value() -> None:
    image = ImageContent(data="AA==", mime_type="image/png")
    response = structured_response("a point", Point(1, 2), id=2, extra_content=[image])
    assert response.result is not None
    assert response.result.content == [TextContent(text="a point"), image]
    assert response.result.structured_content == {"x": 1, "y": 2}
    assert response.structured_result == Point(1, 2)


def test_structured_content_wraps_values_that_are_not_objects() -> None:
    assert to_structured_content(Point(1, 2)) == {"x": 1, "y": 2}
    assert to_structured_content([Point(1, 2)]) == {"result": [{"x": 1, "y": 2}]}
    assert to_structured_content(3) == {"result": 3}
    assert to_structured_content(None) == {"result": None}
    assert to_structured_content({1: "a"}) == {"1": "a"}


def test_a_text_resource_response_puts_the_text_first_then_the_resource() -> None:
    contents = ResourceContents(uri="file:///export.md", mime_type="text/markdown", text="# x")
    response = text_resource_response("exported 1 file", contents, id=3)
    assert response.result is not None
    assert response.result.content == [
        TextContent(text="exported 1 file"),
        EmbeddedResource(resource=contents),
    ]
    assert response.result.structured_content is None
    block = EmbeddedResource(resource=contents, meta={"m": 1})
    same = text_resource_response("t", block, value={"path": "/export.md"})
    assert same.result is not None and same.result.content[1] is block
    assert same.result.structured_content == {"path": "/export.md"}
    assert same.structured_result == {"path": "/export.md"}


def test_an_error_response_is_a_json_rpc_error_with_internal_error_by_default() -> None:
    response = error_response("boom", id=4)
    assert response.error is not None and response.result is None
    assert (response.error.code, response.error.message) == (INTERNAL_ERROR, "boom")
    assert msgspec.json.decode(encode(response)) == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32603, "message": "boom"},
    }
    coded = error_response("bad", code=-32602, data={"f": 1})
    assert coded.error is not None and (coded.error.code, coded.error.data) == (-32602, {"f": 1})


def test_a_tool_error_response_is_an_is_error_result_with_text() -> None:
    response = tool_error_response("path escapes root", structured_content={"path": "../x"})
    assert response.result is not None and response.result.is_error and response.is_error
    assert response.result.content == [TextContent(text="path escapes root")]
    assert response.result.structured_content == {"path": "../x"}


def test_an_empty_response_is_a_result_without_content() -> None:
    response = empty_response(id=5)
    assert response == NativeMCPResponse(id=5, result=response.result)
    assert response.result is not None and response.result.content == []
    assert msgspec.json.decode(encode(response)) == {
        "jsonrpc": "2.0",
        "id": 5,
        "result": {"content": []},
    }


def test_an_empty_result_still_carries_the_content_the_spec_requires() -> None:
    import mcp_types

    wire = encode(empty_response(id=6).result)
    assert wire == b'{"content":[]}'
    assert mcp_types.CallToolResult.model_validate_json(wire).content == []
