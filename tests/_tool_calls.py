"""A model's tool call as a provider's SDK gives it, for the agent-loop tests."""

from __future__ import annotations

import json
from typing import Any


def openai_tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI Chat Completions ``tool_calls[i]`` (id ``call_1``) calling ``name``."""
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
