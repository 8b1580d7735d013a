"""Describing a tool's Python return type so the caller's process can rebuild it.

A worker lists each tool's return type as a small JSON descriptor in the tool's
``_meta``; the proxy resolves it by importing the named module (never by evaluating
text), so ``pool.server("name").tool(...)`` returns the tool's own types, not dicts.
A type that cannot be described or resolved falls back to attribute-access dicts.
"""

from __future__ import annotations

import importlib
import sys
import types
import typing
from typing import Any, Final

__all__ = ["RETURN_TYPE_META_KEY", "describe_type", "resolve_type"]

RETURN_TYPE_META_KEY: Final = "io.github.nativemcp/returnType"
"""The tool ``_meta`` key that holds the return type descriptor."""

_MAIN_ALIASES: Final = frozenset({"__main__", "__mp_main__"})


def describe_type(type_: Any) -> dict[str, Any] | None:
    """A JSON descriptor of ``type_``, or None when it cannot be described by name."""
    if type_ is None or type_ is type(None):
        return {"ref": "builtins:NoneType"}
    if type_ is Any:
        return None
    origin = typing.get_origin(type_)
    if origin is typing.Annotated:
        return describe_type(typing.get_args(type_)[0])
    if origin is not None:
        if origin is types.UnionType:
            origin = typing.Union
        head = describe_type(origin) if origin is not typing.Union else {"ref": "typing:Union"}
        args = [describe_type(arg) for arg in typing.get_args(type_)]
        if head is None or any(arg is None for arg in args):
            return None
        return {"origin": head, "args": args}
    module = getattr(type_, "__module__", None)
    qualname = getattr(type_, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<locals>" in qualname:
        return None
    return {"ref": f"{module}:{qualname}"}


def _resolve_ref(ref: str) -> Any:
    module_name, _, qualname = ref.partition(":")
    if module_name == "builtins" and qualname == "NoneType":
        return type(None)
    if module_name in _MAIN_ALIASES:
        module: Any = sys.modules.get("__main__")
    else:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    value = module
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def resolve_type(descriptor: Any) -> Any:
    """The type a descriptor names, or ``Any`` when it cannot be resolved here."""
    try:
        if not isinstance(descriptor, dict):
            return Any
        if "ref" in descriptor:
            return _resolve_ref(str(descriptor["ref"]))
        origin = resolve_type(descriptor["origin"])
        args = tuple(resolve_type(arg) for arg in descriptor["args"])
        if origin is Any:
            return Any
        if origin is typing.Union:
            return typing.Union[args]  # noqa: UP007 - built from a runtime tuple
        return origin[args if len(args) > 1 else args[0]]
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        return Any
