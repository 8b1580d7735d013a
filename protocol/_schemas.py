"""Tool schemas every client accepts: boolean subschemas in their object form.

JSON Schema lets ``true`` and ``false`` stand for a schema anywhere one is expected
(msgspec writes a fixed-length tuple as ``prefixItems`` plus ``"items": false``), but
strict clients refuse a bare boolean outside the four keywords that have always taken
one (``additionalProperties``, ``unevaluatedProperties``, ``additionalItems``,
``unevaluatedItems``): the MCP Inspector's ``--strict`` lint exits 6 on it. The object
forms mean the same: ``{}`` accepts every value, ``{"not": {}}`` none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from ._types import Tool

__all__ = ["portable_schema", "portable_tool"]

BOOLEAN_KEYWORDS: Final = frozenset(
    {"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
)
"""Keywords whose boolean value every client reads as it is."""

_ONE: Final = BOOLEAN_KEYWORDS | {
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "contentSchema",
}
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NAMED: Final = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
)


def _sub(value: Any, keyword: str | None) -> Any:
    if isinstance(value, bool):
        if keyword in BOOLEAN_KEYWORDS:
            return value
        return {} if value else {"not": {}}
    return portable_schema(value) if isinstance(value, Mapping) else value


def portable_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with each bare ``true``/``false`` subschema in its object form.

    ``true`` becomes ``{}`` and ``false`` ``{"not": {}}``; booleans stay under the four
    keywords made for them. Nothing else changes, and the result validates exactly what
    ``schema`` did."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE:
            if isinstance(value, list):  # draft-07 tuple form of items
                out[key] = [_sub(item, None) for item in value]
            else:
                out[key] = _sub(value, key)
        elif key in _MANY and isinstance(value, list):
            out[key] = [_sub(item, None) for item in value]
        elif key in _NAMED and isinstance(value, Mapping):
            # dependencies' array form (required names) is not a schema: left as it is.
            out[key] = {
                name: sub if isinstance(sub, list) else _sub(sub, None)
                for name, sub in value.items()
            }
        else:
            out[key] = value
    return out


def portable_tool(tool: Tool) -> Tool:
    """``tool`` with portable input and output schemas (itself when they already are)."""
    inputs = portable_schema(tool.input_schema)
    outputs = portable_schema(tool.output_schema) if tool.output_schema is not None else None
    if inputs == tool.input_schema and outputs == tool.output_schema:
        return tool
    return msgspec.structs.replace(tool, input_schema=inputs, output_schema=outputs)
