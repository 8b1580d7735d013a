"""Wire types round trip through JSON and msgpack; malformed input raises only ProtocolError."""

from __future__ import annotations

import contextlib
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativemcp.protocol import (
    Annotations,
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ErrorObject,
    Icon,
    ImageContent,
    JSONRPCErrorResponse,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    NativeMCPError,
    NativeMCPResponse,
    ProtocolError,
    ResourceContents,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolExecution,
    UnknownContent,
    decode,
    decode_message,
    decode_response,
    encode,
    structured_response,
)

FORMATS = ["json", "msgpack"]
KNOWN_TYPES = {"text", "image", "audio", "resource_link", "resource"}

# --- strategies -------------------------------------------------------------------------

texts = st.text(max_size=12)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=3)
metas = st.none() | json_objects
annotation_values = st.none() | st.builds(
    Annotations,
    audience=st.none() | st.lists(st.sampled_from(["user", "assistant"]), max_size=2),
    priority=st.none() | st.floats(min_value=0, max_value=1),
    last_modified=st.none() | st.just("2026-01-05T09:30:00Z"),
)
icons = st.none() | st.lists(
    st.builds(
        Icon,
        src=texts,
        mime_type=st.none() | st.just("image/png"),
        sizes=st.none() | st.lists(st.just("48x48"), max_size=2),
        theme=st.none() | st.sampled_from(["light", "dark"]),
    ),
    max_size=2,
)
resource_contents = st.builds(
    ResourceContents,
    uri=texts,
    mime_type=st.none() | texts,
    text=texts,
    meta=metas,
) | st.builds(ResourceContents, uri=texts, mime_type=st.none() | texts, blob=texts, meta=metas)
unknown_types = texts.filter(lambda t: t not in KNOWN_TYPES and t != "__nativemcp_unknown__")
unknown_blocks = st.builds(
    lambda kind, extra: UnknownContent(data={"type": kind, **extra}),
    unknown_types,
    st.dictionaries(texts.filter(lambda k: k != "type"), json_values, max_size=3),
)
known_blocks: st.SearchStrategy[ContentBlock] = st.one_of(
    st.builds(TextContent, text=texts, annotations=annotation_values, meta=metas),
    st.builds(ImageContent, data=texts, mime_type=texts, annotations=annotation_values, meta=metas),
    st.builds(AudioContent, data=texts, mime_type=texts, annotations=annotation_values, meta=metas),
    st.builds(
        ResourceLink,
        uri=texts,
        name=texts,
        title=st.none() | texts,
        description=st.none() | texts,
        mime_type=st.none() | texts,
        size=st.none() | st.integers(min_value=0, max_value=2**40),
        icons=icons,
        annotations=annotation_values,
        meta=metas,
    ),
    st.builds(
        EmbeddedResource, resource=resource_contents, annotations=annotation_values, meta=metas
    ),
)
blocks = known_blocks | unknown_blocks
results = st.builds(
    CallToolResult,
    content=st.lists(blocks, max_size=4),
    structured_content=st.none() | json_objects,
    is_error=st.booleans(),
    meta=metas,
)
ids = st.none() | st.integers(min_value=-(2**53), max_value=2**53) | texts
errors = st.builds(ErrorObject, code=st.integers(-33000, 33000), message=texts, data=json_values)
responses: st.SearchStrategy[NativeMCPResponse[Any]] = st.builds(
    lambda id, result, structured: NativeMCPResponse(
        id=id, result=result, structured_result=structured
    ),
    ids,
    results,
    json_values,
) | st.builds(lambda id, error: NativeMCPResponse(id=id, error=error), ids, errors)
request_ids = st.integers(min_value=-(2**53), max_value=2**53) | texts
params = st.none() | json_objects
tools = st.builds(
    Tool,
    name=texts,
    title=st.none() | texts,
    description=st.none() | texts,
    input_schema=st.just({"type": "object", "properties": {"q": {"type": "string"}}}),
    output_schema=st.none() | st.just({"type": "object", "x-fastmcp-wrap-result": True}),
    execution=st.none()
    | st.builds(ToolExecution, task_support=st.sampled_from(["forbidden", "optional", "required"])),
    icons=icons,
    annotations=st.none()
    | st.builds(
        ToolAnnotations,
        title=st.none() | texts,
        read_only_hint=st.none() | st.booleans(),
        destructive_hint=st.none() | st.booleans(),
        idempotent_hint=st.none() | st.booleans(),
        open_world_hint=st.none() | st.booleans(),
    ),
    meta=metas,
)
messages = st.one_of(
    st.builds(JSONRPCRequest, id=request_ids, method=texts, params=params),
    st.builds(JSONRPCNotification, method=texts, params=params),
    st.builds(JSONRPCResponse, id=request_ids, result=json_objects),
    st.builds(JSONRPCErrorResponse, id=st.none() | request_ids, error=errors),
)

# --- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize("format", FORMATS)
@given(response=responses)
def test_every_response_round_trips_unchanged(
    format: Any, response: NativeMCPResponse[Any]
) -> None:
    assert decode_response(encode(response, format), format=format) == response


@given(response=responses)
def test_json_responses_decode_the_same_from_bytes_str_and_dict(
    response: NativeMCPResponse[Any],
) -> None:
    wire = encode(response)
    assert decode_response(wire.decode()) == response
    assert decode_response(msgspec.json.decode(wire)) == response
    assert decode_response(bytearray(wire)) == response
    assert decode_response(memoryview(wire)) == response


@pytest.mark.parametrize("format", FORMATS)
@given(message=messages)
def test_every_json_rpc_message_round_trips_unchanged(format: Any, message: Any) -> None:
    wire = encode(message, format)
    assert decode_message(wire, format=format) == message
    assert decode(wire, type(message), format=format) == message


@pytest.mark.parametrize("format", FORMATS)
@given(value=st.one_of(blocks, tools, resource_contents, annotation_values, errors, results))
def test_every_wire_type_round_trips_alone(format: Any, value: Any) -> None:
    if value is None or isinstance(value, UnknownContent):
        return  # UnknownContent only exists inside a result; see the test below
    assert decode(encode(value, format), type(value), format=format) == value


@pytest.mark.parametrize("format", FORMATS)
@given(block=unknown_blocks, before=known_blocks, after=known_blocks)
def test_unknown_content_blocks_are_kept_and_re_emitted_unchanged(
    format: Any, block: UnknownContent, before: ContentBlock, after: ContentBlock
) -> None:
    decoder: Any = msgspec.json if format == "json" else msgspec.msgpack
    sent = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [msgspec.to_builtins(before), block.data, msgspec.to_builtins(after)]
        },
    }
    received = decode_response(decoder.encode(sent), format=format)
    assert received.result is not None
    kept = received.result.content[1]
    assert isinstance(kept, UnknownContent)
    assert kept.type == block.data["type"]
    assert kept.data == block.data
    assert decoder.decode(encode(received, format)) == sent


def test_json_wire_messages_carry_the_jsonrpc_version() -> None:
    assert (
        msgspec.json.decode(encode(NativeMCPResponse(id=1, result=CallToolResult())))["jsonrpc"]
        == "2.0"
    )
    assert encode(JSONRPCNotification(method="ping")) == b'{"jsonrpc":"2.0","method":"ping"}'


def test_wire_names_are_camel_case_and_meta_is_underscored() -> None:
    response = structured_response(
        "one",
        {"a": 1},
        id=3,
        meta={"k": 1},
        extra_content=[ImageContent(data="AA==", mime_type="image/png")],
    )
    wire = msgspec.json.decode(encode(response))
    assert set(wire) == {"jsonrpc", "id", "result", "structuredResult"}
    assert set(wire["result"]) == {"content", "structuredContent", "_meta"}
    image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
    assert wire["result"]["content"][1] == image


def test_every_content_block_exposes_its_type() -> None:
    assert TextContent(text="t").type == "text"
    assert ImageContent(data="", mime_type="image/png").type == "image"
    assert AudioContent(data="", mime_type="audio/wav").type == "audio"
    assert ResourceLink(uri="file:///a", name="a").type == "resource_link"
    assert EmbeddedResource(resource=ResourceContents(uri="u", blob="AA==")).type == "resource"
    assert UnknownContent(data={"type": "video"}).type == "video"


def test_a_msgpack_frame_keeps_native_timestamps_next_to_an_unknown_block() -> None:
    import datetime as dt

    when = dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)
    response = structured_response(
        "t", {"when": when}, extra_content=[UnknownContent(data={"type": "video", "u": 1})]
    )
    received = decode_response(encode(response, "msgpack"), format="msgpack")
    assert received.structured_result == {"when": when}


# --- malformed input --------------------------------------------------------------------

MALFORMED: list[tuple[str, Any, str, str]] = [
    ("bad JSON", b'{"id": 1, "result": ', "json", "malformed json"),
    ("bad JSON str", "{not json}", "json", "malformed json"),
    ("bad msgpack", b"\xc1", "msgpack", "malformed msgpack"),
    ("truncated msgpack", b"\x82\xa2id", "msgpack", "malformed msgpack"),
    ("msgpack given as str", "\x81", "msgpack", "must be bytes"),
    (
        "non-UTF-8 JSON",
        b'{"id":1,"result":{"content":[{"type":"text","text":"\xff"}]}}',
        "json",
        "UTF-8",
    ),
    (
        "lone surrogate in str",
        '{"id":1,"result":{"content":[{"type":"text","text":"\ud800"}]}}',
        "json",
        "UTF-8",
    ),
    ("JSON list", b"[1, 2]", "json", "expected an object"),
    ("JSON number", b"42", "json", "expected an object"),
    ("JSON null", b"null", "json", "expected an object"),
    ("msgpack list", msgspec.msgpack.encode([1]), "msgpack", "expected an object"),
    ("neither result nor error", b'{"id": 1}', "json", "neither `result` nor `error`"),
    (
        "both result and error",
        b'{"id":1,"result":{},"error":{"code":1,"message":"m"}}',
        "json",
        "both `result` and `error`",
    ),
    ("wrong jsonrpc", b'{"jsonrpc":"1.0","id":1,"result":{}}', "json", "jsonrpc must be"),
    ("content not a list", b'{"id":1,"result":{"content":{}}}', "json", "result.content"),
    ("block not an object", b'{"id":1,"result":{"content":["x"]}}', "json", "content[0]"),
    (
        "block without type",
        b'{"id":1,"result":{"content":[{"text":"x"}]}}',
        "json",
        "content block 0 has no string `type`",
    ),
    (
        "block with numeric type",
        b'{"id":1,"result":{"content":[{"type":3}]}}',
        "json",
        "no string `type`",
    ),
    ("text block without text", b'{"id":1,"result":{"content":[{"type":"text"}]}}', "json", "text"),
    (
        "resource with text and blob",
        b'{"id":1,"result":{"content":[{"type":"resource","resource":'
        b'{"uri":"u","text":"t","blob":"b"}}]}}',
        "json",
        "exactly one of",
    ),
    (
        "structuredContent not an object",
        b'{"id":1,"result":{"content":[],"structuredContent":[1]}}',
        "json",
        "structuredContent",
    ),
    ("isError not a bool", b'{"id":1,"result":{"isError":"yes"}}', "json", "isError"),
    ("error without code", b'{"id":1,"error":{"message":"m"}}', "json", "code"),
    ("boolean id", b'{"id":true,"result":{}}', "json", "id"),
    (
        "nested too deeply",
        b'{"id":1,"result":{"structuredContent":{"a":' + b"[" * 50_000 + b"]" * 50_000 + b"}}}",
        "json",
        "nested too deeply",
    ),
]


@pytest.mark.parametrize(
    ("data", "format", "says"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_responses_raise_protocol_error_saying_what_is_wrong(
    data: Any, format: Any, says: str
) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_response(data, format=format)
    assert says in str(caught.value)
    assert isinstance(caught.value, NativeMCPError)


@pytest.mark.parametrize(
    "data",
    [{"id": 1}, {"id": 1, "result": {"content": [{"type": "text"}]}}, {"result": 5}],
    ids=["no result", "bad block", "result not an object"],
)
def test_malformed_dicts_raise_protocol_error(data: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError, match="malformed response"):
        decode_response(data)


@pytest.mark.parametrize("data", [None, 5, 1.5, [b"{}"], object()])
def test_inputs_that_are_not_wire_data_raise_protocol_error(data: Any) -> None:
    with pytest.raises(ProtocolError, match="cannot decode a response from"):
        decode_response(data)


def test_an_unknown_wire_format_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="unknown wire format 'xml'"):
        decode_response(b"{}", format="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown wire format"):
        encode(CallToolResult(), format="cbor")  # type: ignore[arg-type]


def test_decoding_a_dict_leaves_the_callers_dict_as_it_was() -> None:
    sent = {"id": 1, "result": {"content": [{"type": "video", "url": "v"}]}}
    before = msgspec.json.encode(sent)
    decode_response(sent)
    assert msgspec.json.encode(sent) == before


def test_a_dict_is_decoded_as_strictly_as_its_json() -> None:
    with pytest.raises(ProtocolError, match="isError"):
        decode_response({"id": 1, "result": {"isError": "true"}})


def test_a_forged_private_unknown_tag_is_kept_as_sent() -> None:
    forged = {"type": "__nativemcp_unknown__", "data": {"type": "text", "text": "x"}}
    wire = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "result": {"content": [forged]}})
    received = decode_response(wire)
    assert received.result is not None
    assert received.result.content == [UnknownContent(data=forged)]
    assert msgspec.json.decode(encode(received))["result"]["content"] == [forged]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"[]", "expected an object"),
        (b'{"jsonrpc":"2.1","method":"x"}', "jsonrpc must be '2.0'"),
        (b'{"jsonrpc":"2.0"}', "no method, result or error"),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', "JSONRPCRequest"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}', "JSONRPCErrorResponse"),
        (b"\xff", "malformed json"),
    ],
)
def test_malformed_json_rpc_messages_raise_protocol_error(data: bytes, says: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_message(data)
    assert says in str(caught.value)


def test_msgpack_messages_may_leave_out_the_jsonrpc_version() -> None:
    request = JSONRPCRequest(id=1, method="tools/call", params={"name": "x"})
    assert b"jsonrpc" not in encode(request, "msgpack")
    assert decode_message(encode(request, "msgpack"), format="msgpack") == request


def test_values_without_a_wire_form_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="cannot build structured content from dict"):
        structured_response("x", {"f": object()})
    with pytest.raises(ProtocolError, match="cannot encode NativeMCPResponse as json"):
        encode(NativeMCPResponse(result=CallToolResult(), structured_result=object()))


def test_an_invalid_msgpack_timestamp_is_a_protocol_error_on_every_path() -> None:
    # Found by the property below: the plain decoder of the lenient path refused it
    # with a bare msgspec.ValidationError.
    bad_timestamp = b"\xd4\xff\x00"
    with pytest.raises(ProtocolError, match="malformed msgpack response"):
        decode_response(bad_timestamp, format="msgpack")
    with pytest.raises(ProtocolError, match="malformed msgpack CallToolResult"):
        decode(bad_timestamp, CallToolResult, format="msgpack")


@given(data=st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    formats: tuple[Literal["json", "msgpack"], ...] = ("json", "msgpack")
    for format in formats:
        with contextlib.suppress(ProtocolError):
            decode_response(data, format=format)


@given(value=json_values)
def test_arbitrary_json_values_decode_or_raise_protocol_error(value: Any) -> None:
    formats: tuple[Literal["json", "msgpack"], ...] = ("json", "msgpack")
    for format in formats:
        codec: Any = msgspec.json if format == "json" else msgspec.msgpack
        with contextlib.suppress(ProtocolError):
            decode_response(codec.encode(value), format=format)
