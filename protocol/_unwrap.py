"""Unwrapping a response into the exact value the caller asked for.

Priority: ``structuredResult`` → ``structuredContent`` → JSON parsed from the text →
the raw text. The first source that converts to the requested type wins; when none
does, `UnwrapError` lists what was tried. Errors are raised, never returned as values.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Final, Generic, TypeVar, overload

import msgspec

from ._codec import Format, decode_response, preview
from ._constants import FASTMCP_WRAP_SCHEMA_KEY, JSONRPC_VERSION
from ._errortext import extract_error_info
from ._exceptions import ProtocolError, ToolError, UnwrapError
from ._types import (
    CallToolResult,
    ContentBlock,
    ErrorObject,
    NativeMCPResponse,
    TextContent,
    UnknownContent,
)

__all__ = ["raise_for_error", "result_text", "unwrap"]

T = TypeVar("T")

_MISSING: Final = object()
_FORMATS: Final = ("json", "msgpack")
_WIRE: Final = (bytes, bytearray, memoryview, str)


def result_text(result: CallToolResult | NativeMCPResponse[Any]) -> str:
    """The text a model reads from a result or a response.

    The text blocks of the result (or of the response's result) joined in order by
    newlines; for a JSON-RPC error response, its message.

    The typed way to read ``response.result.content[0].text``, which a strict type
    checker refuses (``result`` may be None, and a block may be an image).
    """
    if isinstance(result, NativeMCPResponse):
        if result.result is None:
            return result.error.message if result.error is not None else ""
        result = result.result
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def raise_for_error(response: NativeMCPResponse[Any], *, tool: str | None = None) -> None:
    """Raise `ToolError` when ``response`` is a JSON-RPC error or an ``isError`` result.

    Everything that came with the error travels on the exception: code, message,
    data, structured content and the full text.

    Raises:
        ToolError: the response is an error.
    """
    if response.error is not None:
        error = response.error
        raise ToolError(error.message, code=error.code, data=error.data, tool=tool)
    result = response.result
    if result is not None and result.is_error:
        text = result_text(result)
        info = extract_error_info(text) if text else None
        structured = result.structured_content
        code = info.code if info else None
        structured_code = structured.get("code") if structured is not None else None
        if (
            code is None
            and isinstance(structured_code, int)
            and not isinstance(structured_code, bool)
        ):
            code = structured_code
        message = info.message if info and info.message else (text or "the tool reported an error")
        raise ToolError(
            message,
            code=code,
            data=structured,
            structured_content=structured,
            text=text,
            tool=tool,
        )


def _is_object_type(type_: Any) -> bool | None:
    """True for types that decode from a JSON object; None when the target says nothing."""
    if type_ is object or type_ is Any:
        return None
    origin = typing.get_origin(type_)
    if origin is typing.Union or origin is types.UnionType:
        flags = [_is_object_type(arg) for arg in typing.get_args(type_) if arg is not type(None)]
        return any(flags)
    if origin is typing.Annotated:
        return _is_object_type(typing.get_args(type_)[0])
    target = origin or type_
    if not isinstance(target, type):
        return False
    if typing.is_typeddict(target) or dataclasses.is_dataclass(target):
        return True
    return issubclass(target, msgspec.Struct | Mapping)


def _is_list_type(type_: Any) -> bool:
    target = typing.get_origin(type_) or type_
    return isinstance(target, type) and issubclass(target, list | tuple | set | frozenset)


def _marked_wrapped(
    meta: Mapping[str, Any] | None, output_schema: Mapping[str, Any] | None
) -> bool:
    if output_schema is not None and output_schema.get(FASTMCP_WRAP_SCHEMA_KEY):
        return True
    fastmcp = (meta or {}).get("fastmcp")
    return isinstance(fastmcp, Mapping) and bool(fastmcp.get("wrap_result"))


def _texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _mirrors(result: CallToolResult, texts: list[str], value: Any) -> bool:
    """True when the content is the SDK's mirror of ``value`` (whole or per item)."""
    if not result.content:
        # The SDK writes no block at all for None and for an empty list.
        return value is None or value == []
    if len(texts) == 1 and (texts[0] == value or _parse_json(texts[0]) == value):
        return True
    return (
        isinstance(value, list)
        and len(value) == len(texts) > 0
        and all(_parse_json(text) == item for text, item in zip(texts, value, strict=True))
    )


def _structured_variants(
    result: CallToolResult, content: dict[str, Any], type_: Any, schema: Mapping[str, Any] | None
) -> list[Any]:
    if not (len(content) == 1 and "result" in content):
        return [content]
    inner = content["result"]
    if _marked_wrapped(result.meta, schema):
        return [inner]
    wants_object = _is_object_type(type_)
    if wants_object is None:
        # `object`: unwrap only what is recognisably the SDK's unmarked wrapper.
        return [inner] if _mirrors(result, _texts(result), inner) else [content]
    return [content, inner] if wants_object else [inner, content]


def _text_candidates(texts: list[str], type_: Any) -> list[tuple[str, Any]]:
    if not texts:
        return []
    candidates: list[tuple[str, Any]] = []
    parsed = [_parse_json(text) for text in texts]
    # The SDK mirrors a list result as one text block per item; a one-item list is
    # then one block, tried whole first and as the only item after.
    per_item = all(item is not _MISSING for item in parsed)
    wants_list = _is_list_type(type_)
    if per_item and len(texts) > 1 and (wants_list or _is_object_type(type_) is None):
        candidates.append(("JSON in the text blocks", parsed))
    if parsed[0] is not _MISSING:
        candidates.append(("JSON in the first text block", parsed[0]))
    if per_item and len(texts) == 1 and wants_list:
        candidates.append(("JSON in the text block as a one-item list", parsed))
    candidates.append(("raw text", "\n".join(texts)))
    return candidates


def _first_converted(candidates: list[tuple[str, Any]], type_: Any, failures: list[str]) -> Any:
    """The first candidate that converts to ``type_``, or _MISSING (reasons in failures)."""
    for source, value in candidates:
        try:
            return _convert(value, type_)
        except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as exc:
            failures.append(f"{source}: {exc}")
        except RecursionError:
            failures.append(f"{source}: nested too deeply")
    return _MISSING


def _convert(value: Any, type_: Any) -> Any:
    if type_ is object or type_ is Any:
        return value
    return msgspec.convert(value, type_, from_attributes=True)


# The typed fast path. `unwrap` on wire bytes first tries one pass: the envelope and
# the content blocks are decoded and validated, ``structuredResult`` (first in the
# priority order) straight into the requested type, ``structuredContent`` kept as raw
# bytes and decoded into the type only when no ``structuredResult`` came. Anything
# unusual (an error, an unknown block, a value that does not convert) returns _MISSING
# and the general path decides, so both give the same answer and the same errors.

_ABSENT: Final = msgspec.Raw(b"")
_NULL: Final = {"json": b"null", "msgpack": b"\xc0"}


class _LazyResult(msgspec.Struct, rename="camel", kw_only=True):
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    structured_content: msgspec.Raw = _ABSENT
    is_error: bool = False
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class _TypedResponse(msgspec.Struct, Generic[T], rename="camel", kw_only=True):
    """A response with ``structuredResult`` decoded into ``T`` in the same pass (a
    value-only reply is read once, not scanned and then decoded) and
    ``structuredContent`` kept raw."""

    jsonrpc: str = JSONRPC_VERSION
    id: int | str | None = None
    result: _LazyResult | None = None
    error: ErrorObject | None = None
    structured_result: T | None = None


class _Wrapped(msgspec.Struct, Generic[T], forbid_unknown_fields=True):
    result: T


class _Plan(msgspec.Struct, frozen=True):
    envelope: Any
    value: Any
    wrapped: Any
    wants_object: bool


_PLANS: Final[dict[tuple[Any, str], _Plan | None]] = {}
_MAX_PLANS: Final = 1024


def _plan(type_: Any, format: str) -> _Plan | None:
    # A plain dict beats lru_cache here; the cap only guards against a caller that
    # makes a new type per call.
    key = (type_, format)
    try:
        return _PLANS[key]
    except KeyError:
        pass
    plan = _make_plan(type_, format)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _make_plan(type_: Any, format: str) -> _Plan | None:
    wants_object = _is_object_type(type_)
    if wants_object is None:
        return None  # `object`: nothing to convert, the general path is as fast
    module: Any = msgspec.json if format == "json" else msgspec.msgpack
    try:
        value = module.Decoder(type_)
        wrapped = module.Decoder(_Wrapped[type_])
        envelope = module.Decoder(_TypedResponse[type_])
    except TypeError:
        return None  # a type msgspec cannot decode: the general path explains why
    return _Plan(envelope, value, wrapped, wants_object)


def _is_present(raw: msgspec.Raw, format: str) -> bool:
    """False for an absent field and for an explicit null (both mean "not sent")."""
    size = len(raw)
    return size > 4 or (size != 0 and bytes(raw) != _NULL[format])


def _is_object_raw(raw: msgspec.Raw, format: str) -> bool:
    first = memoryview(raw)[0]
    if format == "json":
        return first == 0x7B  # {
    return 0x80 <= first <= 0x8F or first in (0xDE, 0xDF)  # fixmap, map16, map32


def _has_unknown(content: list[ContentBlock]) -> bool:
    return UnknownContent in map(type, content)  # no generator: this runs per call


def _unwrap_direct(
    data: bytes | bytearray | memoryview | str,
    type_: Any,
    format: str,
    output_schema: Mapping[str, Any] | None,
) -> Any:
    try:
        plan = _plan(type_, format)
    except TypeError:  # unhashable type_
        return _MISSING
    if plan is None or (format == "msgpack" and isinstance(data, str)):
        return _MISSING
    try:
        # A structuredResult that does not convert fails here: the general path decides.
        lazy: _TypedResponse[Any] = plan.envelope.decode(data)
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        return _MISSING
    result = lazy.result
    if (
        result is None
        or lazy.error is not None
        or result.is_error
        or lazy.jsonrpc != JSONRPC_VERSION
        or _has_unknown(result.content)
    ):
        return _MISSING
    structured = result.structured_content
    has_structured = _is_present(structured, format)
    if has_structured and not _is_object_raw(structured, format):
        return _MISSING  # malformed: the general path raises ProtocolError
    if lazy.structured_result is not None:
        return lazy.structured_result
    try:
        if not has_structured:
            return _MISSING
        marked = _marked_wrapped(result.meta, output_schema)
        if plan.wants_object and not marked:
            return plan.value.decode(structured)
        return plan.wrapped.decode(structured).result
    except (msgspec.ValidationError, RecursionError):
        return _MISSING


@overload
def unwrap(
    response: NativeMCPResponse[Any] | bytes | bytearray | memoryview | str | Mapping[str, Any],
    type_: type[T],
    *,
    tool: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    format: Format = "json",
) -> T: ...
@overload
def unwrap(
    response: NativeMCPResponse[Any] | bytes | bytearray | memoryview | str | Mapping[str, Any],
    type_: Any = object,
    *,
    tool: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    format: Format = "json",
) -> Any: ...
def unwrap(
    response: NativeMCPResponse[Any] | bytes | bytearray | memoryview | str | Mapping[str, Any],
    type_: Any = object,
    *,
    tool: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    format: Format = "json",
) -> Any:
    """The value of a response as ``type_``.

    Sources by priority: ``structuredResult`` → ``structuredContent`` (the SDK's
    ``{"result": x}`` wrapper removed when marked, or when ``type_`` is not an object
    type) → JSON in the text (one block, or one block per list item) → raw text. The
    conversion is exact for msgspec Structs, dataclasses, TypedDicts, datetime, date,
    UUID, Decimal, bytes, enums and containers of them. With ``type_=object`` the
    value comes back as it arrived.

    Given wire bytes, the value is decoded straight from them into ``type_`` in one
    pass when it can be (several times faster than `decode_response` then `unwrap`);
    the answer is the same either way.

    Args:
        response: a decoded response, or JSON (bytes/str), msgpack bytes or a dict
            to decode.
        type_: the type to convert to.
        tool: the tool's name, for error messages.
        output_schema: the tool's output schema, to recognise FastMCP's wrap marker.
        format: the wire format of ``response`` when it is bytes: ``"json"`` or
            ``"msgpack"``.

    Raises:
        ToolError: the response is an error (JSON-RPC error or ``isError``).
        UnwrapError: no source converts to ``type_``.
        ProtocolError: ``response`` is bytes/str/dict that is not a valid response.
        ValueError: ``format`` is neither ``"json"`` nor ``"msgpack"``.
    """
    if isinstance(response, _WIRE) and format in _FORMATS:
        value = _unwrap_direct(response, type_, format, output_schema)
        if value is not _MISSING:
            return value
    if not isinstance(response, NativeMCPResponse):
        response = decode_response(response, format=format)
    raise_for_error(response, tool=tool)
    result = response.result
    if result is None:  # pragma: no cover - decode_response guarantees result or error
        raise ProtocolError("malformed response: no result")

    candidates: list[tuple[str, Any]] = []
    if response.structured_result is not None:
        candidates.append(("structuredResult", response.structured_result))
    if result.structured_content is not None:
        for variant in _structured_variants(
            result, result.structured_content, type_, output_schema
        ):
            candidates.append(("structuredContent", variant))
    failures: list[str] = []
    converted = _first_converted(candidates, type_, failures)
    if converted is not _MISSING:
        return converted
    # Only now parse the text: most results convert from their structured data, and
    # parsing a long rich text as JSON costs more than the whole conversion.
    text_candidates = _text_candidates(_texts(result), type_)
    if not candidates and not text_candidates:
        text_candidates.append(("empty result", None))
    converted = _first_converted(text_candidates, type_, failures)
    if converted is not _MISSING:
        return converted
    candidates.extend(text_candidates)
    arrived = ", ".join(f"{source}={preview(value)}" for source, value in candidates)
    raise UnwrapError(expected=type_, arrived=arrived, reason="; ".join(failures), tool=tool)
