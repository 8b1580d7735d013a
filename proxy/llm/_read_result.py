"""The ``read_result`` tool: the rest of a result that was cut to its budget.

A cut result's last line names its id and the calls that read on. ``read_result(id,
from_line?, to_line?)`` answers a range of its lines (for a JSON list, items: one to a
line); ``read_result(id, query)`` the passages that hold the query's words, best first
(BM25); ``read_result(id, image=N)`` the original of a scaled-down image. Each text
answer fits the same budget, cut again with the line that says how to read
on. The agent loop offers this tool whenever it has a result budget, and ``serve
--result-budget`` lists it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from nativemcp.protocol import ArgumentsError, NativeMCPResponse, Tool

from ._budget import RESULTS_URI
from ._kept import KeptResults, ReadRequest, read_kept

__all__ = ["READ_RESULT", "READ_RESULT_TOOL", "read_request", "read_result"]

READ_RESULT: Final = "read_result"
"""The name of the tool that reads a kept result."""

READ_RESULT_TOOL: Final = Tool(
    name=READ_RESULT,
    title="Read a kept result",
    description=(
        "Read more of a result cut to fit (its last line gives the id): lines "
        "from_line..to_line, or the passages that hold a query's words, or an image "
        "whole."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "from_line": {"type": "integer", "minimum": 1},
            "to_line": {"type": "integer", "minimum": 1},
            "query": {"type": "string"},
            "top_n": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
            "image": {"type": "integer", "minimum": 1},
        },
        "required": ["id"],
    },
)
"""The tool's definition, as ``tools/list`` gives it."""


def read_request(arguments: Mapping[str, Any] | None) -> ReadRequest:
    """The arguments of a ``read_result`` call; the id may be given as its URI too.

    Raises:
        ArgumentsError: no id string, a line or top_n that is not a whole number, or a
            query that is not a string.
    """
    arguments = arguments or {}
    result_id = arguments.get("id")
    if not isinstance(result_id, str) or not result_id.strip():
        raise ArgumentsError(f"{READ_RESULT} needs 'id', the id a cut result's last line gives")
    result_id = result_id.strip().removeprefix(RESULTS_URI)
    numbers: dict[str, int | None] = {}
    for name, default in (("from_line", 1), ("to_line", None), ("top_n", 5), ("image", None)):
        value = arguments.get(name, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ArgumentsError(f"{READ_RESULT}: {name} must be a whole number, not {value!r}")
        numbers[name] = value
    query = arguments.get("query")
    if query is not None and not isinstance(query, str):
        raise ArgumentsError(f"{READ_RESULT}: query must be a string, not {query!r}")
    return ReadRequest(
        result_id,
        numbers["from_line"] or 1,
        numbers["to_line"],
        query,
        numbers["top_n"] or 5,
        numbers["image"],
    )


def read_result(
    arguments: Mapping[str, Any] | None, *, budget: int, kept: KeptResults | None = None,
    owner: str = "",
) -> NativeMCPResponse[Any]:  # fmt: skip
    """What a ``read_result`` call answers, as a response for `tool_result_message`.

    The answer is text that fits ``budget``, or an original image.

    ``kept`` and ``owner`` as given to `tool_result_message` (None: the shared store).

    Raises:
        ArgumentsError: the arguments are not as `READ_RESULT_TOOL` says.
        ToolError: no such result for ``owner`` (unknown, expired or another's), or a
            line range outside it.
    """
    request = read_request(arguments)
    store = kept if kept is not None else KeptResults.shared()
    result = store.get(request.result_id, owner=owner)
    return read_kept(result, request, budget)
