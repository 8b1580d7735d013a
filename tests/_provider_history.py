"""Checks a conversation history against the LLM providers' own SDK message types.

Shared by the tests of history hygiene and of the agent loop (tests/proxy/llm/).
"""

from __future__ import annotations

import itertools
from typing import Any

from anthropic.types import MessageParam
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from nativemcp.proxy.llm import Provider


def _materialise(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _materialise(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_materialise(item) for item in value]


def validate_history(provider: Provider, history: list[dict[str, Any]]) -> None:
    """Fail unless every entry is valid for the provider's SDK message type."""
    if provider == "gemini":
        for content in history:
            genai_types.Content.model_validate(content)
        return
    adapters: dict[str, TypeAdapter[Any]] = {
        "openai": TypeAdapter(ChatCompletionMessageParam),
        "openai-responses": TypeAdapter(ResponseInputItemParam),
        "anthropic": TypeAdapter(MessageParam),
    }
    adapter = adapters[provider]
    for entry in history:
        _materialise(adapter.validate_python(entry))


def validate_turns(provider: Provider, history: list[dict[str, Any]]) -> None:
    """`validate_history`, and for Anthropic and Gemini, whose APIs refuse two turns of
    one role in a row, user and model turns alternating."""
    validate_history(provider, history)
    if provider in ("anthropic", "gemini"):
        roles = [entry["role"] for entry in history]
        assert all(a != b for a, b in itertools.pairwise(roles)), roles
