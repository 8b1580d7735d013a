"""A tolerant reader for streamed model output: not every chunk is JSON.

A stream may mix JSON envelope chunks, ``{"content": …, "thinking": …, "tool_calls": …}``,
with plain-text chunks (a provider's raw token text, a tool's plain output). Both are
accepted; nothing raises and nothing is logged above debug.

- A chunk is an **envelope** when it is a JSON object (text, bytes or an already
  decoded mapping) with at least one of ``content``, ``thinking``, ``tool_calls``.
- Anything else is **text**, kept exactly, whitespace included: a JSON object without
  those keys, a bare ``42``, half a JSON document, any prose.
- ``tool_calls`` whose items all carry an integer ``index`` are OpenAI-style deltas,
  merged by index (``function.arguments`` fragments concatenated); any other list is the
  full list of calls so far and replaces the previous one.
"""

from __future__ import annotations

import codecs
import json
import logging
from collections.abc import Mapping
from typing import Any, Final

import msgspec

__all__ = ["StreamAccumulator", "StreamChunk", "parse_stream_chunk"]

logger = logging.getLogger("nativemcp.proxy.llm")

_ENVELOPE_KEYS: Final = frozenset({"content", "thinking", "tool_calls"})
_PREVIEW: Final = 100


class StreamChunk(msgspec.Struct, frozen=True, kw_only=True):
    """One chunk, read: text to append, thinking to append, tool calls if the chunk had any.

    ``is_envelope`` tells a JSON envelope from a plain-text chunk.
    """

    content: str = ""
    thinking: str = ""
    tool_calls: tuple[dict[str, Any], ...] | None = None
    is_envelope: bool = False


def parse_stream_chunk(chunk: object) -> StreamChunk:
    """Read one stream chunk; never raises.

    ``chunk`` may be ``str``, ``bytes`` (UTF-8; bad bytes become U+FFFD), a mapping or
    ``None`` (an empty chunk). Any other object is taken as its ``str()``.
    """
    if chunk is None:
        return StreamChunk()
    if isinstance(chunk, bytes | bytearray | memoryview):
        chunk = bytes(chunk).decode("utf-8", errors="replace")
    if isinstance(chunk, Mapping):
        return _envelope(chunk) or StreamChunk(content=_text_of(chunk))
    text = chunk if isinstance(chunk, str) else _text_of(chunk)
    if text.lstrip().startswith("{"):
        try:
            decoded = json.loads(text)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict) and (envelope := _envelope(decoded)) is not None:
            return envelope
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("non-JSON stream chunk, taken as text: %r", text[:_PREVIEW])
    return StreamChunk(content=text)


class StreamAccumulator:
    """The state of a stream so far: content, thinking and tool calls.

    Feed every chunk to `feed`; read ``content``, ``thinking`` and ``tool_calls`` at any
    point (for a live view) or at the end. Bytes chunks are decoded incrementally, so a
    character split across two chunks arrives whole.
    """

    def __init__(self) -> None:
        self.content = ""
        self.thinking = ""
        self.tool_calls: list[dict[str, Any]] = []
        self.envelope_chunks = 0
        self.text_chunks = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._by_index: dict[int, dict[str, Any]] = {}

    def feed(self, chunk: object) -> StreamChunk:
        """Add one chunk to the state and return it as read; never raises."""
        if isinstance(chunk, bytes | bytearray | memoryview):
            chunk = self._decoder.decode(bytes(chunk))
            if not chunk:
                return StreamChunk()
        parsed = parse_stream_chunk(chunk)
        if parsed.is_envelope:
            self.envelope_chunks += 1
        elif parsed.content:
            self.text_chunks += 1
        self.content += parsed.content
        self.thinking += parsed.thinking
        if parsed.tool_calls is not None:
            self._add_tool_calls(parsed.tool_calls)
        return parsed

    def _add_tool_calls(self, calls: tuple[dict[str, Any], ...]) -> None:
        if calls and all(_index_of(call) is not None for call in calls):
            for call in calls:
                index = _index_of(call)
                assert index is not None
                slot = self._by_index.get(index)
                if slot is None:
                    slot = self._by_index[index] = {}
                _merge_delta(slot, call)
            self.tool_calls = [self._by_index[i] for i in sorted(self._by_index)]
        else:
            self._by_index = {}
            self.tool_calls = [dict(call) for call in calls]


def _envelope(data: Mapping[Any, Any]) -> StreamChunk | None:
    if not _ENVELOPE_KEYS.intersection(key for key in data if isinstance(key, str)):
        return None
    calls = data.get("tool_calls")
    tool_calls: tuple[dict[str, Any], ...] | None = None
    if isinstance(calls, list | tuple):
        tool_calls = tuple(dict(call) for call in calls if isinstance(call, Mapping))
    elif isinstance(calls, Mapping):
        tool_calls = (dict(calls),)
    return StreamChunk(
        content=_text_of(data.get("content")),
        thinking=_text_of(data.get("thinking")),
        tool_calls=tool_calls,
        is_envelope=True,
    )


def _text_of(value: object) -> str:
    """Text from a content value: a string, a list of text parts, or anything else."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "".join(_text_of(part) for part in value)
    if isinstance(value, Mapping):
        text = value.get("text")
        if isinstance(text, str):
            return text
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (ValueError, TypeError, RecursionError):
            return ""
    try:
        return str(value)
    except Exception:  # a broken __str__ must not break the stream
        return ""


def _index_of(call: Mapping[str, Any]) -> int | None:
    index = call.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def _merge_delta(slot: dict[str, Any], delta: Mapping[str, Any]) -> None:
    for key, value in delta.items():
        if key == "function" and isinstance(value, Mapping):
            function = slot.setdefault("function", {})
            if not isinstance(function, dict):
                function = slot["function"] = {}
            for name, part in value.items():
                if name == "arguments" and isinstance(part, str):
                    previous = function.get("arguments")
                    function["arguments"] = (previous if isinstance(previous, str) else "") + part
                elif part is not None:
                    function[name] = part
        elif value is not None:
            slot[key] = value
