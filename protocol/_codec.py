"""Encoding and decoding of wire types in JSON and msgpack, with clear errors.

One encoder and decoder per type, created once. Decoding is strict and fast for the
types the spec knows; a content block of an unknown type sends the message down a slow
path that keeps the block as `UnknownContent` instead of failing.
"""

from __future__ import annotations

import datetime
import typing
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
_FORMATS: Final = frozenset({"json", "msgpack"})
_MSGPACK_NATIVE: Final = (bytes, bytearray, memoryview, datetime.datetime)


def preview(value: Any) -> str:
    """A short, single-line representation of ``value`` for error messages."""
    text = repr(value)
    return text if len(text) <= _MAX_PREVIEW else text[: _MAX_PREVIEW - 3] + "..."


def _check_format(format: str) -> None:
    if format not in _FORMATS:
        raise ValueError(f"unknown wire format {format!r}; expected 'json' or 'msgpack'")


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
        ValueError: ``format`` is neither ``"json"`` nor ``"msgpack"``.
    """
    _check_format(format)
    original = obj
    try:
        if _has_unknown_blocks(obj):
            # msgspec cannot write a Struct as something else, so go through builtins;
            # keep the types msgpack has its own forms for (timestamps, binary).
            builtin_types = _MSGPACK_NATIVE if format == "msgpack" else None
            obj = _restore_unknown_blocks(msgspec.to_builtins(obj, builtin_types=builtin_types))
        if format == "msgpack":
            return _msgpack_encoder.encode(obj)
        encoded = _json_encoder.encode(obj)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ProtocolError(f"cannot encode {type(obj).__name__} as {format}: {exc}") from exc
    # `omit_defaults` drops `"jsonrpc": "2.0"`, which every JSON-RPC message must carry
    # on a JSON wire; put it back (msgpack frames inside nativemcp go without it).
    if isinstance(original, _ENVELOPES) and original.jsonrpc == JSONRPC_VERSION:
        return _JSONRPC_PREFIX + encoded[1:] if encoded != b"{}" else _JSONRPC_PREFIX[:-1] + b"}"
    return encoded


def _mark_unknown_blocks(result: Any) -> Any:
    """The slow path: a copy of a result dict whose unknown blocks decode as `UnknownContent`.

    Only the dicts on the way to the content list are copied: the caller's data stays
    as it was. Anything that is not shaped like a result is returned as it is, for the
    decoder to reject.

    Raises:
        ProtocolError: a content block has no string ``type``.
    """
    if not isinstance(result, dict) or not isinstance(result.get("content"), list):
        return result
    blocks: list[Any] = []
    for index, block in enumerate(result["content"]):
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, dict) and not isinstance(kind, str):
            raise ProtocolError(
                f"malformed response: content block {index} has no string `type` "
                f"(got {preview(kind)})"
            )
        if isinstance(kind, str) and kind not in _KNOWN_BLOCK_TYPES:
            block = {"type": _UNKNOWN_TAG, "data": block}
        blocks.append(block)
    return {**result, "content": blocks}


def _check_response(response: NativeMCPResponse[Any]) -> NativeMCPResponse[Any]:
    if response.jsonrpc != JSONRPC_VERSION:
        raise ProtocolError(
            f"malformed response: jsonrpc must be {JSONRPC_VERSION!r}, "
            f"got {preview(response.jsonrpc)}"
        )
    if response.result is None and response.error is None:
        raise ProtocolError("malformed response: it has neither `result` nor `error`")
    if response.result is not None and response.error is not None:
        raise ProtocolError("malformed response: it has both `result` and `error`")
    return response


def _decode_raw(decoder: Any, data: Any, format: str, what: str) -> Any:
    """``decoder.decode(data)`` with every malformed-input failure as `ProtocolError`.

    ``msgspec.ValidationError`` (the data parsed but has the wrong shape) propagates
    so that callers can choose a slower, more lenient path.
    """
    if format == "msgpack" and isinstance(data, str):
        raise ProtocolError(f"malformed msgpack {what}: msgpack data must be bytes, got str")
    try:
        return decoder.decode(data)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"malformed {format} {what}: {exc}") from exc
    except UnicodeError as exc:
        raise ProtocolError(f"malformed {format} {what}: not valid UTF-8 ({exc})") from exc
    except RecursionError as exc:
        raise ProtocolError(f"malformed {format} {what}: nested too deeply") from exc


def _decode_plain(decoder: Any, data: Any, format: str, what: str) -> Any:
    """`_decode_raw` into plain values, the last path: what even the plain decoder
    refuses (an invalid msgpack timestamp, say) is malformed input too."""
    try:
        return _decode_raw(decoder, data, format, what)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed {format} {what}: {exc}") from exc


def decode_response(
    data: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    format: Format = "json",
) -> NativeMCPResponse[Any]:
    """Decode a ``tools/call`` response from JSON (bytes or str), msgpack or a dict.

    Content blocks of unknown types are kept as `UnknownContent`. A response must have
    exactly one of ``result`` and ``error``. A dict is read as its JSON form would be
    (strictly) and is not modified.

    Raises:
        ProtocolError: the input is not valid JSON/msgpack, not UTF-8, or not shaped
            like a response; the message says what and where.
        ValueError: ``format`` is neither ``"json"`` nor ``"msgpack"``.
    """
    if isinstance(data, Mapping):
        return _decode_builtins(dict(data))
    if not isinstance(data, bytes | bytearray | memoryview | str):
        raise ProtocolError(
            f"cannot decode a response from {type(data).__name__}; "
            "expected JSON bytes/str, msgpack bytes or a dict"
        )
    _check_format(format)
    json_format = format == "json"
    try:
        response = _decode_raw(
            _json_response if json_format else _msgpack_response, data, format, "response"
        )
    except msgspec.ValidationError:
        pass  # perhaps an unknown content block type: take the slow path below
    else:
        # The fast path only meets `UnknownContent` when a peer forged our private tag.
        if not _has_unknown_blocks(response):
            return _check_response(response)
    builtins = _decode_plain(_json_any if json_format else _msgpack_any, data, format, "response")
    return _decode_builtins(builtins)


def _decode_builtins(builtins: Any) -> NativeMCPResponse[Any]:
    if not isinstance(builtins, dict):
        raise ProtocolError(
            f"malformed response: expected an object, got {type(builtins).__name__}"
        )
    try:
        marked = (
            {**builtins, "result": _mark_unknown_blocks(builtins["result"])}
            if ("result" in builtins)
            else builtins
        )
        response = msgspec.convert(marked, NativeMCPResponse[Any])
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed response: {exc}") from exc
    except RecursionError as exc:
        raise ProtocolError("malformed response: nested too deeply") from exc
    return _check_response(response)


@overload
def decode(data: bytes | str, type_: type[T], *, format: Format = "json") -> T: ...
@overload
def decode(data: bytes | str, type_: Any, *, format: Format = "json") -> Any: ...
def decode(data: bytes | str, type_: Any, *, format: Format = "json") -> Any:
    """Decode JSON or msgpack bytes into ``type_`` (any wire type or msgspec-able type).

    Raises:
        ProtocolError: the bytes are malformed or do not match ``type_``.
        ValueError: ``format`` is neither ``"json"`` nor ``"msgpack"``.
    """
    _check_format(format)
    if typing.get_origin(type_) is NativeMCPResponse or type_ is NativeMCPResponse:
        return _typed_response(decode_response(data, format=format), type_)
    module = msgspec.json if format == "json" else msgspec.msgpack
    name = getattr(type_, "__name__", repr(type_))
    try:
        return _decode_raw(module.Decoder(type_), data, format, name)
    except msgspec.ValidationError as exc:
        if type_ is not CallToolResult:
            raise ProtocolError(f"malformed {format} {name}: {exc}") from exc
    # A result with a block of a type this version does not know: keep the block.
    builtins = _decode_plain(module.Decoder(), data, format, name)
    try:
        return msgspec.convert(_mark_unknown_blocks(builtins), CallToolResult)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed {format} {name}: {exc}") from exc
    except RecursionError as exc:
        raise ProtocolError(f"malformed {format} {name}: nested too deeply") from exc


def _typed_response(response: NativeMCPResponse[Any], type_: Any) -> Any:
    args = typing.get_args(type_)
    if not args or args[0] is Any or response.structured_result is None:
        return response
    try:
        structured = msgspec.convert(response.structured_result, args[0])
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"malformed structuredResult for {preview(type_)}: {exc}") from exc
    return msgspec.structs.replace(response, structured_result=structured)


def decode_message(data: bytes | str, *, format: Format = "json") -> JSONRPCMessage:
    """Decode any JSON-RPC 2.0 message: request, notification, response or error.

    msgpack frames may leave out ``jsonrpc`` (`encode` does); JSON must carry it.

    Raises:
        ProtocolError: malformed input, a wrong ``jsonrpc`` version, or a shape that is
            none of the four message kinds.
        ValueError: ``format`` is neither ``"json"`` nor ``"msgpack"``.
    """
    raw: Any = decode(data, Any, format=format)
    if not isinstance(raw, dict):
        raise ProtocolError(f"malformed JSON-RPC message: expected an object, got {preview(raw)}")
    if format == "msgpack":
        raw.setdefault("jsonrpc", JSONRPC_VERSION)
    if raw.get("jsonrpc") != JSONRPC_VERSION:
        raise ProtocolError(
            f"malformed JSON-RPC message: jsonrpc must be {JSONRPC_VERSION!r}, "
            f"got {preview(raw.get('jsonrpc'))}"
        )
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
    except RecursionError as exc:
        raise ProtocolError(f"malformed JSON-RPC {kind.__name__}: nested too deeply") from exc
    return message
