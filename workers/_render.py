"""The default text a tool result shows the model when its server supplies no renderer.

Readable, not JSON: nested fields indented as ``name: value`` lines, lists numbered.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["render_default"]

_MAX_SCALAR: Final = 500


def _scalar(value: Any) -> str:
    text = str(value) if not isinstance(value, str) else value
    if len(text) > _MAX_SCALAR:
        return text[:_MAX_SCALAR] + f"… ({len(text)} characters)"
    return text


def _flat(value: dict[str, Any]) -> bool:
    return all(not isinstance(item, dict | list) or not item for item in value.values())


def _pairs(value: dict[str, Any]) -> str:
    return ", ".join(
        f"{key}: {_scalar(item) if item != [] else '(none)'}" for key, item in value.items()
    )


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
            if isinstance(item, dict) and item and _flat(item):
                # A flat record reads best (and renders fastest) as one line.
                out.append(f"{indent}{number}. {_pairs(item)}")
            elif isinstance(item, dict | list) and item:
                out.append(f"{indent}{number}.")
                out.extend(_lines(item, indent + "   "))
            else:
                out.append(f"{indent}{number}. {_scalar(item)}")
        return out
    return [f"{indent}{_scalar(value)}"]


def render_default(tool_name: str, value: Any) -> str:
    """Readable text for ``value``, headed by the tool's name."""
    builtins = msgspec.to_builtins(value, str_keys=True)
    if isinstance(builtins, str):
        return builtins
    if isinstance(builtins, list):
        head = f"{tool_name}: {len(builtins)} item{'s' if len(builtins) != 1 else ''}"
        return "\n".join([head, *_lines(builtins, "")])
    return "\n".join([f"{tool_name} result:", *_lines(builtins, "  ")])
