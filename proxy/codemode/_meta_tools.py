"""Code mode's three meta-tools: ``search_tools``, ``describe_tools``, ``run_code``.

The model finds tools (``search_tools``, the same search as the tool-search mode,
answered with the identifiers a program calls), reads the ones it picked as Python
stubs (``describe_tools``) and runs a program over them (``run_code``); only what the
program prints, and its last value, come back. The agent loop
(``tool_definitions(provider, code_mode=True)``) and ``serve --code-mode`` offer these
three and answer them with `code_search_response`, `read_describe`, `read_code` and
`code_response`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from nativemcp.protocol import (
    ArgumentsError,
    CodeError,
    NativeMCPResponse,
    Tool,
    structured_response,
    tool_error_response,
)

from ..tool_search import META_TOOLS, SEARCH_TOOLS, SearchAnswer, ToolMatch
from ._result import CodeResult
from ._stubs import STUB_HEADER

__all__ = [
    "CODE_META_TOOLS",
    "DESCRIBE_TOOLS",
    "RUN_CODE",
    "code_response",
    "code_search_response",
    "read_code",
    "read_describe",
]

DESCRIBE_TOOLS: Final = "describe_tools"
"""The meta-tool that gives tools as Python stubs."""
RUN_CODE: Final = "run_code"
"""The meta-tool that runs a program over the tools."""
_VALUE_CHARS: Final = 4000
"""The longest rendering of a program's last value the model reads."""

CODE_META_TOOLS: Final = (
    Tool(
        name=SEARCH_TOOLS,
        title="Search tools",
        description=(
            "Find tools for a task among every tool available: describe it in a few words "
            "(any language). Lists the best by the name a program calls them; read them "
            f"with {DESCRIBE_TOOLS}."
        ),
        input_schema=META_TOOLS[0].input_schema,
    ),
    Tool(
        name=DESCRIBE_TOOLS,
        title="Describe tools",
        description=(
            f"The named tools as typed Python stubs (async functions) to call in {RUN_CODE}."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": f"tool names, as {SEARCH_TOOLS} gave them",
                }
            },
            "required": ["names"],
        },
    ),
    Tool(
        name=RUN_CODE,
        title="Run code",
        description=(
            "Run a sandboxed Python program (no files, network or imports beyond asyncio, "
            f"json, re, math, datetime and the like) awaiting the tools {DESCRIBE_TOOLS} "
            "showed. Only what it prints and its last expression's value come back: print "
            "just what you need.\n" + STUB_HEADER.lstrip("# ")
        ),
        input_schema={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "the program, top-level await allowed"}
            },
            "required": ["code"],
        },
    ),
)
"""The three meta-tools' definitions, as ``tools/list`` gives them."""


def code_search_response(
    query: str, matches: Sequence[ToolMatch], searched: int, names: Mapping[str, str]
) -> NativeMCPResponse[SearchAnswer]:
    """A code-mode ``search_tools`` result: each match by its identifier (``names``:
    full name → identifier) and one line of what it does."""
    answer = SearchAnswer(query=query, searched=searched, matches=list(matches))
    if not matches:
        text = (
            f"No tool matches {query!r} among {searched} tools. "
            "Try other words: what the tool does, or what it works on."
        )
    else:
        # What to do next is in search_tools' description, not repeated in every answer.
        lines = [f"Tools for {query!r} (of {searched}), best first:"]
        lines += [
            f"- {names.get(m.name, m.name)}: {m.description or '(no description)'}" for m in matches
        ]
        text = "\n".join(lines)
    return structured_response(text, answer)


def read_describe(arguments: Mapping[str, Any] | None) -> list[str]:
    """The names of a ``describe_tools`` call.

    Raises:
        ArgumentsError: ``names`` is not a list of strings.
    """
    names = (arguments or {}).get("names")
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ArgumentsError(f"{DESCRIBE_TOOLS} needs 'names', a list of tool names")
    return names


def read_code(arguments: Mapping[str, Any] | None) -> str:
    """The program of a ``run_code`` call.

    Raises:
        ArgumentsError: no ``code`` string.
    """
    code = (arguments or {}).get("code")
    if not isinstance(code, str) or not code.strip():
        raise ArgumentsError(f"{RUN_CODE} needs 'code', the Python program to run")
    return code


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def _after(output: str, text: str) -> str:
    """``text`` on a line of its own after what the program printed."""
    return f"{output}\n{text}" if output and not output.endswith("\n") else output + text


def code_response(outcome: CodeResult | CodeError) -> NativeMCPResponse[Any]:
    """What the model reads of a run: what it printed, then its last value (or the
    error that stopped it, an ``isError`` result); the whole run as structured content
    (output, value, each inner call)."""
    result = outcome if isinstance(outcome, CodeResult) else outcome.result
    if not isinstance(result, CodeResult):
        result = CodeResult(output="")
    calls = [
        {"name": c.name, "duration": round(c.duration, 6), "error": c.error} for c in result.calls
    ]
    if isinstance(outcome, CodeError):
        return tool_error_response(
            _after(result.output, f"Error: {outcome}"),
            structured_content={"output": result.output, "calls": calls},
        )
    text = result.output
    if result.value is not None:
        text = _after(text, _shown(result.value))
    content = {"output": result.output, "value": result.value, "calls": calls}
    return structured_response(text or "(the program printed nothing)", content)
