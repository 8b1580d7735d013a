"""The default text a tool result shows the model when its server supplies no renderer.

Readable, not JSON: nested fields indented as ``name: value`` lines, lists numbered.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["render_builtins", "render_default"]

_MAX_SCALAR: Final = 500


def _scalar(value: Any) -> str:
    text = str(value) if not isinstance(value, str) else value
    if len(text) > _MAX_SCALAR:
        return text[:_MAX_SCALAR] + f"… ({len(text)} characters)"
    return text


def _record_line(value: dict[str, Any]) -> str | None:
    """A flat record as one ``key: value, ...`` line; None when a field is nested."""
    parts: list[str] = []
    append = parts.append  # the hot loop of every list result: keep it lean
    for key, item in value.items():
        kind = item.__class__
        if kind is str:
            if len(item) > _MAX_SCALAR:
                item = _scalar(item)
        elif kind is dict or kind is list:
            if item:
                return None
            item = "(none)" if kind is list else "(empty)"
        append(f"{key}: {item}")
    return ", ".join(parts)


def _lines(value: Any, indent: str) -> list[str]:
    if isinstance(value, dict):
        if not value:
            return [f"{indent}(empty)"]
        out: list[str] = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{indent}{key}:")
                out.extend(_lines(item, indent + "  "))
            else:
                out.append(f"{indent}{key}: {_scalar(item) if item != [] else '(none)'}")
        return out
    if isinstance(value, list):
        if not value:
            return [f"{indent}(none)"]
        out = []
        for number, item in enumerate(value, 1):
            # A flat record reads best (and renders fastest) as one line.
            line = _record_line(item) if isinstance(item, dict) and item else None
            if line is not None:
                out.append(f"{indent}{number}. {line}")
            elif isinstance(item, dict | list) and item:
                out.append(f"{indent}{number}.")
                out.extend(_lines(item, indent + "   "))
            else:
                out.append(f"{indent}{number}. {_scalar(item)}")
        return out
    return [f"{indent}{_scalar(value)}"]


def render_default(tool_name: str, value: Any) -> str:
    """Readable text for ``value``, headed by the tool's name."""
    return render_builtins(tool_name, msgspec.to_builtins(value, str_keys=True))


def render_builtins(tool_name: str, builtins: Any) -> str:
    """`render_default` for a value already in JSON form (`msgspec.to_builtins`)."""
    if isinstance(builtins, str):
        return builtins
    if isinstance(builtins, list):
        head = f"{tool_name}: {len(builtins)} item{'s' if len(builtins) != 1 else ''}"
        return "\n".join([head, *_lines(builtins, "")])
    return "\n".join([f"{tool_name} result:", *_lines(builtins, "  ")])
