"""The two meta-tools a model gets instead of every definition: ``search_tools`` and
``call_tool``.

``search_tools(query, limit?)`` answers, for each match, its full name, what it does
and its parameters, in a few lines of text (and the matches as ``structuredContent``);
``call_tool(name, arguments)`` calls a tool of the catalog by that full name. Both the
MCP boundary (``serve --tool-search``) and the agent loop (``tool_definitions(provider,
search=True)``) offer these two, read their arguments with `read_search` /
`read_call`, and answer a search with `search_response`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from nativemcp.protocol import (
    ArgumentsError,
    NativeMCPResponse,
    Tool,
    quoted_name,
    structured_response,
)

from ._index import MAX_LIMIT, ToolMatch, check_limit

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "CALL_TOOL",
    "META_TOOLS",
    "SEARCH_TOOLS",
    "SearchAnswer",
    "deferred_for_anthropic",
    "read_call",
    "read_search",
    "search_response",
]

SEARCH_TOOLS: Final = "search_tools"
"""The meta-tool that searches the catalog."""
CALL_TOOL: Final = "call_tool"
"""The meta-tool that calls a tool of the catalog by its full name."""
_PARAMETER_CHARS: Final = 80
"""The longest parameter description a search answer shows."""

META_TOOLS: Final = (
    Tool(
        name=SEARCH_TOOLS,
        title="Search tools",
        description=(
            "Find the tools for a task among every tool available. Describe the task in a "
            "few words (any language); the answer lists the best tools with their full "
            f"name, what they do and their parameters. Then run one with {CALL_TOOL}."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "what you want to do, in a few words",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": 5,
                    "description": "how many tools to list (default 5)",
                },
            },
            "required": ["query"],
        },
    ),
    Tool(
        name=CALL_TOOL,
        title="Call a tool",
        description=(
            f"Run a tool found with {SEARCH_TOOLS}: its full name, and its arguments as "
            "its parameters say. Answers what the tool answers."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": f"the tool's full name, as {SEARCH_TOOLS} gave it",
                },
                "arguments": {
                    "type": "object",
                    "description": "the tool's arguments",
                    "additionalProperties": True,
                },
            },
            "required": ["name"],
        },
    ),
)
"""The two meta-tools' definitions, as ``tools/list`` gives them."""


ANTHROPIC_TOOL_SEARCH: Final = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's own tool search tool (BM25 variant), which finds deferred definitions on
Anthropic's side."""


def deferred_for_anthropic(definitions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic tool definitions marked ``defer_loading``, behind Anthropic's tool search
    tool: the model sees the search tool, and Claude loads the definitions it finds."""
    return [dict(ANTHROPIC_TOOL_SEARCH), *({**d, "defer_loading": True} for d in definitions)]


class SearchAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What ``search_tools`` answers, as ``structuredContent``: the query, how many
    tools were searched, and the matches, best first."""

    query: str
    searched: int
    matches: list[ToolMatch]


def read_search(arguments: Mapping[str, Any] | None) -> tuple[str, int]:
    """The query and limit of a ``search_tools`` call.

    Raises:
        ArgumentsError: no query string, or a limit that is not 1 to `MAX_LIMIT`.
    """
    arguments = arguments or {}
    query = arguments.get("query")
    if not isinstance(query, str):
        raise ArgumentsError(f"{SEARCH_TOOLS} needs 'query', a string saying what to do")
    limit = arguments.get("limit", 5)
    try:
        return query, check_limit(limit)
    except ValueError as exc:
        raise ArgumentsError(f"{SEARCH_TOOLS}: {exc}") from exc


def read_call(arguments: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The full name and the arguments of a ``call_tool`` call.

    Raises:
        ArgumentsError: no name string, or arguments that are not an object.
    """
    arguments = arguments or {}
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        raise ArgumentsError(
            f"{CALL_TOOL} needs 'name', the full name of a tool {SEARCH_TOOLS} found"
        )
    given = arguments.get("arguments")
    if given is None:
        return name, {}
    if not isinstance(given, Mapping):
        raise ArgumentsError(
            f"{CALL_TOOL}: 'arguments' for {quoted_name(name)} must be an object, "
            f"not {type(given).__name__}"
        )
    return name, dict(given)


def _type_of(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind if k != "null") or "any"
    if isinstance(kind, str):
        if kind == "array" and isinstance(spec.get("items"), Mapping):
            return f"{_type_of(spec['items'])}[]"
        return kind
    if "enum" in spec and isinstance(spec["enum"], list):
        return "|".join(repr(v) for v in spec["enum"][:6])
    for key in ("anyOf", "oneOf"):
        branches = spec.get(key)
        if isinstance(branches, list):
            kinds = [_type_of(b) for b in branches if isinstance(b, Mapping)]
            return "|".join(k for k in kinds if k != "null") or "any"
    return "any"


def parameters_line(schema: Mapping[str, Any]) -> str:
    """A tool's parameters in one line: ``name: type`` (``?`` when optional), each with
    its description cut short."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "no parameters"
    required = set(schema.get("required") or ())
    parts = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        part = f"{name}{'' if name in required else '?'}: {_type_of(spec)}"
        if isinstance(spec.get("enum"), list) and spec.get("type") is not None:
            part += f" ({', '.join(str(v) for v in spec['enum'][:6])})"
        description = spec.get("description")
        if isinstance(description, str) and description.strip():
            text = " ".join(description.split())
            if len(text) > _PARAMETER_CHARS:
                text = text[: _PARAMETER_CHARS - 1].rstrip() + "…"
            part += f" ({text})"
        parts.append(part)
    return "; ".join(parts)


def search_text(answer: SearchAnswer) -> str:
    """The answer as the model reads it: one block of three lines or fewer per match."""
    if not answer.matches:
        return (
            f"No tool matches {answer.query!r} among {answer.searched} tools. "
            "Try other words: what the tool does, or what it works on."
        )
    count = len(answer.matches)
    lines = [
        f"{count} tool{'s' if count != 1 else ''} for {answer.query!r} "
        f"(of {answer.searched}), best first:"
    ]
    for rank, match in enumerate(answer.matches, 1):
        lines.append(f"{rank}. {match.name}: {match.description or '(no description)'}")
        lines.append(f"   {parameters_line(match.input_schema)}")
    lines.append(f"Run one with {CALL_TOOL}(name, arguments).")
    return "\n".join(lines)


def search_response(
    query: str, matches: Sequence[ToolMatch], searched: int
) -> NativeMCPResponse[SearchAnswer]:
    """A ``search_tools`` result: the text above, the `SearchAnswer` as structured
    content."""
    answer = SearchAnswer(query=query, searched=searched, matches=list(matches))
    return structured_response(search_text(answer), answer)
