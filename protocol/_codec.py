"""Encoding and decoding of wire types in JSON and msgpack, with clear errors.

One encoder and decoder per type, created once. Decoding is strict and fast for the
types the spec knows; a content block of an unknown type sends the message down a slow
path that keeps the block as `UnknownContent` instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeVar, overload

import msgspec

from ._constants import JSONRPC_VERSION
from ._exceptions import ProtocolError
from ._types import (
    CallToolResult,
    JSONRPCErrorResponse,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    NativeMCPResponse,
    UnknownContent,
)

__all__ = [
    "JSONRPCMessage",
    "decode",
    "decode_message",
    "decode_response",
    "encode",
]

T = TypeVar("T")

Format = Literal["json", "msgpack"]

JSONRPCMessage = JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCErrorResponse

_UNKNOWN_TAG: Final = "__nativemcp_unknown__"
_KNOWN_BLOCK_TYPES: Final = frozenset({"text", "image", "audio", "resource_link", "resource"})

_json_encoder: Final = msgspec.json.Encoder()
_msgpack_encoder: Final = msgspec.msgpack.Encoder()
_json_any: Final = msgspec.json.Decoder()
_msgpack_any: Final = msgspec.msgpack.Decoder()
_json_response: Final = msgspec.json.Decoder(NativeMCPResponse[Any])
_msgpack_response: Final = msgspec.msgpack.Decoder(NativeMCPResponse[Any])

_MAX_PREVIEW: Final = 120
_ENVELOPES: Final = (
    NativeMCPResponse,
    JSONRPCRequest,
    JSONRPCNotification,
    JSONRPCResponse,
    JSONRPCErrorResponse,
)
_JSONRPC_PREFIX: Final = b'{"jsonrpc":"2.0",'


def preview(value: Any) -> str:
    """A short, single-line representation of ``value`` for error messages."""
    text = repr(value)
    return text if len(text) <= _MAX_PREVIEW else text[: _MAX_PREVIEW - 3] + "..."


def _has_unknown_blocks(obj: Any) -> bool:
    result = getattr(obj, "result", obj)
    if not isinstance(result, CallToolResult):
        return False
    return any(isinstance(block, UnknownContent) for block in result.content)


def _restore_unknown_blocks(builtins: Any) -> Any:
    # Put unknown blocks back exactly as they arrived.
    container = builtins.get("result", builtins) if isinstance(builtins, dict) else None
    if isinstance(container, dict) and isinstance(container.get("content"), list):
        container["content"] = [
            block["data"]
            if isinstance(block, dict) and block.get("type") == _UNKNOWN_TAG
            else block
            for block in container["content"]
        ]
    return builtins


def encode(obj: Any, format: Format = "json") -> bytes:
    """Encode a wire type (or builtins) as JSON or msgpack bytes.

    Raises:
        ProtocolError: ``obj`` holds a value that has no wire form.
    """
    original = obj
    try:
        if _has_unknown_blocks(obj):
            obj = _restore_unknown_blocks(msgspec.to_builtins(obj))
        if format == "msgpack":
            return _msgpack_encoder.encode(obj)
        encoded = _json_encoder.encode(obj)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {type(obj).__name__} as {format}: {exc}") from exc
    # `omit_defaults` drops `"jsonrpc": "2.0"`, which every JSON-RPC message must carry
    # on a JSON wire; put it back (msgpack frames inside nativemcp go without it).
    if isinstance(original, _ENVELOPES) and original.jsonrpc == JSONRPC_VERSION:
        return _JSONRPC_PREFIX + encoded[1:] if encoded != b"{}" else _JSONRPC_PREFIX[:-1] + b"}"
    return encoded


def _mark_unknown_blocks(raw: Any) -> Any:
    # The slow path: tag blocks of unknown types so they decode as UnknownContent.
    result = raw.get("result") if isinstance(raw, dict) else None
    container = result if isinstance(result, dict) else raw
    if isinstance(container, dict) and isinstance(container.get("content"), list):
        container["content"] = [
            {"type": _UNKNOWN_TAG, "data": block}
            if isinstance(block, dict) and block.get("type") not in _KNOWN_BLOCK_TYPES
            else block
            for block in container["content"]
        ]
    return raw


def _check_response(response: NativeMCPResponse[Any]) -> NativeMCPResponse[Any]:
    if response.result is None and response.error is None:
        raise ProtocolError("malformed response: it has neither `result` nor `error`")
    if response.result is not None and response.error is not None:
        raise ProtocolError("malformed response: it has both `result` and `error`")
    return response


def _raw_bytes(data: bytes | bytearray | memoryview | str) -> bytes | str:
    if isinstance(data, memoryview | bytearray):
        return bytes(data)
    return data


def decode_response(
    data: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    format: Format = "json",
) -> NativeMCPResponse[Any]:
    """Decode a ``tools/call`` response from JSON (bytes or str), msgpack or a dict.

    Content blocks of unknown types are kept as `UnknownContent`. A response must have
    exactly one of ``result`` and ``error``.

    Raises:
        ProtocolError: the input is not valid JSON/msgpack, not UTF-8, or not shaped
            like a response; the message says what and where.
    """
    if isinstance(data, Mapping):
        return _decode_builtins(dict(data))
    if not isinstance(data, bytes | bytearray | memoryview | str):
        raise ProtocolError(
            f"cannot decode a response from {type(data).__name__}; "
            "expected JSON bytes/str, msgpack bytes or a dict"
        )
    raw = _raw_bytes(data)
    strict = _json_response if format == "json" else _msgpack_response
    try:
        return _check_response(strict.decode(raw))
    except msgspec.ValidationError:
        pass  # perhaps an unknown content block type: take the slow path below
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"malformed {format} response: {exc}") from exc
    generic = _json_any if format == "json" else _msgpack_any
    try:
        builtins = generic.decode(raw)
    except msgspec.DecodeError as exc:  # pragma: no cover - strict decode saw the same bytes
        raise ProtocolError(f"malformed {format} response: {exc}") from exc
    return _decode_builtins(builtins)


def _decode_builtins(builtins: Any) -> NativeMCPResponse[Any]:
    if not isinstance(builtins, dict):
        raise ProtocolError(
            f"malformed response: expected an object, got {type(builtins).__name__}"
        )
    try:
        response = msgspec.convert(
            _mark_unknown_blocks(builtins), NativeMCPResponse[Any], strict=False
        )
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed response: {exc}") from exc
    return _check_response(response)


@overload
def decode(data: bytes | str, type_: type[T], *, format: Format = "json") -> T: ...
@overload
def decode(data: bytes | str, type_: Any, *, format: Format = "json") -> Any: ...
def decode(data: bytes | str, type_: Any, *, format: Format = "json") -> Any:
    """Decode JSON or msgpack bytes into ``type_`` (any wire type or msgspec-able type).

    Raises:
        ProtocolError: the bytes are malformed or do not match ``type_``.
    """
    try:
        if format == "json":
            return msgspec.json.decode(data, type=type_)
        if isinstance(data, str):
            raise ProtocolError("msgpack data must be bytes, got str")
        return msgspec.msgpack.decode(data, type=type_)
    except msgspec.MsgspecError as exc:
        name = getattr(type_, "__name__", repr(type_))
        raise ProtocolError(f"malformed {format} {name}: {exc}") from exc


def decode_message(data: bytes | str, *, format: Format = "json") -> JSONRPCMessage:
    """Decode any JSON-RPC 2.0 message: request, notification, response or error.

    Raises:
        ProtocolError: malformed input, a wrong ``jsonrpc`` version, or a shape that is
            none of the four message kinds.
    """
    raw: Any = decode(data, Any, format=format)
    if not isinstance(raw, dict):
        raise ProtocolError(f"malformed JSON-RPC message: expected an object, got {preview(raw)}")
    if raw.get("jsonrpc") != "2.0":
        raise ProtocolError(f"malformed JSON-RPC message: jsonrpc must be '2.0', got {preview(raw.get('jsonrpc'))}")
    kind: type[Any]
    if "method" in raw:
        kind = JSONRPCRequest if "id" in raw else JSONRPCNotification
    elif "error" in raw:
        kind = JSONRPCErrorResponse
    elif "result" in raw:
        kind = JSONRPCResponse
    else:
        raise ProtocolError("malformed JSON-RPC message: no method, result or error")
    try:
        message: JSONRPCMessage = msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed JSON-RPC {kind.__name__}: {exc}") from exc
    return message
