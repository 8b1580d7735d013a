"""A tool's definition, built from its function: the arguments type, the input and
output JSON Schemas, and the ``Tool`` that ``tools/list`` shows (`build_spec`)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from nativemcp.protocol import NativeMCPResponse, Tool, ToolAnnotations, validate_tool_name
from nativemcp.protocol.wire import RETURN_TYPE_META_KEY, describe_type

from ._context import Context

__all__ = ["Renderer", "ToolFunction", "ToolSpec", "build_spec"]

ToolFunction = Callable[..., Any]
"""A tool implementation: a sync or async function with annotated parameters."""

Renderer = Callable[[Any], str]
"""Turns a tool's returned value into the text the model reads."""

_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One declared tool: its function, how it runs, and its definition."""

    name: str
    fn: ToolFunction
    is_async: bool
    inline: bool
    args_type: type[msgspec.Struct]
    """One field per parameter (the `Context` one aside), named as the parameter."""
    context_param: str | None
    value_type: Any
    renderer: Renderer | None
    definition: Tool


def _schema_of(type_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema of ``type_`` at the top level, and the ``$defs`` it still needs."""
    (schema,), components = msgspec.json.schema_components([type_], ref_template="#/$defs/{name}")
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        # A recursive type still refers to its own definition: keep it in $defs then.
        if f'"{ref}"'.encode() in msgspec.json.encode(components):
            schema = dict(components[name])
        else:
            schema = components.pop(name)
    return schema, components


def _with_defs(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    out = {"$schema": _SCHEMA_DIALECT, **schema}
    if defs:
        out["$defs"] = defs
    return out


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def _arguments_of(
    fn: ToolFunction, tool_name: str, hints: dict[str, Any]
) -> tuple[type[msgspec.Struct], dict[str, Any], str | None]:
    """The struct that validates ``fn``'s arguments, its JSON Schema, and the name of the
    parameter that takes the call's `Context` (None when there is none)."""
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if annotation is Context:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {tool_name!r}: *args/**kwargs are not supported")
        if annotation is inspect.Parameter.empty:
            raise ValueError(f"tool {tool_name!r}: parameter {param.name!r} needs a type")
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, annotation))
        else:
            fields.append((param.name, annotation, param.default))
    args_type = msgspec.defstruct(
        f"{tool_name}_arguments", fields, kw_only=True, forbid_unknown_fields=True
    )
    try:
        input_schema, input_defs = _schema_of(args_type)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tool {tool_name!r}: no JSON Schema for its parameters: {exc}") from exc
    input_schema.pop("title", None)
    return args_type, _with_defs(input_schema, input_defs), context_param


def _result_of(tool_name: str, hints: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """The type of the value a tool returns (unwrapped from `NativeMCPResponse[T]`) and
    its output JSON Schema (an object; None for text or an untyped result)."""
    value_type = hints.get("return", Any)
    if typing.get_origin(value_type) is NativeMCPResponse:
        value_type = typing.get_args(value_type)[0]
    elif value_type is NativeMCPResponse:
        value_type = Any
    output_schema: dict[str, Any] | None = None
    if value_type not in (Any, None, type(None), str):
        try:
            schema, defs = _schema_of(value_type)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tool {tool_name!r}: no JSON Schema for its result: {exc}") from exc
        if not _is_object_schema(schema):
            schema = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
            }
        output_schema = _with_defs(schema, defs)
    return value_type, output_schema


def build_spec(
    fn: ToolFunction,
    name: str | None,
    title: str | None,
    description: str | None,
    render: Renderer | None,
    annotations: ToolAnnotations | None,
    inline: bool,
) -> ToolSpec:
    """The spec of tool function ``fn`` with the decorator's options.

    Raises:
        ValueError: a parameter lacks an annotation, the parameters or the result have
            no JSON Schema, or the name is invalid.
    """
    tool_name = validate_tool_name(name or fn.__name__)
    hints = typing.get_type_hints(fn, include_extras=True)
    args_type, input_schema, context_param = _arguments_of(fn, tool_name, hints)
    value_type, output_schema = _result_of(tool_name, hints)
    meta: dict[str, Any] | None = None
    descriptor = describe_type(value_type)
    if descriptor is not None:
        meta = {RETURN_TYPE_META_KEY: descriptor}
    definition = Tool(
        name=tool_name,
        title=title,
        description=description or inspect.getdoc(fn) or None,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        meta=meta,
    )
    return ToolSpec(
        name=tool_name,
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn),
        inline=inline,
        args_type=args_type,
        context_param=context_param,
        value_type=value_type,
        renderer=render,
        definition=definition,
    )
