"""Pinned tool definitions: a tool whose definition changed since it was reviewed is
withheld, not offered.

A server trusted once can change a tool's description or schema later (a "rug pull":
new instructions for the model, a new parameter that carries data away). ``nativemcp
tools --pin FILE`` writes a hash of each part of each tool's definition (title,
description, input and output schema, annotations), by full name; a pool given that
file (``WorkerPool(pinned=FILE)``, ``--pinned FILE`` on every verb that starts
servers) offers a tool only while every part hashes as pinned. A changed tool, and a
tool the file does not know, is left out of the catalog with a warning naming the tool
and what changed, until it is pinned again.

The file:

```json
{"version": 1, "tools": {
  "time__get_current_time": {"annotations": "74234e98…", "description": "9f2c…", ...}
}}
```
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import msgspec

from nativemcp.protocol import Tool

__all__ = ["PINNED_PARTS", "PIN_FILE_VERSION", "ToolPins", "as_pins", "definition_hashes"]

PIN_FILE_VERSION: Final = 1
"""The version of the pin file's format this code reads and writes."""
PINNED_PARTS: Final = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""The parts of a definition that are hashed (a part the tool lacks hashes as null)."""


def _part(tool: Tool, part: str) -> Any:
    value = {
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations,
    }[part]
    return msgspec.to_builtins(value)


def definition_hashes(tool: Tool) -> dict[str, str]:
    """A SHA-256 (hex) of each part of ``tool``'s definition, keys sorted within."""
    return {
        part: hashlib.sha256(
            json.dumps(_part(tool, part), sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        for part in PINNED_PARTS
    }


class ToolPins(msgspec.Struct, frozen=True):
    """The pinned definitions: for each full name, the hash of each part.

    Read one with `ToolPins.load`, make one with `ToolPins.of`.
    """

    tools: dict[str, dict[str, str]]

    @classmethod
    def of(cls, tools: Iterable[tuple[str, Tool]]) -> ToolPins:
        """Pins for ``(full name, definition)`` pairs."""
        return cls({name: definition_hashes(tool) for name, tool in tools})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ToolPins:
        """The pins in the file at ``path``.

        Raises:
            FileNotFoundError: no such file (pin the tools first: ``nativemcp tools
                --pin FILE``).
            ValueError: the file is not a pin file of this version.
        """
        file = Path(path).expanduser()
        if not file.is_file():
            raise FileNotFoundError(
                f"no pin file at {str(file)!r}: write one with `nativemcp tools --pin "
                f"{file}` after reviewing the tools"
            )
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            if data.get("version") != PIN_FILE_VERSION:
                raise ValueError(f"version {data.get('version')!r}, not {PIN_FILE_VERSION}")
            return cls(msgspec.convert(data["tools"], dict[str, dict[str, str]]))
        except (ValueError, KeyError, TypeError, AttributeError, msgspec.ValidationError) as exc:
            raise ValueError(
                f"{str(file)!r} is not a nativemcp pin file ({exc}); write it again with "
                f"`nativemcp tools --pin {file}`"
            ) from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the pins to ``path`` (sorted, one tool a line, for a readable diff)."""
        lines = [
            f"  {json.dumps(name)}: {json.dumps(self.tools[name], sort_keys=True)}"
            for name in sorted(self.tools)
        ]
        body = ",\n".join(lines)
        text = f'{{"version": {PIN_FILE_VERSION}, "tools": {{\n{body}\n}}}}\n'
        Path(path).expanduser().write_text(text, encoding="utf-8")

    def problem(self, full_name: str, tool: Tool) -> str | None:
        """Why ``tool`` may not be offered (None: it is pinned and unchanged)."""
        pinned = self.tools.get(full_name)
        if pinned is None:
            return f"tool {full_name!r} is new (not in the pin file)"
        now = definition_hashes(tool)
        changed = [part for part in PINNED_PARTS if pinned.get(part) != now[part]]
        if not changed:
            return None
        return f"the {' and '.join(changed)} of tool {full_name!r} changed since it was pinned"


def as_pins(pinned: ToolPins | str | os.PathLike[str] | None) -> ToolPins | None:
    """``WorkerPool(pinned=...)`` as `ToolPins`: a path is read, pins pass.

    Raises:
        FileNotFoundError, ValueError: as `ToolPins.load`.
    """
    if pinned is None or isinstance(pinned, ToolPins):
        return pinned
    return ToolPins.load(pinned)
