"""The MCP server config files that hosts write, read into `ExternalServerSpec`s.

One reader for the formats people already have:

- Claude Desktop and Cursor: ``{"mcpServers": {name: {command, args, env, cwd}}}``,
  and ``{url, headers}`` for a remote server;
- VS Code: ``{"servers": {name: {type, command, args, env, url, headers}}}``
  (``inputs`` prompts are not read: a ``${input:...}`` is left as written);
- Windsurf: a remote server's address under ``serverUrl``;
- Claude Code (``.mcp.json``): ``type`` ``"stdio"`` / ``"http"`` / ``"sse"``,
  ``headers``, and ``${VAR}`` / ``${VAR:-default}`` (VS Code's and Cursor's
  ``${env:VAR}`` too) expanded from the environment in ``command``, ``args``, ``env``,
  ``cwd``, ``url`` and ``headers``.

The key of an entry is a name a person chose (``My Time``, ``github.com/acme/tool``,
``時間``) and is kept as written: it is the server's name in the pool and in every
`ServiceInfo`; the catalog derives the part of a full tool name from it
(`nativemcp.protocol.safe_server_name`).

A mistake is one line naming the server and the key, and for a file where it is
(``file:line:column:``); a key that reads as a typo of a known one (``comand``,
``arsg``) is a mistake too, as is a top-level ``mcpServer``, while the other keys of
other clients are ignored.

An expanded variable may hold a secret (``?key=${API_KEY}``): every message shows the
entry as written (`ExternalServerSpec.describe`), and text built from an exception that
may echo a URL or a command passes through `ExternalServerSpec.redact`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from .._json_where import key_positions, line_column
from .oauth import OAuthSettings, read_oauth_settings

__all__ = [
    "ExternalServerSpec",
    "GrantScope",
    "Transport",
    "expand_variables",
    "load_mcp_servers",
]

Transport = Literal["stdio", "http", "sse"]
GrantScope = Literal["pool", "user"]


class ExternalServerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of an ``mcpServers`` mapping, checked, with its variables expanded.

    Its ``repr`` shows the entry as written."""

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
    oauth: OAuthSettings | None = None
    """How to authorize to a remote server (``"oauth"`` or Cursor's ``"auth"``)."""
    grant_scope: GrantScope = "pool"
    """Whose grant a call uses (``"grantScope"``): the pool's one (``auth login``).

    With ``"user"``, the grant of the caller serve authenticated, kept per user."""
    as_written: ExternalServerSpec | None = None
    """The same entry before ``${VAR}`` expansion (None: nothing was expanded).

    Messages show it, so that a secret in a variable is never printed."""
    expanded: tuple[tuple[str, str], ...] = ()
    """``(value, "${VAR}")`` for each variable taken from the environment, for `redact`."""

    def describe(self) -> str:
        """``command arg...`` or the URL as written in the config, for messages.

        ``${VAR}`` stays unexpanded."""
        shown = self.as_written or self
        if shown.transport == "stdio":
            return " ".join([shown.command or "", *shown.args])
        return shown.url or ""

    def __repr__(self) -> str:
        # A spec printed or logged shows the entry as written, never a variable's value.
        if self.as_written is not None:
            return repr(self.as_written)
        return super().__repr__()

    def redact(self, text: str) -> str:
        """``text`` with each value expanded from the environment written as its ``${VAR}``.

        Percent-encoded spellings (as in a URL) too: for a message built from an
        exception, a stderr line or anything else that may echo the expanded entry."""
        for value, written in self.expanded:
            for form in _spellings(value):
                text = text.replace(form, written)
        return text

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` passes the allow-list and is not disabled (exact names)."""
        if self.tools is not None and tool not in self.tools:
            return False
        return tool not in self.disabled_tools


MIN_REDACTED: Final = 4
"""Values shorter than this are not written back as ``${VAR}`` in messages: a port or a
flag is no secret, and replacing every ``80`` would garble the message."""


def _spellings(value: str) -> list[str]:
    """``value`` as it may appear in a message: as is, and percent-encoded in a URL's
    path or query."""
    quote = urllib.parse.quote
    forms = (value, quote(value), quote(value, safe=""), urllib.parse.quote_plus(value))
    return list(dict.fromkeys(forms))


_TYPES: Final[dict[str, Transport]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}

# ${VAR}, ${VAR:-default} (Claude Code) and ${env:VAR} (VS Code, Cursor). Anything else
# in ${...} (VS Code's ${input:id} prompts) stays as written.
_VARIABLE: Final = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*|/)(?::-([^}]*))?\}")


def _predefined(name: str) -> str | None:
    """VS Code's and Cursor's own variables, for a hub that runs in the project folder."""
    if name == "userHome":
        return str(Path.home())
    if name == "workspaceFolder":
        return os.getcwd()
    if name == "workspaceFolderBasename":
        return Path.cwd().name
    if name in ("pathSeparator", "/"):
        return os.sep
    return None


def expand_variables(
    text: str, environ: Mapping[str, str] | None = None, *, where: str = "value"
) -> str:
    """``text`` with ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` replaced from
    ``environ`` (default: ``os.environ``). A set but empty ``VAR`` takes the default,
    as in the shell. VS Code's ``${userHome}``, ``${workspaceFolder}`` (this process's
    folder), ``${workspaceFolderBasename}`` and ``${pathSeparator}`` are known when no
    variable of that name is set.

    Raises:
        ValueError: a variable without a default is not set (named, with ``where``).
    """
    return _expand(text, os.environ if environ is None else environ, where, [])


def _expand(
    text: str, values: Mapping[str, str], where: str, expanded: list[tuple[str, str]]
) -> str:
    """`expand_variables`, adding ``(value, "${VAR}")`` to ``expanded`` for each value
    taken from ``values`` (not a default written in the config)."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = values.get(name, _predefined(name))
        if value:
            if name in values and len(value) >= MIN_REDACTED:
                expanded.append((value, match.group(0)))
            return value
        if default is not None:
            return default
        if value is not None:
            return value
        raise ValueError(
            f"{where}: environment variable {name!r} is not set; set it, or give a "
            f"default as ${{{name}:-default}}"
        )

    return _VARIABLE.sub(replace, text)


class _Entry:
    """One raw entry being checked: its name for messages, its values expanded."""

    def __init__(self, name: str, entry: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        self.name = name
        self.entry = entry
        self.environ = environ
        self.expanded: list[tuple[str, str]] = []

    def fail(self, what: str) -> ValueError:
        return ValueError(f"MCP server {self.name!r}: {what}")

    def text(self, key: str, value: str) -> str:
        where = f"MCP server {self.name!r} {key}"
        return _expand(value, self.environ, where, self.expanded)

    def str_list(self, key: str, *, expand: bool = True) -> list[str]:
        value = self.entry[key]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(f"{key!r} must be a list of strings, got {value!r}")
        return [self.text(key, item) for item in value] if expand else list(value)

    def str_map(self, key: str) -> dict[str, str]:
        value = self.entry[key]
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise self.fail(f"{key!r} must map strings to strings")
        return {k: self.text(f"{key}.{k}", v) for k, v in value.items()}


def _url_key(entry: Mapping[str, Any]) -> str | None:
    """Where the entry keeps a remote server's address: ``url``, or Windsurf's ``serverUrl``."""
    for key in ("url", "serverUrl"):
        if key in entry:
            return key
    return None


def _spec(name: str, raw: Any, environ: Mapping[str, str]) -> ExternalServerSpec:
    if not isinstance(raw, Mapping):
        raise ValueError(f"MCP server {name!r}: expected an object, got {type(raw).__name__}")
    entry = _Entry(name, raw, environ)
    url_key = _url_key(raw)
    kind = raw.get("type")
    if kind is None:
        kind = "http" if url_key is not None and "command" not in raw else "stdio"
    transport = _TYPES.get(str(kind))
    if transport is None:
        raise entry.fail(f"unknown type {kind!r}; use stdio, http, streamable-http or sse")
    fields: dict[str, Any] = {"name": name, "transport": transport}
    if transport == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise entry.fail(
                "a stdio server needs a 'command' string (a remote server: 'url' or 'serverUrl')"
            )
        fields["command"] = entry.text("command", command)
        if "args" in raw:
            fields["args"] = entry.str_list("args")
        if raw.get("env") is not None:
            fields["env"] = entry.str_map("env")
        if raw.get("cwd") is not None:
            fields["cwd"] = str(Path(entry.text("cwd", str(raw["cwd"]))).expanduser())
        if raw.get("oauth") is not None:
            raise entry.fail("'oauth' is for a remote (http or sse) server, not a stdio one")
    else:
        url = raw.get(url_key) if url_key is not None else None
        if isinstance(url, str):
            url = entry.text(url_key or "url", url)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise entry.fail("an HTTP server needs an http(s) 'url' (or 'serverUrl')")
        fields["url"] = url
        if raw.get("headers") is not None:
            fields["headers"] = entry.str_map("headers")
        fields["oauth"] = read_oauth_settings(raw, entry.fail, entry.text)
    fields["grant_scope"] = _grant_scope(raw, fields.get("oauth"), entry.fail)
    if raw.get("tools") is not None:
        fields["tools"] = entry.str_list("tools", expand=False)
    for key in ("disabled_tools", "disabledTools"):
        if raw.get(key) is not None:
            fields["disabled_tools"] = entry.str_list(key, expand=False)
    timeout = raw.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise entry.fail("'timeout' must be positive seconds")
        fields["timeout"] = float(timeout)
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise entry.fail("'required' must be true or false")
    fields["required"] = required
    if entry.expanded:
        written = {key: value for key, value in fields.items() if key in _EXPANDED}
        for key in ("command", "args", "env", "headers"):
            if key in written:
                written[key] = raw[key]
        if "url" in written:
            written["url"] = raw[url_key or "url"]
        if "cwd" in written:
            written["cwd"] = str(raw["cwd"])
        fields["as_written"] = ExternalServerSpec(name=name, transport=transport, **written)
        # Longest first: a value that holds another is written back whole.
        pairs = dict.fromkeys(entry.expanded)
        fields["expanded"] = tuple(sorted(pairs, key=lambda pair: -len(pair[0])))
    return ExternalServerSpec(**fields)


def _grant_scope(
    raw: Mapping[str, Any], oauth: OAuthSettings | None, fail: Callable[[str], Exception]
) -> GrantScope:
    """The entry's ``"grantScope"``: ``"user"`` needs OAuth a person (or serve's token
    exchange) grants; token exchange needs a caller's token, so it is per user.

    Raises:
        Exception: ``fail(...)``: an unknown scope, ``"user"`` without ``"oauth"`` or
            with a grant no user takes part in, token exchange for the pool.
    """
    scope = raw.get("grantScope", "pool")
    if scope not in ("pool", "user"):
        raise fail(f'\'grantScope\' must be "pool" or "user", not {scope!r}')
    grant = oauth.grant if oauth is not None else None
    if scope == "user" and grant not in ("authorization_code", "token_exchange"):
        raise fail(
            '\'grantScope\' "user" needs an "oauth" entry whose grant a user gives '
            "(authorization_code, the default, or token_exchange)"
        )
    if scope == "pool" and grant == "token_exchange":
        raise fail(
            "'oauth.grantType' token_exchange exchanges each caller's token: it needs "
            "'grantScope': \"user\""
        )
    return "user" if scope == "user" else "pool"


_EXPANDED: Final = frozenset({"command", "args", "env", "cwd", "url", "headers"})
"""The fields in which ``${VAR}`` expands."""


_KEYS: Final = frozenset(
    {"type", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "tools"}
    | {"disabled_tools", "disabledTools", "timeout", "required", "disabled", "oauth", "auth"}
    | {"grantScope"}
)
"""The keys of a server entry read here; other keys (other clients' own) are ignored."""


def _swapped(key: str, known: str) -> bool:
    """Whether ``key`` is ``known`` with two neighbouring letters swapped (``arsg``)."""
    if len(key) != len(known) or key == known:
        return False
    differ = [i for i, (a, b) in enumerate(zip(key, known, strict=True)) if a != b]
    return (
        len(differ) == 2
        and differ[1] == differ[0] + 1
        and key[differ[0]] == known[differ[1]]
        and key[differ[1]] == known[differ[0]]
    )


def _near(key: str, known: frozenset[str]) -> str | None:
    """The known key that ``key`` reads as a typo of (``comand``, ``arsg``), or None.
    difflib alone misses a swap of two letters in a short key (``evn`` is 0.67 from
    ``env``)."""
    if key in known:
        return None
    swapped = sorted(name for name in known if _swapped(key, name))
    if swapped:
        return swapped[0]
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    return near[0] if near else None


def _misspelled(keys: list[str]) -> tuple[str, str] | None:
    """``(key, the known key it is close to)`` for the first unknown key that reads as
    a typo of a known one (``comand``, ``arsg``); None when there is none."""
    for key in keys:
        near = _near(key, _KEYS)
        if near is not None:
            return key, near
    return None


_TOP_KEYS: Final = frozenset({"mcpServers", "servers"})
"""The top-level keys that hold the entries."""


def _misspelled_top(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, "mcpServers" or "servers")`` for a top-level key that reads as a typo of
    one and holds entries rather than being one (``mcpServer``); None otherwise. A
    server may be named ``server``: one with a ``command`` or a ``url`` is an entry."""
    if any(key in data for key in _TOP_KEYS):
        return None
    for key, value in data.items():
        near = _near(str(key), _TOP_KEYS)
        if near is None and str(key).lower() in {k.lower() for k in _TOP_KEYS}:
            near = next(k for k in _TOP_KEYS if k.lower() == str(key).lower())
        is_entry = isinstance(value, Mapping) and any(
            field in value for field in ("command", "url", "serverUrl", "type")
        )
        if near is not None and isinstance(value, Mapping) and not is_entry:
            return str(key), near
    return None


class _EntryError(ValueError):
    """A malformed server entry, and the key it is about (None: the entry itself)."""

    def __init__(self, message: str, key: str | None) -> None:
        super().__init__(message)
        self.key = key


def _entry(name: str, raw: Any, environ: Mapping[str, str]) -> ExternalServerSpec:
    """`_spec`, refusing a misspelled key too.

    Raises:
        _EntryError: the entry is malformed; names the offending key where there is one.
    """
    keys = [str(key) for key in raw] if isinstance(raw, Mapping) else []
    typo = _misspelled(keys)
    if typo is not None:
        raise _EntryError(
            f"MCP server {name!r}: unknown key {typo[0]!r} (did you mean {typo[1]!r}?)", typo[0]
        )
    try:
        return _spec(name, raw, environ)
    except ValueError as exc:
        named = [key for key in keys if repr(key) in str(exc) or f" {key}" in str(exc)]
        raise _EntryError(str(exc), named[0] if named else None) from None


def load_mcp_servers(
    source: Mapping[str, Any] | str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
) -> list[ExternalServerSpec]:
    """The server entries of an MCP config mapping, or of a JSON file holding one.

    A file (or a mapping) may hold the entries under a top-level ``mcpServers`` (Claude
    Desktop, Cursor, Windsurf, Claude Code) or ``servers`` (VS Code) key, or be the
    entries themselves (a top-level key that reads as a typo of ``mcpServers`` is an
    error). Any key names a server, kept as written. A disabled entry
    (``"disabled": true``) is left out. Variables expand from ``environ`` (default:
    ``os.environ``). Keys of other clients are ignored, but one that reads as a typo of
    a known key (``comand``, ``arsg``) is an error. Messages show the entry as written,
    never a variable's value (`ExternalServerSpec.describe`).

    Raises:
        ValueError: the file is not JSON, an entry is malformed, or a variable it uses
            is not set: one line that names the server and the key, and for a file
            ``file:line:column:`` first.
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
    typo = _misspelled_top(data)
    if typo is not None:
        at = where
        if text is not None:
            line, column = line_column(text, key_positions(text).get((typo[0],), 0))
            at = f"{where}:{line}:{column}"
        raise ValueError(
            f"{at}: unknown top-level key {typo[0]!r} (did you mean {typo[1]!r}?): "
            "the servers go under it"
        )
    prefix: tuple[str, ...] = ()
    for key in ("mcpServers", "servers"):
        if key in data and isinstance(data[key], Mapping):
            data, prefix = data[key], (key,)
            break
    values = os.environ if environ is None else environ
    specs: list[ExternalServerSpec] = []
    for name, entry in data.items():
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            continue
        try:
            specs.append(_entry(str(name), entry, values))
        except _EntryError as exc:
            if text is None:
                raise ValueError(str(exc)) from None
            keys = key_positions(text)
            offset = keys.get((*prefix, name, exc.key or ""), keys.get((*prefix, name), 0))
            line, column = line_column(text, offset)
            raise ValueError(f"{where}:{line}:{column}: {exc}") from None
    return specs
