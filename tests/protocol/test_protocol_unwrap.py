"""unwrap: exact types, the source priority, the SDK's wrapper and mirrors, and its errors."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import uuid
from typing import Any, TypedDict

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativemcp.protocol import (
    FASTMCP_WRAP_SCHEMA_KEY,
    CallToolResult,
    NativeMCPResponse,
    ProtocolError,
    TextContent,
    ToolError,
    UnwrapError,
    compact,
    decode_response,
    empty_response,
    encode,
    error_response,
    expand,
    raise_for_error,
    result_text,
    structured_response,
    text_resource_response,
    text_response,
    tool_error_response,
    unwrap,
)
from nativemcp.protocol import ResourceContents as Resource


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Item(msgspec.Struct):
    id: uuid.UUID
    name: str
    added: dt.datetime
    price: decimal.Decimal
    color: Color
    raw: bytes


@dataclasses.dataclass
class Entry:
    day: dt.date
    level: Level
    tags: list[str]


class Movie(TypedDict):
    title: str
    year: int
    released: dt.date


class Wrapped(msgspec.Struct):
    result: int


WHEN = dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)
ITEM = Item(
    id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
    name="report.md",
    added=WHEN,
    price=decimal.Decimal("12.30"),
    color=Color.BLUE,
    raw=b"\x00\xffbin",
)
ENTRY = Entry(day=dt.date(2026, 11, 2), level=Level.HIGH, tags=["a", "b"])
MOVIE: Movie = {"title": "Dune", "year": 2021, "released": dt.date(2021, 10, 22)}

EXACT_VALUES: list[tuple[str, Any, Any]] = [
    ("struct", ITEM, Item),
    ("dataclass", ENTRY, Entry),
    ("typeddict", MOVIE, Movie),
    ("datetime", WHEN, dt.datetime),
    ("date", dt.date(2026, 11, 2), dt.date),
    ("uuid", ITEM.id, uuid.UUID),
    ("decimal", decimal.Decimal("0.1"), decimal.Decimal),
    ("bytes", b"\x00\x01\xfe", bytes),
    ("enum", Color.RED, Color),
    ("int enum", Level.LOW, Level),
    ("list of structs", [ITEM, ITEM], list[Item]),
    ("dict of dataclasses", {"x": ENTRY}, dict[str, Entry]),
    ("tuple", (1, "a", WHEN), tuple[int, str, dt.datetime]),
    ("set of uuids", {ITEM.id}, set[uuid.UUID]),
    ("optional struct", ITEM, Item | None),
    ("int", 42, int),
    ("str", "hello", str),
    ("none", None, type(None)),
]
PATHS = [
    "in memory",
    "json bytes",
    "msgpack bytes",
    "json decoded",
    "msgpack decoded",
    "json compacted",
]


def _through(path: str, response: NativeMCPResponse[Any], type_: Any) -> Any:
    if path == "in memory":
        return unwrap(response, type_)
    if path == "json bytes":
        return unwrap(encode(response), type_)
    if path == "msgpack bytes":
        return unwrap(encode(response, "msgpack"), type_, format="msgpack")
    if path == "json decoded":
        return unwrap(decode_response(encode(response)), type_)
    if path == "msgpack decoded":
        return unwrap(decode_response(encode(response, "msgpack"), format="msgpack"), type_)
    return unwrap(encode(compact(response)), type_)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("value", "type_"), [v[1:] for v in EXACT_VALUES], ids=[v[0] for v in EXACT_VALUES]
)
def test_unwrap_returns_the_exact_value_and_type(path: str, value: Any, type_: Any) -> None:
    got = _through(path, structured_response("rich text", value), type_)
    assert got == value
    assert type(got) is type(value)


def test_unwrap_keeps_nested_types_exact() -> None:
    got = unwrap(encode(structured_response("t", [ITEM])), list[Item])[0]
    assert type(got.id) is uuid.UUID
    assert got.added == WHEN and got.added.tzinfo is not None
    assert type(got.price) is decimal.Decimal
    assert got.color is Color.BLUE
    assert got.raw == b"\x00\xffbin"


def test_unwrap_with_object_returns_the_value_as_it_arrived() -> None:
    assert unwrap(encode(structured_response("t", {"a": [1, 2]}))) == {"a": [1, 2]}
    assert unwrap(text_response("plain words")) == "plain words"
    assert unwrap(empty_response()) is None


# --- priority -----------------------------------------------------------------------------


def _response(
    *texts: str, structured: dict[str, Any] | None = None, result: Any = None, **kw: Any
) -> NativeMCPResponse[Any]:
    content: list[Any] = [TextContent(text=t) for t in texts]
    return NativeMCPResponse(
        id=1,
        result=CallToolResult(content=content, structured_content=structured, **kw),
        structured_result=result,
    )


@pytest.mark.parametrize("as_bytes", [False, True])
def test_structured_result_comes_before_structured_content(as_bytes: bool) -> None:
    response = _response('{"n": 3}', structured={"n": 2}, result={"n": 1})
    source: Any = encode(response) if as_bytes else response
    assert unwrap(source, dict[str, int]) == {"n": 1}


@pytest.mark.parametrize("as_bytes", [False, True])
def test_structured_content_comes_before_the_text(as_bytes: bool) -> None:
    response = _response('{"n": 3}', structured={"n": 2})
    source: Any = encode(response) if as_bytes else response
    assert unwrap(source, dict[str, int]) == {"n": 2}


def test_json_in_the_first_text_block_comes_before_the_raw_text() -> None:
    assert unwrap(_response('{"n": 3}', "second"), dict[str, int]) == {"n": 3}
    assert unwrap(_response("[1, 2]"), list[int]) == [1, 2]
    assert unwrap(_response("not json", "more"), str) == "not json\nmore"
    assert unwrap(_response("42"), str) == "42"


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_source_that_does_not_convert_falls_through_to_the_next(as_bytes: bool) -> None:
    response = _response('{"n": 3}', structured={"n": "two"}, result="not a dict")
    source: Any = encode(response) if as_bytes else response
    assert unwrap(source, dict[str, int]) == {"n": 3}


def test_a_text_only_tool_unwraps_as_str() -> None:
    assert unwrap(encode(text_response("just text")), str) == "just text"


def test_a_text_and_resource_response_unwraps_its_text_and_its_value() -> None:
    resource = Resource(uri="file:///x.md", mime_type="text/markdown", text="# x")
    assert unwrap(text_resource_response("exported", resource), str) == "exported"
    with_value = text_resource_response("exported", resource, value={"path": "/x.md"})
    assert unwrap(encode(with_value), dict[str, str]) == {"path": "/x.md"}


# --- the {"result": x} wrapper -----------------------------------------------------------


def test_the_sdk_unmarked_wrapper_is_removed_for_non_object_types() -> None:
    response = _response("42", structured={"result": 42})
    assert unwrap(response, int) == 42
    assert unwrap(encode(response), int) == 42
    assert unwrap(encode(response, "msgpack"), int, format="msgpack") == 42


def test_the_unmarked_wrapper_stays_for_object_types() -> None:
    response = _response("{}", structured={"result": 42})
    assert unwrap(response, dict[str, int]) == {"result": 42}
    assert unwrap(encode(response), Wrapped) == Wrapped(result=42)


def test_with_object_the_wrapper_is_removed_only_when_the_text_mirrors_it() -> None:
    assert unwrap(_response("42", structured={"result": 42})) == 42
    assert unwrap(_response("hello", structured={"result": "hello"})) == "hello"
    assert unwrap(_response("The answer.", structured={"result": 42})) == {"result": 42}


def test_the_sdk_writes_no_content_for_none_and_empty_lists() -> None:
    assert unwrap(_response(structured={"result": None})) is None
    assert unwrap(_response(structured={"result": []})) == []
    assert unwrap(encode(_response(structured={"result": []})), list[Item]) == []


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_fastmcp_wrapper_marked_in_the_output_schema_is_removed(as_bytes: bool) -> None:
    response = _response("{}", structured={"result": {"a": 1}})
    source: Any = encode(response) if as_bytes else response
    schema = {"type": "object", FASTMCP_WRAP_SCHEMA_KEY: True}
    assert unwrap(source, dict[str, int], output_schema=schema) == {"a": 1}
    assert unwrap(source, dict[str, Any]) == {"result": {"a": 1}}


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_fastmcp_wrapper_marked_in_meta_is_removed(as_bytes: bool) -> None:
    response = _response(
        "{}", structured={"result": {"a": 1}}, meta={"fastmcp": {"wrap_result": True}}
    )
    source: Any = encode(response) if as_bytes else response
    assert unwrap(source, dict[str, int]) == {"a": 1}
    assert unwrap(source) == {"a": 1}


def test_an_sdk_list_mirrored_one_text_block_per_item_unwraps() -> None:
    mirrored = _response('{\n  "name": "a", "n": 1\n}', '{\n  "name": "b", "n": 2\n}')
    assert unwrap(mirrored, list[dict[str, Any]]) == [{"name": "a", "n": 1}, {"name": "b", "n": 2}]
    assert unwrap(mirrored) == [{"name": "a", "n": 1}, {"name": "b", "n": 2}]
    assert unwrap(_response("1", "2", "3"), list[int]) == [1, 2, 3]
    assert unwrap(_response("1", "2", "3"), int) == 1


def test_a_one_item_list_mirrored_as_one_block_unwraps_as_a_list() -> None:
    assert unwrap(_response('{"n": 1}'), list[dict[str, int]]) == [{"n": 1}]
    assert unwrap(_response("[1, 2]"), list[int]) == [1, 2]
    assert unwrap(_response("[1, 2]"), list[list[int]]) == [[1, 2]]


def test_with_structured_content_the_mirror_text_is_not_needed() -> None:
    response = _response('{"n": 1}', '{"n": 2}', structured={"result": [{"n": 1}, {"n": 2}]})
    assert unwrap(response) == [{"n": 1}, {"n": 2}]
    assert unwrap(encode(response), list[dict[str, int]]) == [{"n": 1}, {"n": 2}]


# --- errors ------------------------------------------------------------------------------


def test_a_json_rpc_error_raises_tool_error_with_code_message_and_data() -> None:
    response = error_response("unknown tool: nope", code=-32601, data={"tool": "nope"}, id=4)
    sources: list[tuple[Any, Any]] = [
        (response, "json"),
        (encode(response), "json"),
        (encode(response, "msgpack"), "msgpack"),
    ]
    for source, format in sources:
        with pytest.raises(ToolError) as caught:
            unwrap(source, dict[str, Any], tool="nope", format=format)
        error = caught.value
        assert (error.code, error.message, error.data) == (
            -32601,
            "unknown tool: nope",
            {"tool": "nope"},
        )
        assert error.tool == "nope"
        assert "nope" in str(error) and "-32601" in str(error)


def test_an_error_response_defaults_to_internal_error() -> None:
    response = error_response("boom")
    assert response.error is not None and response.error.code == -32603


def test_an_is_error_result_raises_tool_error_keeping_text_and_structured_content() -> None:
    response = tool_error_response(
        "Error: Mcp error: -32602: MCP error -32602: Invalid arguments for tool "
        "manipulateCube: [] (Code: -32603)",
        structured_content={"field": "angle", "reason": "missing"},
    )
    for source in (response, encode(response)):
        with pytest.raises(ToolError) as caught:
            unwrap(source, str, tool="manipulateCube")
        error = caught.value
        assert error.code == -32602
        assert error.message == "Invalid arguments for tool manipulateCube: []"
        assert error.structured_content == {"field": "angle", "reason": "missing"}
        assert error.data == {"field": "angle", "reason": "missing"}
        assert error.text is not None and error.text.startswith("Error: Mcp error")
        assert error.tool == "manipulateCube"


def test_an_is_error_result_takes_its_code_from_structured_content_when_the_text_has_none() -> None:
    with pytest.raises(ToolError) as caught:
        raise_for_error(
            tool_error_response("path escapes the root", structured_content={"code": -32602})
        )
    assert (caught.value.code, caught.value.message) == (-32602, "path escapes the root")
    with pytest.raises(ToolError) as caught:
        raise_for_error(tool_error_response("x", structured_content={"code": True}))
    assert caught.value.code is None


def test_an_is_error_result_without_text_still_says_it_failed() -> None:
    response = _response(is_error=True)
    with pytest.raises(ToolError, match="the tool reported an error"):
        unwrap(response)


def test_raise_for_error_passes_successful_responses() -> None:
    raise_for_error(text_response("fine"))
    assert (
        result_text(CallToolResult(content=[TextContent(text="a"), TextContent(text="b")]))
        == "a\nb"
    )


def test_unwrap_error_names_the_tool_the_type_and_what_arrived() -> None:
    with pytest.raises(UnwrapError) as caught:
        unwrap(encode(text_response("no number here")), int, tool="count_files")
    error = caught.value
    message = str(error)
    assert "count_files" in message and "int" in message and "no number here" in message
    assert error.expected is int and error.tool == "count_files"
    assert "raw text" in error.arrived


def test_unwrap_error_lists_every_source_it_tried() -> None:
    response = structured_response("rich text", {"n": "x"})
    with pytest.raises(UnwrapError) as caught:
        unwrap(encode(response), Item)
    assert "structuredResult" in caught.value.arrived
    assert "structuredContent" in caught.value.arrived
    assert "Item" in str(caught.value)


def test_an_empty_result_does_not_unwrap_to_a_silent_none_for_a_real_type() -> None:
    with pytest.raises(UnwrapError, match="empty result"):
        unwrap(empty_response(), Item)


def test_a_type_msgspec_cannot_convert_to_raises_unwrap_error() -> None:
    class Opaque:
        pass

    with pytest.raises(UnwrapError, match="Opaque"):
        unwrap(encode(text_response("x")), Opaque)


def test_unwrap_on_malformed_bytes_raises_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        unwrap(b"{", Item)
    with pytest.raises(ProtocolError):
        unwrap(b'{"id":1,"result":{"structuredContent":[1]}}', list[int])
    with pytest.raises(ProtocolError):
        unwrap("\x81", int, format="msgpack")


# --- compact and expand ------------------------------------------------------------------


def test_compact_drops_a_structured_result_equal_to_the_structured_content() -> None:
    response = structured_response("t", {"a": 1})
    compacted = compact(response)
    assert compacted.structured_result is None
    assert expand(compacted).structured_result == {"a": 1}
    listing = structured_response("t", [1, 2])
    assert compact(listing) is listing


# --- properties --------------------------------------------------------------------------

TARGETS: list[Any] = [
    object,
    int,
    str,
    float,
    bool,
    bytes,
    type(None),
    list[int],
    list[Item],
    dict[str, Any],
    dict[str, int],
    Item,
    Entry,
    Movie,
    Wrapped,
    dt.datetime,
    dt.date,
    uuid.UUID,
    decimal.Decimal,
    Color,
    Level,
    tuple[int, ...],
    int | None,
    list[dict[str, Any]],
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["2026-01-05", "2026-01-05T09:30:00Z", str(ITEM.id), "red", "1.5"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["result", "n", "name", "code", "a"]) | st.text(max_size=4),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
objects = st.dictionaries(
    st.sampled_from(["result", "n", "a"]) | st.text(max_size=4), values, max_size=3
)
content = st.lists(
    st.builds(
        TextContent,
        text=st.text(max_size=10) | values.map(lambda v: msgspec.json.encode(v).decode()),
    ),
    max_size=3,
)
responses = st.builds(
    lambda content, structured, result, is_error, meta: NativeMCPResponse(
        id=1,
        result=CallToolResult(
            content=content, structured_content=structured, is_error=is_error, meta=meta
        ),
        structured_result=result,
    ),
    content,
    st.none() | objects,
    values,
    st.booleans(),
    st.none() | st.just({"fastmcp": {"wrap_result": True}}),
) | st.builds(
    lambda code, message, data: error_response(message, code=code, data=data),
    st.integers(-33000, 33000),
    st.text(max_size=10),
    values,
)


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "value", fn()
    except (ToolError, UnwrapError, ProtocolError) as exc:
        return type(exc).__name__, None


@given(
    response=responses, type_=st.sampled_from(TARGETS), format=st.sampled_from(["json", "msgpack"])
)
def test_unwrap_raises_only_documented_errors_and_bytes_agree_with_decoded(
    response: NativeMCPResponse[Any], type_: Any, format: Any
) -> None:
    wire = encode(response, format)
    direct = _outcome(lambda: unwrap(wire, type_, format=format))
    decoded = _outcome(lambda: unwrap(decode_response(wire, format=format), type_))
    assert direct == decoded
    if direct[0] == "value" and type_ not in (object, Any):
        assert msgspec.convert(direct[1], type_) == direct[1]


@given(
    data=st.binary(max_size=80) | values.map(msgspec.json.encode), type_=st.sampled_from(TARGETS)
)
def test_unwrap_on_arbitrary_bytes_raises_only_documented_errors(data: bytes, type_: Any) -> None:
    for format in ("json", "msgpack"):
        _outcome(lambda: unwrap(data, type_, format=format))  # noqa: B023


@given(
    data=st.dictionaries(
        st.sampled_from(["id", "result", "error", "structuredResult", "jsonrpc"]),
        values,
        max_size=4,
    ),
    type_=st.sampled_from(TARGETS),
)
def test_unwrap_on_arbitrary_dicts_raises_only_documented_errors(
    data: dict[str, Any], type_: Any
) -> None:
    _outcome(lambda: unwrap(data, type_))
