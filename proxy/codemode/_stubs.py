"""The tools a program may call, as the Python stubs a model reads (`tool_stubs`).

Each tool is one ``async def`` line with typed keyword parameters (from its
``inputSchema``), a return type (from its ``outputSchema``) and its one-line docstring
on the same line. An object type is written ``{key:type}``, the shortest form a model
reads as a dict with those keys, and every signature without the spaces Python's style
puts after ``:`` and ``,`` (a sixth fewer tokens, the same information). An object
shape the stubs repeat (a return type several tools share, an entity both taken and
given) is written once, ``Name={...}``, and named where it recurs. A tool with no
output schema returns ``Any``, and a line above the stubs says what that is (the JSON
in its text, else the text). bench.codemode measures them against the JSON definitions.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from nativemcp.protocol import Tool

__all__ = ["STUB_HEADER", "UNTYPED_NOTE", "schema_type", "tool_stub", "tool_stubs"]

STUB_HEADER: Final = (
    "# await tool(k=v), keywords only; asyncio.gather runs calls at once; a tool error "
    "raises RuntimeError(its text); {k:T} is a dict\n"
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
_KEY_BEFORE: Final = re.compile(r"(\w+):(list\[)?$")
"""The key an object shape is the value of (or the items of), where it recurs."""


def schema_type(schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """A JSON schema as a short Python type (``list[{id:str,size:int}]``)."""
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
        return f"Literal[{','.join(json.dumps(v) for v in schema['enum'])}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            parts = dict.fromkeys(schema_type(s, defs, depth) for s in schema[union])
            return "|".join(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(schema_type({**schema, "type": k}, defs, depth) for k in kind)
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
            return f"dict[str,{schema_type(extra, defs, depth + 1)}]"
        return "dict"
    fields = ",".join(
        f"{key}:{schema_type(value, defs, depth + 1)}" for key, value in properties.items()
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
            params.append(f"{name}:{annotation}")
        else:
            default = (
                properties[key].get("default") if isinstance(properties[key], Mapping) else None
            )
            params.append(f"{name}:{annotation}={_literal(default)}")
    # No `*,`: the header and run_code's description say the tools take keywords only.
    return ",".join(params)


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


def tool_stub(name: str, tool: Tool, returns: str | None = None, params: str | None = None) -> str:
    """One tool as an ``async def`` stub named ``name``, its docstring on the same line;
    a tool with no output schema returns ``Any`` (`UNTYPED_NOTE` says what that is).
    ``returns``, ``params``: the return type and parameters as written (where a shared
    shape is named)."""
    params = _parameters(tool.input_schema) if params is None else params
    returns = returns or _returns(tool)
    doc = _doc(tool)
    body = f'"""{doc}"""' if doc else "..."
    return f"async def {name}({params})->{returns}:{body}\n"


def _objects(text: str) -> Iterable[str]:
    """Every ``{...}`` object shape written in ``text``, nested ones too."""
    opened: list[int] = []
    for at, char in enumerate(text):
        if char == "{":
            opened.append(at)
        elif char == "}" and opened:
            yield text[opened.pop() : at + 1]


def _shape_name(
    shape: str, texts: Iterable[str], titles: Mapping[str, str], taken: set[str]
) -> str:
    """A name for a shape the stubs repeat: its schema's title (a whole return type),
    else the key it is the value of (``source`` → ``Source``; the items of
    ``entities`` → ``Entity``), else ``Result``; numbered when taken."""
    base = titles.get(shape, "")
    for text in texts if not base else ():
        at = text.find(shape)
        found = _KEY_BEFORE.search(text[:at]) if at >= 0 else None
        if found is not None:
            key, items = found.group(1), found.group(2)
            if items and key.endswith("ies"):
                key = key[:-3] + "y"
            elif items and key.endswith("s"):
                key = key[:-1]
            base = key[:1].upper() + key[1:]
            break
    base = base if base.isidentifier() and not keyword.iskeyword(base) else "Result"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    taken.add(name)
    return name


def _name_shapes(
    texts: dict[str, str], titles: Mapping[str, str], taken: set[str]
) -> list[tuple[str, str]]:
    """Name each object shape written two or more times across ``texts`` (changed in
    place to use the names) where naming it is shorter; the definitions, each after
    the shapes it names."""
    found: dict[str, None] = {}
    for text in texts.values():
        found.update(dict.fromkeys(_objects(text)))
    named: list[tuple[str, str]] = []
    for shape in sorted(found, key=len, reverse=True):  # the largest first: fewest names
        uses = sum(text.count(shape) for text in texts.values())
        uses += sum(written.count(shape) for _, written in named)
        if uses < 2 or (uses - 1) * len(shape) <= (uses + 1) * 12:
            continue
        name = _shape_name(shape, [*texts.values(), *(w for _, w in named)], titles, taken)
        for key, text in texts.items():
            texts[key] = text.replace(shape, name)
        named = [(n, w.replace(shape, name)) for n, w in named]
        named.append((name, shape))
    return named[::-1]


def tool_stubs(tools: Mapping[str, Tool], *, header: bool = True) -> str:
    """The stubs of ``tools`` (identifier → tool), after `STUB_HEADER` (``header``; the
    meta-tools carry it in ``run_code``'s description instead) and `UNTYPED_NOTE` when
    one of them has no output schema.

    An object shape two or more of the stubs repeat (every planning tool answers the
    whole plan; a memory tool takes and gives the same entities) is written once,
    ``Name={...}``, and named where it recurs.
    """
    untyped = any(not tool.output_schema for tool in tools.values())
    texts: dict[str, str] = {}
    titles: dict[str, str] = {}
    for name, tool in tools.items():
        texts[f"{name}("] = _parameters(tool.input_schema)
        texts[f"{name})"] = returns = _returns(tool)
        title = (tool.output_schema or {}).get("title")
        if isinstance(title, str) and returns.startswith("{"):
            titles.setdefault(returns, title)
    named = _name_shapes(texts, titles, set(tools))
    lines = [STUB_HEADER if header else "", UNTYPED_NOTE if untyped else ""]
    lines += [f"{alias}={written}\n" for alias, written in named]
    lines += [
        tool_stub(name, tool, texts[f"{name})"], texts[f"{name}("]) for name, tool in tools.items()
    ]
    return "".join(lines)
