"""Attribute access over plain JSON data, for results whose type the caller cannot import.

``result.contents[0].file_name`` works on ``{"contents": [{"fileName": ...}]}``: a
snake_case attribute finds its camelCase key. Item access (``result["contents"]``)
keeps working too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Record", "to_records"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Record(dict[str, Any]):
    """A dict whose keys also read as attributes (snake_case finds camelCase keys)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        camel = _camel(name)
        if camel in self:
            return self[camel]
        raise AttributeError(
            f"result has no field {name!r}; fields: {', '.join(map(str, self)) or '(none)'}"
        )

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *map(str, self)})


def to_records(value: Any) -> Any:
    """``value`` with every dict (at any depth) turned into a `Record`."""
    if isinstance(value, dict):
        return Record({key: to_records(item) for key, item in value.items()})
    if isinstance(value, list):
        return [to_records(item) for item in value]
    return value
