"""A page's accessibility tree: Playwright's AI snapshot parsed, compacted and rendered.

Playwright's ``page.aria_snapshot(mode="ai")`` is YAML with a ``[ref=eN]`` on every
element (the handle ``locator("aria-ref=eN")`` resolves). We parse it into
`SnapshotNode`s and keep what a model needs to act:

- refs only on interactive elements (links, buttons, fields... and anything the page
  made clickable), since only those are acted on;
- wrappers without a name (``generic``, ``list``, ``group``...) dissolve into their
  children; paragraphs and plain text become their words;
- headings read as Markdown (``## Title``), list items as ``- item``, a table row of
  plain cells as one ``|``-separated line;
- link targets stay in the typed tree (``url``) but not in the text.

The YAML escaping handled here is Playwright's own (``yamlEscapeKeyIfNeeded``: single
quotes around a key, ``yamlEscapeValueIfNeeded``: JSON-like double quotes on a value).
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from ._models import SnapshotNode

__all__ = [
    "INTERACTIVE_ROLES",
    "clickable_refs",
    "compact",
    "count_interactive",
    "describe",
    "diff_lines",
    "find",
    "parse_snapshot",
    "refs_of",
    "render",
]

INTERACTIVE_ROLES: Final = frozenset(
    {
        "button",
        "checkbox",
        "combobox",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    }
)
"""Roles an agent acts on; their nodes keep their ref."""

_DISSOLVE: Final = frozenset(
    {"generic", "group", "list", "none", "presentation", "rowgroup", "table", "LabelText"}
)
"""Unnamed containers of these roles add nothing but nesting: their children move up."""
_PLAIN: Final = frozenset({"paragraph", "generic", "text", "strong", "emphasis", "code"})
"""Roles whose text reads as just the text."""
_DROPPED_STATES: Final = frozenset({"active", "cursor=pointer"})
"""Attributes that do not help a model act (focus, the mouse cursor's shape)."""

_LINE: Final = re.compile(r"^( *)- (.*)$")
_ATTR: Final = re.compile(r"\s*\[([^\]=]+)(?:=([^\]]*))?\]")


@dataclass
class _Raw:
    role: str
    name: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    text: str | None = None
    props: dict[str, str] = field(default_factory=dict)
    children: list[_Raw] = field(default_factory=list)


def _unquote_key(rest: str) -> tuple[str, str]:
    """``(key, after)``: a key possibly wrapped in single quotes (``''`` escapes one)."""
    if not rest.startswith("'"):
        if rest.endswith(":"):
            return rest[:-1], ":"
        key, sep, value = rest.partition(": ")
        return key, (": " + value) if sep else ""
    i = 1
    out: list[str] = []
    while i < len(rest):
        if rest[i] == "'":
            if rest.startswith("''", i):
                out.append("'")
                i += 2
                continue
            return "".join(out), rest[i + 1 :]
        out.append(rest[i])
        i += 1
    return "".join(out), ""


def _unquote_value(value: str) -> str:
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        # JSON with one extension: \xNN escapes for control characters.
        with_unicode = re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", value)
        try:
            return str(json.loads(with_unicode))
        except ValueError:
            return value[1:-1]
    return value


def _parse_key(key: str) -> _Raw:
    role, _, rest = key.partition(" ")
    name = ""
    rest = rest.lstrip()
    if rest.startswith('"'):
        try:
            decoded, end = json.JSONDecoder().raw_decode(rest)
            name, rest = str(decoded), rest[end:]
        except ValueError:
            pass
    attrs: dict[str, str] = {}
    for match in _ATTR.finditer(rest):
        attrs[match.group(1)] = match.group(2) if match.group(2) is not None else ""
    return _Raw(role=role, name=name, attrs=attrs)


def parse_snapshot(yaml: str) -> list[SnapshotNode]:
    """The nodes of a Playwright AI snapshot, as written (nothing compacted yet)."""
    root = _Raw(role="fragment")
    stack: list[tuple[int, _Raw]] = [(-1, root)]
    for line in yaml.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        indent = len(match.group(1))
        key, after = _unquote_key(match.group(2))
        value = _unquote_value(after[2:]) if after.startswith(": ") else None
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if key.startswith("/"):  # a property of the parent: /url, /placeholder
            parent.props[key[1:]] = value or ""
            continue
        if key == "text":
            parent.children.append(_Raw(role="text", name=value or ""))
            continue
        node = _parse_key(key)
        node.text = value
        parent.children.append(node)
        stack.append((indent, node))
    return [_convert(child) for child in root.children]


def _convert(raw: _Raw) -> SnapshotNode:
    states = [
        f"{name}={value}" if value else name
        for name, value in raw.attrs.items()
        if name != "ref" and (f"{name}={value}" if value else name) not in _DROPPED_STATES
    ]
    return SnapshotNode(
        role=raw.role,
        name=raw.name,
        ref=raw.attrs.get("ref"),
        states=states,
        text=raw.text,
        url=raw.props.get("url"),
        placeholder=raw.props.get("placeholder"),
        children=[_convert(child) for child in raw.children],
    )


def _interactive(node: SnapshotNode, clickable: bool) -> bool:
    return node.role in INTERACTIVE_ROLES or clickable


def _drop_echoed_labels(nodes: list[SnapshotNode]) -> list[SnapshotNode]:
    """Without the text nodes that repeat a neighbouring field's name (its <label>)."""
    named = {
        index: node.name for index, node in enumerate(nodes) if node.ref is not None and node.name
    }
    return [
        node
        for index, node in enumerate(nodes)
        if node.role != "text"
        or node.name.strip() not in (named.get(index - 1), named.get(index + 1))
    ]


def compact(nodes: Iterable[SnapshotNode], clickable: frozenset[str]) -> list[SnapshotNode]:
    """The tree a model reads: refs on interactive nodes only, empty wrappers dissolved,
    label text that only repeats the name of the field beside it left out.

    ``clickable``: refs Playwright marked ``[cursor=pointer]`` (a ``div`` the page made
    clickable): they keep their ref whatever their role.
    """
    return _drop_echoed_labels(_compact(nodes, clickable))


def _compact(nodes: Iterable[SnapshotNode], clickable: frozenset[str]) -> list[SnapshotNode]:
    out: list[SnapshotNode] = []
    for node in nodes:
        children = compact(node.children, clickable)
        interactive = node.ref is not None and _interactive(node, node.ref in clickable)
        if node.role in _DISSOLVE and not node.name and not interactive and node.text is None:
            out.extend(children)
            continue
        if node.role == "text" and not node.name.strip():
            continue
        out.append(
            SnapshotNode(
                role=node.role,
                name=node.name,
                ref=node.ref if interactive else None,
                states=node.states,
                text=node.text,
                url=node.url,
                placeholder=node.placeholder,
                children=children,
            )
        )
    return out


def clickable_refs(yaml: str) -> frozenset[str]:
    """The refs Playwright marked with ``[cursor=pointer]``."""
    return frozenset(re.findall(r"\[ref=([^\]]+)\] \[cursor=pointer\]", yaml))


def _label(node: SnapshotNode) -> str:
    if node.role == "heading":
        level = next((s[6:] for s in node.states if s.startswith("level=")), "2")
        hashes = "#" * int(level) if level.isdigit() else "##"
        return f"{hashes} {node.name or node.text or ''}".rstrip()
    if node.role in _PLAIN and node.ref is None:
        return node.name if node.role == "text" else (node.name or node.text or "")
    parts = [node.role if node.role != "listitem" else "-"]
    if node.name:
        parts.append(json.dumps(node.name, ensure_ascii=False))
    if node.ref is not None:
        parts.append(f"[ref={node.ref}]")
    parts.extend(f"[{state}]" for state in node.states if not state.startswith("level="))
    if node.placeholder:
        parts.append(f"placeholder={json.dumps(node.placeholder, ensure_ascii=False)}")
    label = " ".join(parts)
    if node.text:
        label += f": {node.text}"
    return label


def _options_line(node: SnapshotNode) -> str | None:
    """A closed select's options on its own line: ``combobox "Role" [ref=e4]: Dev*, Ops``."""
    if node.role != "combobox" or not node.children:
        return None
    if any(child.role != "option" or child.children for child in node.children):
        return None
    names = [child.name + ("*" if "selected" in child.states else "") for child in node.children]
    return f"{_label(node)}: {', '.join(names)}"


def _row_line(node: SnapshotNode) -> str | None:
    """A table row whose cells are plain text, as ``| a | b |``."""
    if node.role != "row" or node.ref is not None:
        return None
    cells: list[str] = []
    for cell in node.children:
        if cell.role not in ("cell", "columnheader", "rowheader") or cell.ref is not None:
            return None
        if any(child.role != "text" for child in cell.children):
            return None
        words = cell.name or cell.text or " ".join(child.name for child in cell.children)
        cells.append(words.replace("|", "/"))
    return "| " + " | ".join(cells) + " |"


def _lines(nodes: Iterable[SnapshotNode], depth: int) -> Iterator[str]:
    indent = "  " * depth
    for node in nodes:
        whole = _options_line(node) or _row_line(node)
        if whole is not None:
            yield indent + whole
            continue
        label = _label(node)
        only = node.children[0] if len(node.children) == 1 else None
        if only is not None and not only.children and label.rstrip("#") in ("", "-"):
            # A heading or list item around one element reads on one line:
            # "## link "Spade" [ref=e20]", "- link "Roadmap" [ref=e9]".
            yield f"{indent}{label} {_label(only)}"
            continue
        if node.children:
            yield indent + (label + ":" if label and label != "-" else label or "")
            yield from _lines(node.children, depth + 1)
        elif label:
            yield indent + label


def render(nodes: Iterable[SnapshotNode]) -> list[str]:
    """The compact tree as text lines (two spaces of indent per level)."""
    return list(_lines(nodes, 0))


def refs_of(nodes: Iterable[SnapshotNode]) -> list[str]:
    """Every ref in the tree, in document order."""
    found: list[str] = []
    for node in nodes:
        if node.ref is not None:
            found.append(node.ref)
        found.extend(refs_of(node.children))
    return found


def find(nodes: Iterable[SnapshotNode], ref: str) -> SnapshotNode | None:
    """The node carrying ``ref``, or None."""
    for node in nodes:
        if node.ref == ref:
            return node
        hit = find(node.children, ref)
        if hit is not None:
            return hit
    return None


def describe(node: SnapshotNode) -> str:
    """A node in a few words: ``button "Send"``."""
    if node.name:
        return f"{node.role} {json.dumps(node.name, ensure_ascii=False)}"
    return node.role


def count_interactive(nodes: Iterable[SnapshotNode]) -> dict[str, int]:
    """How many nodes with a ref each role has."""
    counts: Counter[str] = Counter()

    def walk(level: Iterable[SnapshotNode]) -> None:
        for node in level:
            if node.ref is not None:
                counts[node.role] += 1
            walk(node.children)

    walk(nodes)
    return dict(counts.most_common())


def diff_lines(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """``(added, removed)`` lines between two renderings, indentation stripped."""
    added: list[str] = []
    removed: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(line.strip() for line in before[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(line.strip() for line in after[j1:j2])
    return added, removed
