"""The fast path's own checks of the requests and results it serves most: what the SDK's
checks decide, without the SDK's pydantic surface models.

Two checks run on every ``tools/call`` the fast path answers, and the SDK's cost about
13 and 23 us each (a microbenchmark on a loaded 2-core machine), ours a few:

- `routing_version`: the SDK's request ladder (`classify_inbound_request`) and its
  duplicated-routing-header check (`find_duplicated_routing_header`) over the raw
  headers: the ``_meta`` envelope, ``MCP-Protocol-Version``, ``Mcp-Method`` and
  ``Mcp-Name`` agreeing with the body, each routing header once;
- `plain_call_result`: the version's surface check of a plain tool result
  (`serialize_server_result` of ``tools/call``): the same dict, keys in the same order,
  so the same bytes on the wire.

Each answers only where it is sure: anything it does not know (a header it would have
to decode, a ``_meta`` key the surface declares, a structured result the 2025-11-25
surface refuses) is None, and the caller goes on to the SDK's own check as before. So
this never accepts what the SDK refuses, and never words a refusal.
tests/proxy/serve/test_own_checks.py holds both equal to the SDK's over generated
requests and results (malformed ones too), in both eras, and fails when the installed
SDK's surface models change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import mcp_types as types
from mcp.shared.inbound import NAME_BEARING_METHODS

__all__ = ["MODERN", "plain_call_result", "routing_version"]

MODERN: Final = "2026-07-28"
"""The per-request-envelope version whose results carry ``resultType`` and whose
``_meta`` objects drop null values (the SDK's ``MetaObject``)."""
LEGACY: Final = "2025-11-25"
"""The handshake-era version: ``_meta`` a plain object, ``structuredContent`` one too."""

_VERSION_HEADER: Final = b"mcp-protocol-version"
_METHOD_HEADER: Final = b"mcp-method"
_NAME_HEADER: Final = b"mcp-name"
_ROUTING: Final = (_VERSION_HEADER, _METHOD_HEADER, _NAME_HEADER)
_SENTINEL: Final = "=?"
"""An ``Mcp-Name`` carrying this may be base64 (``=?base64?...?=``): the SDK decodes it."""
_SERVER_INFO: Final = types.SERVER_INFO_META_KEY
"""The one key the 2026-07-28 result ``_meta`` declares: a declared field is dumped
before the others, so a ``_meta`` holding it is left to the SDK's check."""
_RESULT_KEYS: Final = frozenset({"content", "structuredContent", "isError", "_meta", "resultType"})
_BLOCK_KEYS: Final = frozenset({"type", "text", "_meta"})


def routing_version(
    decoded: dict[str, Any], headers: Iterable[tuple[bytes, bytes]], modern: frozenset[str]
) -> str | None:
    """The request's protocol version when the SDK's routing checks pass it (each
    routing header once, and the ladder of `classify_inbound_request`); None when they
    refuse it, or this cannot tell (the SDK's checks then decide).

    ``decoded`` is a JSON-RPC request whose ``params._meta`` is an object holding the
    version and capabilities keys (the caller checked); ``modern``: the versions served.
    """
    version_header = method_header = name_header = None
    for key, value in headers:
        if key in _ROUTING:
            if key == _VERSION_HEADER:
                if version_header is not None:
                    return None  # twice: first- and last-copy readers would disagree
                version_header = value
            elif key == _METHOD_HEADER:
                if method_header is not None:
                    return None
                method_header = value
            else:
                if name_header is not None:
                    return None
                name_header = value
    params = decoded["params"]
    version = params["_meta"][types.PROTOCOL_VERSION_META_KEY]
    method = decoded["method"]
    if (
        type(version) is not str
        or version not in modern
        or version_header is None
        or version_header.decode("latin-1") != version
        or method_header is None
        or method_header.decode("latin-1") != method
    ):
        return None
    name_key = NAME_BEARING_METHODS.get(method)
    if name_key is not None:
        value = params.get(name_key)
        if value is not None:
            if name_header is None:
                return None
            name = name_header.decode("latin-1")
            if _SENTINEL in name or name != value:
                return None  # perhaps base64: the SDK's decoder decides
    return version


def plain_call_result(version: str, dumped: dict[str, Any]) -> dict[str, Any] | None:
    """``serialize_server_result("tools/call", version, dumped)`` for a plain result
    (`plain_dump`'s: text blocks, no annotations), key for key and in the same order;
    None where the SDK's check must decide (it may refuse, or dump otherwise)."""
    if not dumped.keys() <= _RESULT_KEYS:
        return None
    modern = version == MODERN
    if not modern and version != LEGACY:
        return None
    out: dict[str, Any] = {}
    meta = dumped.get("_meta")
    if meta is not None:
        if type(meta) is not dict or (modern and _SERVER_INFO in meta):
            return None
        out["_meta"] = _meta(meta, modern)
    content = dumped.get("content")
    if type(content) is not list:
        return None
    blocks = []
    for block in content:
        if type(block) is not dict or not block.keys() <= _BLOCK_KEYS:
            return None
        if block.get("type") != "text" or type(block.get("text")) is not str:
            return None
        shaped: dict[str, Any] = {}
        block_meta = block.get("_meta")
        if block_meta is not None:
            if type(block_meta) is not dict:
                return None
            shaped["_meta"] = _meta(block_meta, modern)
        shaped["text"] = block["text"]
        shaped["type"] = "text"
        blocks.append(shaped)
    out["content"] = blocks
    is_error = dumped.get("isError")
    if is_error is not None:
        if type(is_error) is not bool:
            return None
        out["isError"] = is_error
    if modern:
        if dumped.get("resultType") != "complete":
            return None
        out["resultType"] = "complete"
    structured = dumped.get("structuredContent")
    if structured is not None:
        if not modern and type(structured) is not dict:
            return None  # the 2025-11-25 surface refuses it: the SDK words that
        out["structuredContent"] = structured
    return out


def _meta(meta: dict[str, Any], modern: bool) -> dict[str, Any]:
    """A ``_meta`` object as the surface dumps it: 2026-07-28's ``MetaObject`` leaves
    out its null members (its extras are fields to ``exclude_none``), 2025-11-25's plain
    object keeps them."""
    if not modern:
        return meta
    return {key: value for key, value in meta.items() if value is not None}
