"""What a tool says about itself, as one text to index: names, description, parameters.

A tool is found by what a person would call it or what it does: its full name, its
server's name as written, its title and description, and each parameter's name and
description (nested objects and array items included, a few levels down). Names are
split where they change case (``getTinyImage`` → ``get Tiny Image``), since the
tokenizer splits only on what is not a letter or digit (``read_file`` → ``read file``).
Enum values and defaults are left out: a list of 400 time zones would drown the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from nativemcp.protocol import Tool

__all__ = ["one_line", "split_name", "tool_text"]

_CASE_CHANGE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_MAX_DEPTH: Final = 3
"""How many levels of nested parameters are indexed (an object's properties, an
array's items)."""
_SENTENCE: Final = re.compile(r"(.+?(?:[.!?](?=\s+[^a-z]|$)|[\u3002\uff01\uff1f]))")
"""A first sentence: a stop before a word that does not start in lower case (``e.g. a
log`` goes on), or a CJK full stop, exclamation or question mark."""
ONE_LINE_CHARS: Final = 160
"""The longest one-line description a match carries."""


def split_name(name: str) -> str:
    """``name`` with a space where its case changes (``getTinyImage`` → ``get Tiny Image``,
    ``HTTPServer`` → ``HTTP Server``)."""
    return _CASE_CHANGE.sub(" ", name)


def _parameters(schema: Mapping[str, Any], depth: int) -> Iterator[str]:
    if depth > _MAX_DEPTH:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, spec in properties.items():
            yield split_name(str(name))
            if isinstance(spec, Mapping):
                yield from _described(spec, depth)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _described(items, depth)


def _described(spec: Mapping[str, Any], depth: int) -> Iterator[str]:
    for key in ("title", "description"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            yield value
    yield from _parameters(spec, depth + 1)
    # A union (`anyOf`/`oneOf`) describes each branch on its own.
    for key in ("anyOf", "oneOf", "allOf"):
        branches = spec.get(key)
        if isinstance(branches, list):
            for branch in branches:
                if isinstance(branch, Mapping):
                    yield from _parameters(branch, depth + 1)


def tool_text(full_name: str, server: str, tool: Tool) -> str:
    """The text a tool is indexed by: one line per field (full name, server, title,
    description, then each parameter's name and description)."""
    lines = [split_name(full_name), split_name(server)]
    if tool.name != full_name.rpartition("__")[2]:
        lines.append(split_name(tool.name))
    lines += [text for text in (tool.title, tool.description) if text]
    lines += _parameters(tool.input_schema or {}, 1)
    return "\n".join(lines)


def one_line(tool: Tool) -> str:
    """The tool's description (or title) as one line: its first paragraph's first
    sentence, cut at `ONE_LINE_CHARS`."""
    text = (tool.description or tool.title or "").strip()
    first = text.split("\n\n", 1)[0].replace("\n", " ")
    first = " ".join(first.split())
    sentence = _SENTENCE.match(first)
    if sentence is not None:
        first = sentence.group(1)
    if len(first) > ONE_LINE_CHARS:
        first = first[: ONE_LINE_CHARS - 1].rstrip() + "…"
    return first
