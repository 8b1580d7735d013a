"""The ``mcpServers`` configuration: Claude Desktop's, Cursor's and VS Code's format.

`load_mcp_servers` reads a mapping or a JSON file into checked `ExternalServerSpec`s
(stdio ``{command, args, env, cwd}``, HTTP ``{url, headers}``). A mistake is one line
naming the server and the key, and for a file where it is (``file:line:column:``);
a key that reads as a typo of a known one (``comand``) is a mistake too.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from ._json_where import key_positions, line_column

__all__ = ["ExternalServerSpec", "Transport", "load_mcp_servers"]

Transport = Literal["stdio", "http", "sse"]


class ExternalServerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of an ``mcpServers`` mapping, checked."""

    name: str
    transport: Transport
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    tools: list[str] | None = None
    disabled_tools: list[str] = []
    timeout: float | None = None
    required: bool = True

    def describe(self) -> str:
        """``command arg...`` or the URL, for error messages."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args])
        return self.url or ""

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` passes the allow-list and is not disabled."""
        if self.tools is not None and tool not in self.tools:
            return False
        return tool not in self.disabled_tools


_TYPES: Final[dict[str, Transport]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}


def _str_list(name: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"MCP server {name!r}: {key!r} must be a list of strings, got {value!r}")
    return list(value)


def _str_map(name: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"MCP server {name!r}: {key!r} must map strings to strings")
    return dict(value)


def _spec(name: str, entry: Any) -> ExternalServerSpec:
    if not isinstance(entry, Mapping):
        raise ValueError(f"MCP server {name!r}: expected an object, got {type(entry).__name__}")
    kind = entry.get("type")
    if kind is None:
        kind = "http" if "url" in entry and "command" not in entry else "stdio"
    transport = _TYPES.get(str(kind))
    if transport is None:
        raise ValueError(
            f"MCP server {name!r}: unknown type {kind!r}; use stdio, http, streamable-http or sse"
        )
    fields: dict[str, Any] = {"name": name, "transport": transport}
    if transport == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError(f"MCP server {name!r}: a stdio server needs a 'command' string")
        fields["command"] = command
        if "args" in entry:
            fields["args"] = _str_list(name, "args", entry["args"])
        if entry.get("env") is not None:
            fields["env"] = _str_map(name, "env", entry["env"])
        if entry.get("cwd") is not None:
            fields["cwd"] = str(Path(str(entry["cwd"])).expanduser())
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {name!r}: an HTTP server needs an http(s) 'url'")
        fields["url"] = url
        if entry.get("headers") is not None:
            fields["headers"] = _str_map(name, "headers", entry["headers"])
    if entry.get("tools") is not None:
        fields["tools"] = _str_list(name, "tools", entry["tools"])
    for key in ("disabled_tools", "disabledTools"):
        if entry.get(key) is not None:
            fields["disabled_tools"] = _str_list(name, key, entry[key])
    timeout = entry.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"MCP server {name!r}: 'timeout' must be positive seconds")
        fields["timeout"] = float(timeout)
    required = entry.get("required", True)
    if not isinstance(required, bool):
        raise ValueError(f"MCP server {name!r}: 'required' must be true or false")
    fields["required"] = required
    return ExternalServerSpec(**fields)


_KEYS: Final = frozenset(
    {"type", "command", "args", "env", "cwd", "url", "headers", "tools", "disabled_tools"}
    | {"disabledTools", "timeout", "required", "disabled"}
)
"""The keys of a server entry read here; other keys (other clients' own) are ignored."""


def _misspelled(keys: list[str]) -> tuple[str, str] | None:
    """``(key, the known key it is close to)`` for the first unknown key that reads as
    a typo of a known one (``comand``); None when there is none."""
    for key in keys:
        if key not in _KEYS:
            near = difflib.get_close_matches(key, _KEYS, n=1, cutoff=0.8)
            if near:
                return key, near[0]
    return None


class _EntryError(ValueError):
    """A malformed server entry, and the key it is about (None: the entry itself)."""

    def __init__(self, message: str, key: str | None) -> None:
        super().__init__(message)
        self.key = key


def _entry(name: str, entry: Any) -> ExternalServerSpec:
    """`_spec`, refusing a misspelled key too.

    Raises:
        _EntryError: the entry is malformed; names the offending key where there is one.
    """
    keys = [str(key) for key in entry] if isinstance(entry, Mapping) else []
    typo = _misspelled(keys)
    if typo is not None:
        raise _EntryError(
            f"MCP server {name!r}: unknown key {typo[0]!r} (did you mean {typo[1]!r}?)", typo[0]
        )
    try:
        return _spec(name, entry)
    except ValueError as exc:
        named = [key for key in keys if repr(key) in str(exc)]
        raise _EntryError(str(exc), named[0] if named else None) from None


def load_mcp_servers(
    source: Mapping[str, Any] | str | os.PathLike[str],
) -> list[ExternalServerSpec]:
    """The server entries of an ``mcpServers`` mapping, or of a JSON file holding one.

    A file (or a mapping) may hold the entries under a top-level ``mcpServers`` (Claude
    Desktop, Cursor) or ``servers`` (VS Code) key, or be the entries themselves.
    A disabled entry (``"disabled": true``) is left out. Keys of other clients are
    ignored, but one that reads as a typo of a known key (``comand``) is an error.

    Raises:
        ValueError: the file is not JSON, or an entry is malformed; one line that
            names the server and the key, and for a file ``file:line:column:`` first.
        OSError: the file cannot be read.
    """
    text: str | None = None
    if isinstance(source, str | os.PathLike):
        path = Path(source).expanduser()
        text = path.read_text(encoding="utf-8")
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
            ) from None
        where = str(path)
    else:
        data, where = source, "mcp_servers"
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object of MCP servers")
    prefix: tuple[str, ...] = ()
    for key in ("mcpServers", "servers"):
        if key in data and isinstance(data[key], Mapping):
            data, prefix = data[key], (key,)
            break
    specs: list[ExternalServerSpec] = []
    for name, entry in data.items():
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            continue
        try:
            specs.append(_entry(str(name), entry))
        except _EntryError as exc:
            if text is None:
                raise ValueError(str(exc)) from None
            keys = key_positions(text)
            offset = keys.get((*prefix, name, exc.key or ""), keys.get((*prefix, name), 0))
            line, column = line_column(text, offset)
            raise ValueError(f"{where}:{line}:{column}: {exc}") from None
    return specs
