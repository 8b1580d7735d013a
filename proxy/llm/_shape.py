"""A JSON value over its budget, as the model reads it: its shape, never half an object.

The whole value is kept as lines (`json_lines`): a list one item to a line (JSON Lines),
an object one key to a line and the items of each of its lists one to a line, so
``read_result``'s line ranges are item ranges. What the model reads (`summarise`) is the
value with every list cut to its first items, followed by a string that says how many
more there are, what they are and which lines of the kept result hold them; long strings
end at a whole word with how many characters are left out; what lies deeper than a few
levels is named by its type. The most items per list that fit the budget are shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ._budget import RESULTS_URI, fit_lines, human_size, largest_fitting
from ._tokens import count_tokens

__all__ = ["dump_json", "json_lines", "summarise"]

_STRING_CAP: Final = 160
"""The characters of a string a summary shows (at a whole word)."""
_DEPTH: Final = 4
"""How deep a summary goes before it names a value by its type."""
_WORD_END: Final = re.compile(r"\s+")


def dump_json(value: Any) -> str:
    """Compact UTF-8 JSON (Korean stays Korean, not ``\\uXXXX``)."""
    return msgspec.json.encode(value).decode()


def json_lines(value: Any) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """``value`` one key or list item to a line, and the 1-based lines (first, last)
    holding each top-level list's items, by key ("" for a top-level list).

    A list is JSON Lines (line N is item N); an object is valid JSON."""
    if isinstance(value, list):
        items = [dump_json(item) for item in value]
        return items, {"": (1, len(items))} if items else {}
    if not isinstance(value, dict):
        return [dump_json(value)], {}
    lines = ["{"]
    spans: dict[str, tuple[int, int]] = {}
    keys = list(value)
    for number, key in enumerate(keys):
        comma = "," if number < len(keys) - 1 else ""
        item = value[key]
        name = dump_json(str(key))
        if isinstance(item, list) and len(item) > 1:
            inner = [dump_json(x) for x in item]
            spans[str(key)] = (len(lines) + 2, len(lines) + 1 + len(inner))
            lines.extend(_joined(f"{name}: [", inner, f"]{comma}"))
        else:
            lines.append(f"{name}: {dump_json(item)}{comma}")
    lines.append("}")
    return lines, spans


def _joined(opening: str, items: list[str], closing: str) -> list[str]:
    return [opening, *(f"{item}," for item in items[:-1]), *items[-1:], closing]


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)
        named = ", ".join(str(key) for key in keys[:8])
        return f"object with {named}{', …' if len(keys) > 8 else ''}" if keys else "object"
    if isinstance(value, list):
        return f"list of {len(value):,}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _short(text: str) -> str:
    if len(text) <= _STRING_CAP:
        return text
    ends = [m.start() for m in _WORD_END.finditer(text, 0, _STRING_CAP + 1)]
    end = ends[-1] if ends else _STRING_CAP
    return f"{text[:end]}… ({len(text) - end:,} more characters)"


def _summarised(value: Any, k: int, depth: int, span: tuple[int, int] | None = None) -> Any:
    if isinstance(value, str):
        return _short(value)
    if depth >= _DEPTH and isinstance(value, (dict, list)) and value:
        return f"({_type_name(value)})"
    if isinstance(value, dict):
        return {key: _summarised(item, k, depth + 1) for key, item in value.items()}
    if isinstance(value, list) and len(value) > k:
        shown = [_summarised(item, k, depth + 1) for item in value[:k]]
        more = len(value) - k
        note = f"… {more:,} more item{'s' if more != 1 else ''}"
        kinds = {_type_name(item) for item in value[k : k + 50]}
        if len(kinds) == 1:
            kind = kinds.pop()
            article = "an" if kind[0] in "aeiou" else "a"
            note += f", each {article} {kind}" if more > 1 else f": {article} {kind}"
        if span is not None:
            note += f" (lines {span[0] + k:,}-{span[1]:,} of the kept result)"
        return [*shown, note]
    if isinstance(value, list):
        return [_summarised(item, k, depth + 1) for item in value]
    return value


def summarise(value: Any, budget: int, *, result_id: str) -> str:
    """``value`` summarised by shape to fit ``budget``, with the line that says how to
    read the whole (kept under ``result_id``). Never over ``budget``: a value whose
    keys alone are over is shown as whole lines of its kept form."""
    lines, spans = json_lines(value)
    size = sum(len(line.encode()) + 1 for line in lines)

    def shown(k: int) -> str:
        if isinstance(value, dict):
            summary: Any = {
                key: _summarised(item, k, 1, spans.get(str(key))) for key, item in value.items()
            }
        else:
            summary = _summarised(value, k, 0, spans.get(""))
        return f"{dump_json(summary)}\n{_shape_notice(value, k, len(lines), size, result_id)}"

    longest = _longest_list(value)
    fits: Callable[[int], bool] = lambda k: count_tokens(shown(k)) <= budget  # noqa: E731
    if fits(0):
        return shown(largest_fitting(fits, longest))
    return fit_lines(lines, budget, result_id=result_id)


def _longest_list(value: Any, depth: int = 0) -> int:
    if depth > _DEPTH:
        return 0
    if isinstance(value, dict):
        return max((_longest_list(item, depth + 1) for item in value.values()), default=0)
    if isinstance(value, list):
        inner = max((_longest_list(item, depth + 1) for item in value[:50]), default=0)
        return max(len(value), inner)
    return 0


def _shape_notice(value: Any, k: int, lines: int, size: int, result_id: str) -> str:
    what = "object" if isinstance(value, dict) else "list"
    return (
        f"[cut to fit the token budget: a JSON {what} of {human_size(size)} summarised by "
        f"shape, each list to its first {k:,} item{'s' if k != 1 else ''}. The whole value "
        f"is kept as {RESULTS_URI}{result_id} ({lines:,} lines, one key or list item to a "
        f"line): read_result(id={result_id!r}, from_line=N) reads lines from N, "
        f"read_result(id={result_id!r}, query='words') finds the items that hold them]"
    )
