"""Conversation hygiene and tool-response statistics, per provider.

Every provider rejects a history in which a tool result answers no call, or a call is
left unanswered; a history cut to fit a context window produces both. `clean_history`
drops them, per the provider's own pairing rule:

| provider | a call is answered by | within |
| --- | --- | --- |
| ``openai`` | a ``tool`` message with its ``tool_call_id`` | the tool messages right after it |
| ``openai-responses`` | a ``function_call_output`` with its ``call_id`` | any later item |
| ``anthropic`` | a ``tool_result`` block with its ``tool_use_id`` | the next message |
| ``gemini`` | a ``functionResponse`` part (by ``id``, else by ``name``) | the next content |

A message left with nothing in it is dropped too, so no history starts with a tool
result. Call `clean_history` on the history you are about to send: a call at the end
that has no result yet is unmatched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

import msgspec

from nativemcp.protocol import extract_error_info

from ._provider import Provider, check_provider
from ._render import EMPTY_RESULT_TEXT, Kind

__all__ = ["ResponseStats", "clean_history", "response_stats"]

logger = logging.getLogger("nativemcp.proxy.llm")

_RESPONSES_CALLS: Final = frozenset({"function_call", "custom_tool_call"})
_RESPONSES_RESULTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_DECODER: Final = json.JSONDecoder()


class _Ref(NamedTuple):
    """A call or a result: where it is (message, block or None for the whole message)."""

    message: int
    block: int | None
    id: str | None
    name: str | None = None

    def answers(self, call: _Ref) -> bool:
        if self.id is not None and call.id is not None:
            return self.id == call.id
        # Gemini calls and responses without ids pair by function name.
        return self.name is not None and self.name == call.name


def clean_history(history: Sequence[object], *, provider: Provider) -> list[dict[str, Any]]:
    """``history`` without orphan tool results and unmatched tool calls.

    Entries are dicts in the provider's wire shape, or the SDK's message objects
    (pydantic models), read as ``model_dump(mode="json", exclude_none=True)``. The
    input is not changed: the result holds shallow copies.

    Raises:
        UnknownProviderError: ``provider`` is not one of `PROVIDERS`.
        TypeError: an entry is neither a mapping nor a pydantic model.
    """
    provider = check_provider(provider)
    messages = [_as_dict(entry) for entry in history]
    refs = [_refs(provider, index, message) for index, message in enumerate(messages)]
    dropped = _unpaired(provider, refs)
    cleaned: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        blocks = {ref.block for ref in dropped if ref.message == index}
        if not blocks:
            cleaned.append(message)
        elif None not in blocks and (kept := _without(provider, message, blocks)) is not None:
            cleaned.append(kept)
    if dropped:
        logger.debug(
            "%s history: dropped %d orphan tool results / unmatched tool calls, %d -> %d",
            provider,
            len(dropped),
            len(messages),
            len(cleaned),
        )
    return cleaned


def _as_dict(entry: object) -> dict[str, Any]:
    if isinstance(entry, Mapping):
        return dict(entry)
    dump = getattr(entry, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(
        f"a history entry must be a mapping or an SDK model object, got {type(entry).__name__}"
    )


def _refs(
    provider: Provider, index: int, message: Mapping[str, Any]
) -> tuple[list[_Ref], list[_Ref]]:
    """The calls and the results in one message."""
    calls: list[_Ref] = []
    results: list[_Ref] = []
    if provider == "openai":
        if message.get("role") == "tool":
            results.append(_Ref(index, None, _str(message.get("tool_call_id"))))
        elif message.get("role") == "assistant":
            for block, call in _items(message.get("tool_calls")):
                calls.append(_Ref(index, block, _str(call.get("id"))))
    elif provider == "openai-responses":
        if message.get("type") in _RESPONSES_CALLS:
            calls.append(_Ref(index, None, _str(message.get("call_id"))))
        elif message.get("type") in _RESPONSES_RESULTS:
            results.append(_Ref(index, None, _str(message.get("call_id"))))
    elif provider == "anthropic":
        for block, part in _items(message.get("content")):
            if part.get("type") == "tool_use":
                calls.append(_Ref(index, block, _str(part.get("id"))))
            elif part.get("type") == "tool_result":
                results.append(_Ref(index, block, _str(part.get("tool_use_id"))))
    else:
        for block, part in _items(message.get("parts")):
            function_call = _gemini_field(part, "functionCall", "function_call")
            if isinstance(function_call, Mapping):
                calls.append(_gemini_ref(index, block, function_call))
            response = _gemini_field(part, "functionResponse", "function_response")
            if isinstance(response, Mapping):
                results.append(_gemini_ref(index, block, response))
    return calls, results


def _unpaired(provider: Provider, refs: list[tuple[list[_Ref], list[_Ref]]]) -> list[_Ref]:
    """The calls and results that the provider's pairing rule leaves alone."""
    dropped: list[_Ref] = []
    open_calls: list[_Ref] = []
    for calls, results in refs:
        if provider == "openai" and not results:
            # Any message but a tool message ends the previous assistant's tool turn.
            dropped += open_calls
            open_calls = []
        for result in results:
            match = next((call for call in open_calls if result.answers(call)), None)
            if match is None:
                dropped.append(result)
            else:
                open_calls.remove(match)
        if provider in ("anthropic", "gemini"):
            # Results belong in the very next message; later ones are orphans.
            dropped += open_calls
            open_calls = []
        open_calls += calls
    return dropped + open_calls


def _without(
    provider: Provider, message: Mapping[str, Any], blocks: set[int | None]
) -> dict[str, Any] | None:
    """A copy of ``message`` without the given blocks, or None when nothing is left."""
    key = {"openai": "tool_calls", "anthropic": "content", "gemini": "parts"}[provider]
    items = message.get(key)
    assert isinstance(items, list | tuple)
    kept = [item for index, item in enumerate(items) if index not in blocks]
    copy = dict(message)
    if kept:
        copy[key] = kept
        return copy
    if provider != "openai":
        return None
    del copy[key]
    # An assistant message that only made the dropped calls says nothing.
    return copy if copy.get("content") else None


def _items(value: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                yield index, item


def _gemini_field(part: Mapping[str, Any], camel: str, snake: str) -> object:
    return part.get(camel, part.get(snake))


def _gemini_ref(index: int, block: int, function: Mapping[str, Any]) -> _Ref:
    return _Ref(index, block, _str(function.get("id")), _str(function.get("name")))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class ResponseStats(msgspec.Struct, frozen=True, kw_only=True):
    """How the tool results in a conversation read: JSON, text, errors, empty."""

    total: int = 0
    json: int = 0
    text: int = 0
    error: int = 0
    empty: int = 0


def response_stats(history: Sequence[object], *, provider: Provider) -> ResponseStats:
    """Count the tool results in ``history`` by kind, and log the counts at debug level.

    A result is an error when the provider's message says so (Anthropic ``is_error``,
    Gemini's ``error`` key, nativemcp's ``{"error": …}`` text) or when its text is an
    MCP error text (``Error: …``, ``MCP error -32602: …``, read by
    `extract_error_info`); JSON when its text is a JSON object or array; empty when it
    has no text; text otherwise.

    Raises:
        UnknownProviderError: ``provider`` is not one of `PROVIDERS`.
        TypeError: an entry is neither a mapping nor a pydantic model.
    """
    provider = check_provider(provider)
    counts = dict.fromkeys(("json", "text", "error", "empty"), 0)
    for kind in _result_kinds(provider, [_as_dict(entry) for entry in history]):
        counts[kind] += 1
    stats = ResponseStats(total=sum(counts.values()), **counts)
    logger.debug("%s tool response statistics: %s", provider, stats)
    return stats


def _result_kinds(provider: Provider, history: list[dict[str, Any]]) -> Iterator[Kind]:
    for message in history:
        if provider == "openai" and message.get("role") == "tool":
            yield _text_kind(_joined(message.get("content")))
        elif provider == "openai-responses" and message.get("type") in _RESPONSES_RESULTS:
            yield _text_kind(_joined(message.get("output")))
        elif provider == "anthropic":
            for _, block in _items(message.get("content")):
                if block.get("type") == "tool_result":
                    kind = _text_kind(_joined(block.get("content")))
                    yield "error" if block.get("is_error") is True else kind
        elif provider == "gemini":
            for _, part in _items(message.get("parts")):
                response = _gemini_field(part, "functionResponse", "function_response")
                if isinstance(response, Mapping):
                    yield _gemini_kind(response.get("response"))


def _gemini_kind(response: object) -> Kind:
    if not isinstance(response, Mapping) or not response:
        return "empty"
    if "error" in response and "output" not in response:
        return "error"
    if set(response) <= {"output", "attachments"}:
        output = response.get("output")
        if output is None:
            return "text" if response.get("attachments") else "empty"
        return _text_kind(output) if isinstance(output, str) else "json"
    return "json"


def _joined(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        text for _, part in _items(content) if isinstance(text := part.get("text"), str)
    )


def _text_kind(text: str) -> Kind:
    stripped = text.strip()
    if not stripped or stripped == EMPTY_RESULT_TEXT:
        return "empty"
    if stripped[0] in "{[":
        try:
            value, end = _DECODER.raw_decode(stripped)
        except (ValueError, RecursionError):
            value, end = None, 0
        # JSON, possibly followed by the notes `tool_result_message` adds for images etc.
        if stripped[end:] == "" or stripped[end:].startswith("\n["):
            if isinstance(value, dict) and set(value) == {"error"}:
                return "error"
            if isinstance(value, dict | list):
                return "json"
    info = extract_error_info(stripped)
    if info.code is not None or info.message != stripped:
        return "error"
    return "text"
