"""Where a key sits in a JSON text, so an error in a config file can say ``file:line:col``.

The standard ``json`` module reports positions only for syntax errors; a config that
parses but holds a bad entry needs the position of that entry's key. `key_positions`
walks a text that ``json.loads`` already accepted and records where every object key
starts, by its path of keys.
"""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["key_positions", "line_column"]

_SPACE: Final = re.compile(r"[ \t\n\r]*")
_VALUE: Final = json.JSONDecoder()


def line_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text`` (as ``json`` counts them)."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def key_positions(text: str) -> dict[tuple[str, ...], int]:
    """The offset of every object key in ``text``, a valid JSON document, by its path
    (``("mcpServers", "time", "command")``); array items are not descended into."""
    positions: dict[tuple[str, ...], int] = {}
    _walk(text, _SPACE.match(text, 0).end(), (), positions)  # type: ignore[union-attr]
    return positions


def _skip(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def _walk(text: str, pos: int, path: tuple[str, ...], out: dict[tuple[str, ...], int]) -> int:
    """Record the keys of the value at ``pos``; return the offset just after it."""
    if text[pos] != "{":
        return _VALUE.raw_decode(text, pos)[1]
    pos = _skip(text, pos + 1)
    if text[pos] == "}":
        return pos + 1
    while True:
        start = pos
        key, pos = _VALUE.raw_decode(text, pos)  # the key: a JSON string
        out[(*path, key)] = start  # the last of a repeated key wins, as in json.loads
        pos = _skip(text, _skip(text, pos) + 1)  # the ':' and the space around it
        pos = _skip(text, _walk(text, pos, (*path, key), out))
        if text[pos] == "}":
            return pos + 1
        pos = _skip(text, pos + 1)  # the ','
