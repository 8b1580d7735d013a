"""Tool naming: the spec's validity rule, full names, and parsing a full name back.

Built-in tools are ``builtin_server__tool``; every other server's, an external MCP
server's or the user's own nativemcp server's, ``server__tool``. A full name splits at
its first ``__``, so a server name may not contain ``__`` nor end with ``_`` (``a_`` +
``b`` would read back as ``a`` + ``_b``), and a server that is not built in may not be
named ``builtin`` nor start with ``builtin_`` (it would read as a built-in). With these
rules every full name parses back to the one (server, tool) it came from.

A server name is often a name a person chose in a config file (``My Time``,
``github.com/acme/tool``, ``時間``): `safe_server_name` gives the part of a full name
that stands for it, the name itself when it follows the rules, otherwise a readable
slug with a hash of the name (stable, and told apart from every other name), and
`parse_tool_name` maps it back to the name as written when given the server names.
"""

from __future__ import annotations

import enum
import hashlib
import re
import unicodedata
from collections.abc import Container, Iterable, Mapping
from typing import Any, Final, TypeVar

import msgspec

from ._exceptions import ToolNameError
from ._types import ContentBlock, NativeMCPResponse, Tool, UnknownContent

__all__ = [
    "BUILTIN_PREFIX",
    "NAME_SHOWN_CHARS",
    "SEPARATOR",
    "SERVICE_META_KEY",
    "BackendType",
    "ServiceInfo",
    "full_tool_name",
    "is_valid_tool_name",
    "parse_tool_name",
    "quoted_name",
    "safe_server_name",
    "service_info",
    "service_meta",
    "tag_service",
    "tool_name_index",
    "validate_tool_name",
]

SEPARATOR: Final = "__"
"""Between server and tool in a full tool name."""

BUILTIN_PREFIX: Final = "builtin_"
"""Starts the full name of every built-in server's tool."""

SERVICE_META_KEY: Final = "io.github.nativemcp/service"
"""The ``_meta`` key naming the service on a listed tool and a routed result's blocks.

Its value is ``{"serverName", "toolName", "backendType"}``: the service that produced
the tool or the content block."""

NAME_SHOWN_CHARS: Final = 80
"""The most characters of a name that an error message quotes; a longer one is cut."""

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_SLUG_BREAK: Final = re.compile(r"[^A-Za-z0-9.\-]+")
_SLUG_MAX: Final = 40
"""Characters of a derived server name's readable part (the hash follows it)."""


class BackendType(enum.StrEnum):
    """Where a tool runs."""

    EXTERNAL_MCP = "ExternalMCP"
    """An external MCP server (stdio or HTTP)."""
    BUILTIN_WEB = "BuiltInWeb"
    """A built-in server in a worker process."""
    BUILTIN_NATIVE = "BuiltInNative"
    """A built-in server in the app's own process."""
    USER_WORKER = "UserWorker"
    """The user's own nativemcp server in a worker process."""
    USER_IN_PROCESS = "UserInProcess"
    """The user's own nativemcp server in the app's own process."""

    @property
    def builtin(self) -> bool:
        """Whether a server of this kind is one of nativemcp's built-in servers."""
        return self in (BackendType.BUILTIN_WEB, BackendType.BUILTIN_NATIVE)


class ServiceInfo(msgspec.Struct, frozen=True):
    """Which service a full tool name belongs to."""

    server_name: str
    tool_name: str
    backend_type: BackendType


def is_valid_tool_name(name: str) -> bool:
    """True when ``name`` is 1-128 characters of ``[A-Za-z0-9_.-]`` (the MCP spec's rule)."""
    return isinstance(name, str) and _TOOL_NAME.fullmatch(name) is not None


def quoted_name(name: str) -> str:
    """``repr(name)`` for an error message, cut after `NAME_SHOWN_CHARS` characters.

    A cut name notes its length: a caller's megabyte-long name must not come back whole."""
    if len(name) <= NAME_SHOWN_CHARS:
        return repr(name)
    return f"{name[:NAME_SHOWN_CHARS]!r}... ({len(name):,} characters)"


def validate_tool_name(name: str, *, what: str = "tool name") -> str:
    """Return ``name`` when valid.

    Raises:
        ToolNameError: names the offending name and the rule it breaks.
    """
    if not isinstance(name, str):
        raise ToolNameError(f"{what} must be a str, got {type(name).__name__}")
    if not name:
        raise ToolNameError(f"{what} must not be empty")
    if len(name) > 128:
        raise ToolNameError(f"{what} {quoted_name(name)} is too long; at most 128 characters")
    if not is_valid_tool_name(name):
        bad = sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9_.\-]", c)})
        raise ToolNameError(
            f"{what} {name!r} contains {''.join(bad)!r}; only A-Z a-z 0-9 _ . - are allowed"
        )
    return name


def _server_name_problem(server_name: str, backend_type: BackendType) -> str | None:
    """Why ``server_name`` cannot stand in a full tool name as it is; None when it can."""
    try:
        validate_tool_name(server_name, what="server name")
    except ToolNameError as exc:
        return str(exc)
    if SEPARATOR in server_name:
        return f"server name {server_name!r} must not contain {SEPARATOR!r}"
    if server_name.endswith("_"):
        return (
            f"server name {server_name!r} must not end with '_': the full name would not parse back"
        )
    builtin = BackendType(backend_type).builtin
    if not builtin and (server_name + SEPARATOR).startswith(BUILTIN_PREFIX):
        kind = "external" if backend_type is BackendType.EXTERNAL_MCP else "user"
        return (
            f"{kind} server name {server_name!r} must not be {BUILTIN_PREFIX[:-1]!r} or "
            f"start with {BUILTIN_PREFIX!r}: it would read as a built-in server"
        )
    return None


def safe_server_name(server_name: str, backend_type: BackendType = BackendType.EXTERNAL_MCP) -> str:
    """The part of a full tool name that stands for ``server_name``, whatever it is.

    A name that follows the rules of `full_tool_name` is itself. Any other name (spaces,
    ``/``, non-ASCII letters, ``__``, a trailing ``_``, an external ``builtin...``)
    becomes its ASCII letters, digits, ``.`` and ``-`` with ``_`` for each run of
    anything else, then ``-`` and 8 hex digits of the name's SHA-256: ``My Time`` →
    ``My_Time-`` + hash. The same name gives the same result on every machine and run;
    two names differ in their hash; `parse_tool_name` maps the result back.
    """
    if _server_name_problem(server_name, backend_type) is None:
        return server_name
    folded = unicodedata.normalize("NFKD", server_name).encode("ascii", "ignore").decode()
    slug = _SLUG_BREAK.sub("_", folded).strip("_.-")[:_SLUG_MAX].rstrip("_")
    if not slug or (slug + SEPARATOR).startswith(BUILTIN_PREFIX):
        slug = f"mcp_{slug}".rstrip("_")
    digest = hashlib.sha256(server_name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{digest}"


def full_tool_name(server_name: str, tool_name: str, backend_type: BackendType) -> str:
    """The name a router lists for a tool of a server.

    ``builtin_server__tool`` for a built-in server, ``server__tool`` for any other.

    The server name must follow the rules as it is; pass it through `safe_server_name`
    first to accept any name.

    Raises:
        ToolNameError: a part is invalid, a server name contains ``__`` or ends with
            ``_``, a server that is not built in is named ``builtin`` or starts with
            ``builtin_``, or the whole exceeds 128 characters.
    """
    problem = _server_name_problem(server_name, backend_type)
    if problem is not None:
        raise ToolNameError(problem)
    validate_tool_name(tool_name)
    prefix = BUILTIN_PREFIX if BackendType(backend_type).builtin else ""
    return validate_tool_name(f"{prefix}{server_name}{SEPARATOR}{tool_name}", what="full tool name")


def parse_tool_name(
    name: str,
    *,
    native_servers: Container[str] = (),
    user_servers: Container[str] = (),
    servers: Iterable[str] = (),
) -> ServiceInfo:
    """Parse a full tool name back into `ServiceInfo`.

    A name does not say whether its server runs in a worker or in-process, nor whether
    a ``server__tool`` is an external server's or the user's own: servers listed in
    ``native_servers`` run in-process (`BackendType.BUILTIN_NATIVE`, or
    `BackendType.USER_IN_PROCESS` for a user server), the others in a worker
    (`BackendType.BUILTIN_WEB`, `BackendType.USER_WORKER`); a ``server__tool`` is the
    user's own when ``server`` is in ``user_servers``, else `BackendType.EXTERNAL_MCP`.
    A server part that `safe_server_name` derived from one of ``servers`` (names as
    written, ``My Time``) reads back as that name.

    Raises:
        ToolNameError: the name is invalid or has no ``server__tool`` shape.
    """
    validate_tool_name(name, what="full tool name")
    builtin = name.startswith(BUILTIN_PREFIX)
    body = name[len(BUILTIN_PREFIX) :] if builtin else name
    server, sep, tool = body.partition(SEPARATOR)
    if not sep or not server or not tool:
        raise ToolNameError(f"full tool name {name!r} is not of the form server{SEPARATOR}tool")
    if not builtin and server in user_servers:
        native = server in native_servers
        backend = BackendType.USER_IN_PROCESS if native else BackendType.USER_WORKER
    elif not builtin:
        backend = BackendType.EXTERNAL_MCP
    elif server in native_servers:
        backend = BackendType.BUILTIN_NATIVE
    else:
        backend = BackendType.BUILTIN_WEB
    for written in servers:
        if written != server and safe_server_name(written, backend) == server:
            server = written
            break
    return ServiceInfo(server_name=server, tool_name=tool, backend_type=backend)


def tool_name_index(services: Iterable[ServiceInfo]) -> dict[str, ServiceInfo]:
    """Every service's full tool name → the service, refusing collisions.

    Two services collide when they get the same full name: the same tool listed twice,
    or a worker and an in-process built-in server of the same name. Nothing is chosen
    silently: every collision is reported at once.

    Raises:
        ToolNameError: a name is invalid, or names collide (all collisions listed).
    """
    index: dict[str, ServiceInfo] = {}
    clashes: dict[str, list[ServiceInfo]] = {}
    for service in services:
        name = full_tool_name(service.server_name, service.tool_name, service.backend_type)
        if name in index:
            clashes.setdefault(name, [index[name]]).append(service)
        else:
            index[name] = service
    if clashes:
        described = "; ".join(
            f"{name!r} from "
            + ", ".join(f"{s.server_name}/{s.tool_name} ({s.backend_type})" for s in owners)
            for name, owners in clashes.items()
        )
        raise ToolNameError(f"{len(clashes)} tool name collision(s): {described}")
    return index


def service_meta(service: ServiceInfo) -> dict[str, str]:
    """``service`` as the ``_meta`` value: ``{"serverName", "toolName", "backendType"}``."""
    return {
        "serverName": service.server_name,
        "toolName": service.tool_name,
        "backendType": str(service.backend_type),
    }


def service_info(obj: Any) -> ServiceInfo | None:
    """The `ServiceInfo` in the ``_meta`` of a tool or content block, or None.

    ``obj`` is a tool, a content block (object or dict) or a ``_meta`` mapping itself;
    None when there is no service there or it is malformed."""
    meta: Any
    if isinstance(obj, Mapping):
        meta = obj.get("_meta", obj.get("meta", obj))
    else:
        meta = getattr(obj, "meta", None)
    value = meta.get(SERVICE_META_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(value, Mapping):
        return None
    server, tool, backend = value.get("serverName"), value.get("toolName"), value.get("backendType")
    if not isinstance(server, str) or not isinstance(tool, str) or not isinstance(backend, str):
        return None
    try:
        return ServiceInfo(server_name=server, tool_name=tool, backend_type=BackendType(backend))
    except ValueError:
        return None


_S = TypeVar("_S", bound=msgspec.Struct)


def _with_meta(obj: _S, meta_value: dict[str, str]) -> _S:
    meta = dict(getattr(obj, "meta", None) or {})
    meta[SERVICE_META_KEY] = meta_value
    return msgspec.structs.replace(obj, meta=meta)


def tag_service(
    item: NativeMCPResponse[Any] | Tool, service: ServiceInfo, *, name: str | None = None
) -> Any:
    """``item`` with ``service`` in its ``_meta``; nothing else changes.

    ``item`` is a tool (renamed to ``name`` if given), or a response: then every content
    block of its result is tagged."""
    value = service_meta(service)
    if isinstance(item, Tool):
        tagged = _with_meta(item, value)
        return tagged if name is None else msgspec.structs.replace(tagged, name=name)
    result = item.result
    if result is None or not result.content:
        return item
    blocks = [_tag_block(block, value) for block in result.content]
    return msgspec.structs.replace(item, result=msgspec.structs.replace(result, content=blocks))


def _tag_block(block: ContentBlock, value: dict[str, str]) -> ContentBlock:
    if isinstance(block, UnknownContent):
        data = dict(block.data)
        meta = dict(data.get("_meta") or {})
        meta[SERVICE_META_KEY] = value
        data["_meta"] = meta
        return UnknownContent(data=data)
    return _with_meta(block, value)
