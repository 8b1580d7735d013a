"""Conversion both ways between nativemcp's wire types and the official SDK's ``mcp_types``.

The SDK's pydantic models are imported on first use, so importing ``nativemcp.protocol``
(and starting a worker) does not pay for pydantic.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._codec import preview
from ._constants import STRUCTURED_RESULT_META_KEY
from ._exceptions import ProtocolError
from ._types import (
    Annotations,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ErrorObject,
    Icon,
    ImageContent,
    JSONRPCErrorResponse,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    NativeMCPResponse,
    ResourceContents,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolExecution,
    UnknownContent,
)

if TYPE_CHECKING:
    import mcp_types
    from pydantic import BaseModel

__all__ = ["from_sdk", "response_from_sdk", "response_to_sdk", "spec_call_result", "to_sdk"]

_SAME_NAME: Final[frozenset[type[msgspec.Struct]]] = frozenset(
    {
        Annotations,
        AudioContent,
        CallToolResult,
        EmbeddedResource,
        Icon,
        ImageContent,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
        ResourceLink,
        TextContent,
        Tool,
        ToolAnnotations,
        ToolExecution,
    }
)
_OURS: Final[frozenset[type[msgspec.Struct]]] = _SAME_NAME | {
    ErrorObject,
    JSONRPCErrorResponse,
    ResourceContents,
}
# `omit_defaults` drops `jsonrpc`, but the SDK's envelopes require it.
_ENVELOPES: Final = (JSONRPCRequest, JSONRPCNotification, JSONRPCResponse, JSONRPCErrorResponse)


@functools.cache
def _pairs() -> dict[type[Any], type[Any]]:
    """Our type → the SDK's type, and the SDK's type → ours."""
    import mcp_types

    ours_to_sdk: dict[type[Any], type[Any]] = {
        cls: getattr(mcp_types, cls.__name__) for cls in _SAME_NAME
    }
    ours_to_sdk[ErrorObject] = mcp_types.ErrorData
    ours_to_sdk[JSONRPCErrorResponse] = mcp_types.JSONRPCError
    pairs = dict(ours_to_sdk)
    pairs.update({sdk: ours for ours, sdk in ours_to_sdk.items()})
    # The SDK splits resource contents in two; here they are one type.
    pairs[mcp_types.TextResourceContents] = ResourceContents
    pairs[mcp_types.BlobResourceContents] = ResourceContents
    return pairs


def _sdk_type(obj: msgspec.Struct) -> type[Any] | None:
    if isinstance(obj, ResourceContents):
        import mcp_types

        return (
            mcp_types.TextResourceContents
            if obj.text is not None
            else (mcp_types.BlobResourceContents)
        )
    return _pairs().get(type(obj)) if type(obj) in _OURS else None


def _builtins(obj: msgspec.Struct) -> Any:
    if isinstance(obj, CallToolResult):
        for block in obj.content:
            if isinstance(block, UnknownContent):
                raise ProtocolError(
                    f"the official SDK has no type for content block {block.type!r}; "
                    "it cannot be converted"
                )
    builtins = msgspec.to_builtins(obj)
    if isinstance(obj, _ENVELOPES):
        builtins["jsonrpc"] = obj.jsonrpc
    return builtins


def to_sdk(obj: msgspec.Struct) -> BaseModel:
    """The official SDK model equal to ``obj`` (``_meta`` and every field kept).

    `ResourceContents` becomes ``TextResourceContents`` or ``BlobResourceContents``.

    Raises:
        ProtocolError: ``obj`` has no SDK counterpart (or holds an unknown content
            block, which the SDK cannot represent), or the SDK rejects a value.
    """
    sdk_type = _sdk_type(obj)
    if sdk_type is None:
        raise ProtocolError(f"no official SDK type for {type(obj).__name__}")
    from pydantic import ValidationError

    try:
        model: BaseModel = sdk_type.model_validate(_builtins(obj))
    except ValidationError as exc:
        raise ProtocolError(f"the SDK rejects this {type(obj).__name__}: {exc}") from exc
    return model


def from_sdk(model: BaseModel) -> Any:
    """Our wire type equal to an official SDK model (``_meta`` and every field kept).

    Raises:
        ProtocolError: the model's type has no counterpart here.
    """
    ours = _pairs().get(type(model))
    # The map goes both ways: a type found in it that is not ours is an SDK type, so
    # ``model`` was one of ours, not an SDK model.
    if ours is None or ours not in _OURS:
        raise ProtocolError(f"no nativemcp type for SDK type {type(model).__name__}")
    data = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    if ours is JSONRPCErrorResponse:
        data.setdefault("id", None)  # a null id is required there, not absent
    try:
        return msgspec.convert(data, ours)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"cannot read SDK {type(model).__name__}: {exc}") from exc


def response_to_sdk(response: NativeMCPResponse[Any]) -> mcp_types.CallToolResult:
    """The spec-conformant ``CallToolResult`` for the MCP boundary.

    Spec clients drop unknown top-level fields, so a ``structuredResult`` that differs
    from ``structuredContent`` travels in ``_meta["io.github.nativemcp/structuredResult"]``.
    A JSON-RPC error response has no ``CallToolResult`` form.

    Raises:
        ProtocolError: ``response`` is a JSON-RPC error response, or its
            ``structuredResult`` has no JSON form.
    """
    import mcp_types

    model = to_sdk(spec_call_result(response))
    assert isinstance(model, mcp_types.CallToolResult)
    return model


def spec_call_result(response: NativeMCPResponse[Any]) -> CallToolResult:
    """The ``CallToolResult`` a spec client reads, as our own type.

    A ``structuredResult`` that differs from ``structuredContent`` moves into
    ``_meta["io.github.nativemcp/structuredResult"]`` (`response_to_sdk` is the same
    result as the SDK's model).

    Raises:
        ProtocolError: ``response`` is a JSON-RPC error response, or its
            ``structuredResult`` has no JSON form.
    """
    if response.result is None:
        raise ProtocolError("a JSON-RPC error response has no CallToolResult form")
    result = response.result
    structured = response.structured_result
    if structured is not None:
        try:
            builtins = msgspec.to_builtins(structured, str_keys=True)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(f"structuredResult has no JSON form: {exc}") from exc
        if builtins != result.structured_content:
            meta = dict(result.meta or {})
            meta[STRUCTURED_RESULT_META_KEY] = builtins
            result = msgspec.structs.replace(result, meta=meta)
    return result


def response_from_sdk(
    result: mcp_types.CallToolResult | mcp_types.ErrorData | mcp_types.JSONRPCError,
    *,
    id: int | str | None = None,
) -> NativeMCPResponse[Any]:
    """A `NativeMCPResponse` from what an SDK client got back from ``tools/call``.

    A ``CallToolResult`` gives a result, with ``structuredResult`` restored from
    ``_meta`` (and the key removed from it). An ``ErrorData`` (the ``.error`` of the
    SDK's ``MCPError``) or a ``JSONRPCError`` gives an error response, code, message
    and data kept; a ``JSONRPCError`` brings its own ``id``.

    Raises:
        ProtocolError: ``result`` is none of these.
    """
    ours = from_sdk(result)
    if isinstance(ours, ErrorObject):
        return NativeMCPResponse(id=id, error=ours)
    if isinstance(ours, JSONRPCErrorResponse):
        return NativeMCPResponse(id=ours.id if id is None else id, error=ours.error)
    if not isinstance(ours, CallToolResult):
        raise ProtocolError(
            f"expected a CallToolResult, ErrorData or JSONRPCError, got {preview(result)}"
        )
    structured: Any = None
    if ours.meta and STRUCTURED_RESULT_META_KEY in ours.meta:
        meta = dict(ours.meta)
        structured = meta.pop(STRUCTURED_RESULT_META_KEY)
        ours = msgspec.structs.replace(ours, meta=meta or None)
    return NativeMCPResponse(id=id, result=ours, structured_result=structured)
