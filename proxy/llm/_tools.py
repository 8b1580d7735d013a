"""The agent loop's two ends: tool declarations for a model, and running its tool calls.

`tool_declarations` turns the catalog into each provider's tool declarations: names
made to satisfy the provider's own rule (shortened reversibly, the map kept by the
caller), schemas reduced to what the provider accepts. `read_tool_call` reads a tool
call as the provider's SDK gives it (an SDK object or its dict) into one shape.

| provider | declaration |
| --- | --- |
| ``openai`` | ``{"type": "function", "function": {name, description, parameters}}`` |
| ``openai-responses`` | ``{"type": "function", name, description, parameters, strict}`` |
| ``anthropic`` | ``{name, description, input_schema}`` |
| ``gemini`` | a FunctionDeclaration ``{name, description, parameters}`` (Schema subset) |

Names: ``^[a-zA-Z0-9_-]{1,64}$`` for OpenAI and Anthropic, and for Gemini
``^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$``.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from nativemcp.protocol import Tool

from ._provider import Provider

__all__ = ["ToolCall", "declaration", "provider_name", "read_tool_call"]

MAX_NAME: Final = 64
"""The longest function name every provider accepts."""
_OPENAI_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_GEMINI_NAME: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
_MAX_DEPTH: Final = 32
"""How deep a schema is reduced for Gemini before what is below stops at ``OBJECT``."""


class ToolCall(msgspec.Struct, frozen=True):
    """One model tool call, whatever the provider: its id, name and raw arguments.

    ``arguments`` is a dict, or the string the model sent when it is not a JSON object
    (``error`` then says why).
    """

    call_id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None


def provider_name(full_name: str, provider: Provider, taken: Mapping[str, str]) -> str:
    """A name for ``full_name`` that ``provider`` accepts, unique among ``taken``.

    A valid name is kept as is; otherwise characters outside the rule become ``_`` and
    a name too long is cut and ends in a short hash of the full name. ``taken`` maps
    names already given to their full names; the caller keeps it to map back.
    """
    pattern = _GEMINI_NAME if provider == "gemini" else _OPENAI_NAME
    if pattern.fullmatch(full_name) and taken.get(full_name, full_name) == full_name:
        return full_name
    allowed = r"[^a-zA-Z0-9_.:-]" if provider == "gemini" else r"[^a-zA-Z0-9_-]"
    name = re.sub(allowed, "_", full_name)
    if provider == "gemini" and not re.match(r"[a-zA-Z_]", name):
        name = "_" + name
    digest = hashlib.sha256(full_name.encode()).hexdigest()[:8]
    if len(name) > MAX_NAME or taken.get(name, full_name) != full_name:
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def declaration(tool: Tool, name: str, provider: Provider) -> dict[str, Any]:
    """``tool`` as ``provider``'s tool declaration under ``name``."""
    description = tool.description or tool.title or ""
    schema = dict(tool.input_schema or {})
    if provider == "gemini":
        parameters = gemini_schema(schema)
        if parameters.get("type") != "OBJECT":
            parameters = {"type": "OBJECT", "properties": {}}
        gemini: dict[str, Any] = {"name": name, "description": description}
        if parameters.get("properties"):
            gemini["parameters"] = parameters
        return gemini
    parameters = _json_schema(schema)
    if provider == "openai":
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }
    if provider == "openai-responses":
        return {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": False,
        }
    return {"name": name, "description": description, "input_schema": parameters}


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema for OpenAI and Anthropic: an object schema, ``$schema`` dropped."""
    reduced = {key: value for key, value in schema.items() if key != "$schema"}
    if reduced.get("type") != "object":
        reduced = {"type": "object", "properties": {}}
    reduced.setdefault("properties", {})
    return reduced


_GEMINI_KEYS: Final = {
    "description": "description",
    "format": "format",
    "title": "title",
    "minimum": "minimum",
    "maximum": "maximum",
    "minLength": "minLength",
    "maxLength": "maxLength",
    "minItems": "minItems",
    "maxItems": "maxItems",
    "minProperties": "minProperties",
    "maxProperties": "maxProperties",
    "pattern": "pattern",
    "default": "default",
}
_GEMINI_TYPES: Final = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema reduced to Gemini's Schema subset.

    Every local ``$ref`` is inlined first, whatever it points at (``#/$defs/…``,
    ``#/definitions/…``, ``#/properties/…``, ``#``), so a property that reuses another's
    schema keeps its type; ``anyOf`` with a ``null`` branch and ``type: [X, "null"]``
    become ``nullable``, ``const`` becomes a one-value ``enum``, enum values become
    strings, types are upper case, and keys Gemini does not know (``$schema``,
    ``additionalProperties``, ``$defs``...) are dropped.
    """
    return _gemini(schema, schema, 0, frozenset())


def _resolve_pointer(root: Any, ref: str) -> Any:
    """What the local reference ``ref`` (``#`` and a JSON Pointer) names in ``root``, or
    None when it names nothing there (or is not local)."""
    if not ref.startswith("#"):
        return None
    pointer = urllib.parse.unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return None  # a named anchor: nothing in MCP tool schemas uses one
    node = root
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _gemini(
    schema: Any, root: Mapping[str, Any], depth: int, expanding: frozenset[str]
) -> dict[str, Any]:
    """``schema`` reduced; ``expanding`` holds the refs being inlined above it."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {"type": "OBJECT"} if depth > _MAX_DEPTH else {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        local = {k: v for k, v in schema.items() if k != "$ref"}
        target = _resolve_pointer(root, ref)
        if ref in expanding:
            # A recursive type: inlined once per path, then only its type (an inlined
            # tree with two recursive fields would otherwise double at every level).
            kind = target.get("type") if isinstance(target, Mapping) else None
            local = {**local, "type": kind if isinstance(kind, str) else "object"}
            return _gemini(local, root, depth + 1, expanding)
        merged = {**target, **local} if isinstance(target, Mapping) else local
        return _gemini(merged, root, depth + 1, expanding | {ref})
    out: dict[str, Any] = {}
    nullable = False
    kind = schema.get("type")
    if isinstance(kind, list):
        nullable = "null" in kind
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
        if len(kinds) > 1:
            out["anyOf"] = [{"type": _GEMINI_TYPES[k]} for k in kinds if k in _GEMINI_TYPES]
    if isinstance(kind, str) and kind in _GEMINI_TYPES:
        out["type"] = _GEMINI_TYPES[kind]
    for branch_key in ("anyOf", "oneOf"):
        branches = schema.get(branch_key)
        if isinstance(branches, list):
            others = [
                b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")
            ]
            nullable = nullable or len(others) < len(branches)
            if len(others) == 1:
                out.update(_gemini(others[0], root, depth + 1, expanding))
            elif others:
                out["anyOf"] = [_gemini(b, root, depth + 1, expanding) for b in others]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        for part in all_of:
            out.update(_gemini(part, root, depth + 1, expanding))
    for key, target in _GEMINI_KEYS.items():
        if key in schema and not isinstance(schema[key], Mapping | list):
            out[target] = schema[key]
    if "const" in schema:
        out["enum"] = [str(schema["const"])]
    elif isinstance(schema.get("enum"), list):
        values = [v for v in schema["enum"] if v is not None]
        nullable = nullable or len(values) < len(schema["enum"])
        out["enum"] = [str(v) for v in values]
    if "enum" in out:
        out["type"] = "STRING"
        out.pop("format", None)
        out["format"] = "enum"
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {
            str(name): _gemini(value, root, depth + 1, expanding)
            for name, value in properties.items()
        }
        out.setdefault("type", "OBJECT")
        required = schema.get("required")
        if isinstance(required, list):
            out["required"] = [str(r) for r in required if r in properties]
    items = schema.get("items")
    if isinstance(items, Mapping):
        out["items"] = _gemini(items, root, depth + 1, expanding)
        out.setdefault("type", "ARRAY")
    elif out.get("type") == "ARRAY":
        out["items"] = {"type": "STRING"}
    if nullable:
        out["nullable"] = True
    if "default" in out and not isinstance(out["default"], str | int | float | bool):
        out.pop("default")
    return out


def _is_null(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "null"


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def read_tool_call(call: Any, provider: Provider) -> ToolCall:
    """A provider's tool call (SDK object or dict) as a `ToolCall`.

    OpenAI: a ``tool_calls[i]`` (``id``, ``function.name``, ``function.arguments``);
    Responses: a ``function_call`` item (``call_id``, ``name``, ``arguments``);
    Anthropic: a ``tool_use`` block (``id``, ``name``, ``input``); Gemini: a Part with a
    ``function_call`` or the ``FunctionCall`` itself (``id``, ``name``, ``args``).

    Raises:
        ValueError: the object has no tool name (it is not a tool call).
    """
    raw: Any
    if provider == "openai":
        function = _field(call, "function")
        call_id, name = _field(call, "id"), _field(function, "name")
        raw = _field(function, "arguments")
    elif provider == "openai-responses":
        call_id, name, raw = _field(call, "call_id", "id"), _field(call, "name"), None
        raw = _field(call, "arguments")
    elif provider == "anthropic":
        call_id, name, raw = _field(call, "id"), _field(call, "name"), _field(call, "input")
    else:
        inner = _field(call, "function_call", "functionCall")
        function = inner if inner is not None else call
        call_id, name = _field(function, "id"), _field(function, "name")
        raw = _field(function, "args")
    if not isinstance(name, str) or not name:
        raise ValueError(f"not a {provider} tool call (no tool name): {str(call)[:200]}")
    call_id = str(call_id or "")
    if raw is None or raw == "":
        return ToolCall(call_id, name, {})
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
            return ToolCall(
                call_id, name, {}, f"the arguments are not valid JSON ({exc}): {text[:200]}"
            )
    if isinstance(raw, Mapping):
        return ToolCall(call_id, name, dict(raw))
    return ToolCall(
        call_id, name, {}, f"the arguments must be a JSON object, got {type(raw).__name__}"
    )
