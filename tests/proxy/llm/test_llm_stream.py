"""The stream reader: JSON envelopes and plain text both accepted, nothing ever raises."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativemcp.proxy.llm import StreamAccumulator, StreamChunk, parse_stream_chunk

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["content", "thinking", "tool_calls", "index", "id", "x"]) | st.text(),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


def test_the_seed_stream_accumulates_content_thinking_and_tool_calls() -> None:
    stream = StreamAccumulator()
    stream.feed(json.dumps({"thinking": "Let me look. "}))
    stream.feed(json.dumps({"content": "Hello"}))
    stream.feed(json.dumps({"content": ", world", "thinking": "Done."}))
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    stream.feed(json.dumps({"tool_calls": calls}))
    assert stream.content == "Hello, world"
    assert stream.thinking == "Let me look. Done."
    assert stream.tool_calls == calls
    assert (stream.envelope_chunks, stream.text_chunks) == (4, 0)


def test_plain_text_chunks_are_content_kept_exactly() -> None:
    stream = StreamAccumulator()
    for chunk in ["Error: Mcp error: -32602: bad args", "\n", "  indented ", '{"content": "!"}']:
        stream.feed(chunk)
    assert stream.content == "Error: Mcp error: -32602: bad args\n  indented !"
    assert (stream.envelope_chunks, stream.text_chunks) == (1, 3)


@pytest.mark.parametrize(
    "chunk",
    [
        '{"answer": 42}',  # JSON, but none of the envelope keys: the model wrote it
        '{"content": ',  # half an envelope
        "42",
        "null",
        "[1, 2]",
        '"quoted"',
        "{",
        "",
    ],
)
def test_chunks_that_are_not_envelopes_are_text(chunk: str) -> None:
    assert parse_stream_chunk(chunk) == StreamChunk(content=chunk)


def test_envelopes_may_arrive_decoded_or_as_bytes() -> None:
    assert parse_stream_chunk({"content": "a"}) == StreamChunk(content="a", is_envelope=True)
    assert parse_stream_chunk(b'{"thinking": "t"}') == StreamChunk(thinking="t", is_envelope=True)
    assert parse_stream_chunk(None) == StreamChunk()


def test_content_given_as_text_parts_is_joined() -> None:
    chunk = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert parse_stream_chunk(chunk).content == "ab"
    assert parse_stream_chunk({"content": None, "thinking": 7}) == StreamChunk(
        thinking="7", is_envelope=True
    )


def test_a_character_split_across_bytes_chunks_arrives_whole() -> None:
    data = "안녕하세요".encode()
    stream = StreamAccumulator()
    for index in range(len(data)):
        stream.feed(data[index : index + 1])
    assert stream.content == "안녕하세요"


def test_openai_tool_call_deltas_are_merged_by_index() -> None:
    deltas: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"q": '}}]},
        {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "list", "arguments": "{}"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]},
    ]
    stream = StreamAccumulator()
    for delta in deltas:
        stream.feed(json.dumps(delta))
    assert stream.tool_calls == [
        {
            "index": 0,
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"q": "x"}'},
        },
        {"index": 1, "id": "c2", "function": {"name": "list", "arguments": "{}"}},
    ]


def test_a_full_tool_call_list_replaces_the_previous_one() -> None:
    stream = StreamAccumulator()
    stream.feed({"tool_calls": [{"id": "a"}]})
    stream.feed({"tool_calls": [{"id": "a"}, {"id": "b"}]})
    assert stream.tool_calls == [{"id": "a"}, {"id": "b"}]
    stream.feed({"content": "no calls in this chunk"})
    assert stream.tool_calls == [{"id": "a"}, {"id": "b"}]


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "chunk",
    [
        _Unprintable(),
        {"content": _Unprintable()},
        {"tool_calls": "not a list"},
        {"tool_calls": [1, "x", None, {"index": True}]},
        {"tool_calls": [{"index": 0, "function": "oops"}]},
        {1: "non-string key", "content": "ok"},
        "[" * 100_000,
        "{" + '"content":' * 50_000,
        b"\xff\xfe broken utf-8",
        memoryview(b"text"),
        3.5,
    ],
)
def test_odd_chunks_never_raise(chunk: object) -> None:
    StreamAccumulator().feed(chunk)


def test_no_warning_is_logged_for_non_json_chunks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    stream = StreamAccumulator()
    for chunk in ["plain", "Error: Mcp error: -32602: x", "{broken", '{"content": "ok"}']:
        stream.feed(chunk)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("taken as text" in r.getMessage() for r in caplog.records)


@given(st.lists(st.one_of(st.text(), st.binary(), JSON_VALUES, JSON_VALUES.map(json.dumps))))
def test_any_sequence_of_chunks_is_read_without_raising(chunks: list[Any]) -> None:
    stream = StreamAccumulator()
    for chunk in chunks:
        assert isinstance(stream.feed(chunk), StreamChunk)
    assert isinstance(stream.content, str) and isinstance(stream.thinking, str)
    assert all(isinstance(call, dict) for call in stream.tool_calls)


@given(st.lists(st.text().filter(lambda text: not text.lstrip().startswith("{"))))
def test_plain_text_chunks_concatenate_to_the_content(chunks: list[str]) -> None:
    stream = StreamAccumulator()
    for chunk in chunks:
        stream.feed(chunk)
    assert stream.content == "".join(chunks)


@given(
    st.text().filter(lambda text: not text.lstrip().startswith("{")),
    st.integers(min_value=0, max_value=64),
)
def test_utf8_bytes_split_anywhere_decode_to_the_text(text: str, cut: int) -> None:
    data = text.encode()
    cut = min(cut, len(data))
    stream = StreamAccumulator()
    stream.feed(data[:cut])
    stream.feed(data[cut:])
    assert stream.content == text
