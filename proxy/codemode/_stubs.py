"""The tools a program may call, as the Python stubs a model reads (`tool_stubs`).

Each tool is one ``async def`` line with typed keyword parameters (from its
``inputSchema``), a return type (from its ``outputSchema``) and a one-line docstring.
An object type is written ``{key: type}``, the shortest form a model reads as a dict
with those keys; a tool with no output schema returns ``Any``, and a line above the
stubs says what that is (the JSON in its text, else the text). Several times fewer
tokens than the JSON definitions (bench.codemode measures it).
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping
from typing import Any, Final

from nativemcp.protocol import Tool

__all__ = ["STUB_HEADER", "UNTYPED_NOTE", "schema_type", "tool_stub", "tool_stubs"]

STUB_HEADER: Final = (
    "# await tool(k=v); asyncio.gather runs calls at once; a tool error raises "
    "RuntimeError(its text); {k: T} is a dict\n"
)
"""The line above the stubs: how a program calls a tool and what an error looks like
(kept short: a model reads it with every ``describe_tools``)."""

UNTYPED_NOTE: Final = "# Any: no output schema: the JSON in its text, else the text\n"
"""The line above the stubs when a tool has no output schema: what comes back."""

_SCALARS: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}
_DEPTH: Final = 4
"""How deep an output schema is spelled out; deeper, an object is just ``dict``."""
_DOC_CHARS: Final = 160


def schema_type(schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """A JSON schema as a short Python type (``list[{id: str, size: int}]``)."""
    if not isinstance(schema, Mapping):
        return "Any"
    defs = defs if defs is not None else schema.get("$defs") or schema.get("definitions") or {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return schema_type(target, defs, depth + 1) if depth < _DEPTH else "dict"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    if isinstance(schema.get("enum"), list):
        return f"Literal[{', '.join(json.dumps(v) for v in schema['enum'])}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            parts = dict.fromkeys(schema_type(s, defs, depth) for s in schema[union])
            return " | ".join(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(schema_type({**schema, "type": k}, defs, depth) for k in kind)
    if kind == "array":
        return f"list[{schema_type(schema.get('items'), defs, depth + 1)}]"
    if kind == "object" or "properties" in schema:
        return _object_type(schema, defs, depth)
    return _SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _object_type(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties or depth >= _DEPTH:
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"dict[str, {schema_type(extra, defs, depth + 1)}]"
        return "dict"
    fields = ", ".join(
        f"{key}: {schema_type(value, defs, depth + 1)}" for key, value in properties.items()
    )
    return "{" + fields + "}"


def _parameters(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return ""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    required = set(schema.get("required") or ())
    ordered = sorted(properties, key=lambda key: key not in required)  # required first
    params = []
    for key in ordered:
        name = f"{key}_" if keyword.iskeyword(key) else key
        annotation = schema_type(properties[key], defs)
        if key in required:
            params.append(f"{name}: {annotation}")
        else:
            default = (
                properties[key].get("default") if isinstance(properties[key], Mapping) else None
            )
            params.append(f"{name}: {annotation} = {_literal(default)}")
    return "*, " + ", ".join(params)


def _literal(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value) if isinstance(value, str | int | float) else "..."


def _doc(tool: Tool) -> str:
    """The description's first sentence (across its first paragraph's lines)."""
    text = (tool.description or tool.title or "").strip()
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    end = paragraph.find(". ")
    line = paragraph[: end + 1] if end >= 0 else paragraph
    if len(line) > _DOC_CHARS:
        line = line[: _DOC_CHARS - 1].rstrip() + "…"
    if line and not line.endswith((".", "!", "?", "…")):
        line += "."
    return line.replace('"""', "'''")


def _unwrapped_schema(schema: Mapping[str, Any]) -> Any:
    """The schema of what the program gets: a value the SDK wraps as ``{"result": x}``
    (a list, a number) arrives unwrapped (``structuredResult``, or `unwrap` removing
    the wrapper), so its stub shows ``x``."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and list(properties) == ["result"]:
        inner = properties["result"]
        if isinstance(inner, Mapping) and "$defs" in schema and "$defs" not in inner:
            return {**inner, "$defs": schema["$defs"]}
        return inner
    return schema


def _returns(tool: Tool) -> str:
    schema = tool.output_schema
    return schema_type(_unwrapped_schema(schema)) if schema else "Any"


def tool_stub(name: str, tool: Tool, returns: str | None = None) -> str:
    """One tool as an ``async def`` stub named ``name``; a tool with no output schema
    returns ``Any`` (`UNTYPED_NOTE` says what that is). ``returns``: the return type
    as written (a shared type's name)."""
    params = _parameters(tool.input_schema)
    returns = returns or _returns(tool)
    return f'async def {name}({params}) -> {returns}:\n    """{_doc(tool)}"""\n'


def _type_name(tool: Tool, taken: set[str]) -> str:
    """A name for a return type several stubs share: its schema's title, else
    ``Result``, numbered when taken."""
    title = (tool.output_schema or {}).get("title")
    base = title if isinstance(title, str) and title.isidentifier() else "Result"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    taken.add(name)
    return name


def tool_stubs(tools: Mapping[str, Tool], *, header: bool = True) -> str:
    """The stubs of ``tools`` (identifier → tool), after `STUB_HEADER` (``header``; the
    meta-tools carry it in ``run_code``'s description instead) and `UNTYPED_NOTE` when
    one of them has no output schema.

    A return type two or more of the stubs share (every planning tool answers the whole
    plan) is written once, ``Name = {...}``, and named in each stub.
    """
    untyped = any(not tool.output_schema for tool in tools.values())
    returns = {name: _returns(tool) for name, tool in tools.items()}
    counts: dict[str, int] = {}
    for written in returns.values():
        counts[written] = counts.get(written, 0) + 1
    shared: dict[str, str] = {}
    taken = set(tools)
    for name, tool in tools.items():
        written = returns[name]
        if counts[written] > 1 and written.startswith("{") and written not in shared:
            shared[written] = _type_name(tool, taken)
    lines = [STUB_HEADER if header else "", UNTYPED_NOTE if untyped else ""]
    lines += [f"{alias} = {written}\n" for written, alias in shared.items()]
    lines += [
        tool_stub(name, tool, shared.get(returns[name], returns[name]))
        for name, tool in tools.items()
    ]
    return "".join(lines)
