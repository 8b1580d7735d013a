"""Response constructors: every tool source in nativemcp builds its responses with these.

There is no normalize-anything step anywhere: a worker, a bridge or an in-process server
says what it returns by choosing a constructor.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ._constants import INTERNAL_ERROR
from ._exceptions import ProtocolError
from ._types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ErrorObject,
    NativeMCPResponse,
    ResourceContents,
    TextContent,
)

__all__ = [
    "compact",
    "empty_response",
    "error_response",
    "expand",
    "structured_response",
    "text_resource_response",
    "text_response",
    "to_structured_content",
    "tool_error_response",
]

T = TypeVar("T")


def to_structured_content(value: Any) -> dict[str, Any]:
    """The JSON object form of ``value`` for ``structuredContent``.

    Objects (Structs, dataclasses, dicts) stay objects; anything else is wrapped as
    ``{"result": value}``, the wrapper the official SDK uses for non-object outputs.

    Raises:
        ProtocolError: ``value`` holds something with no JSON form.
    """
    try:
        builtins = msgspec.to_builtins(value, str_keys=True)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ProtocolError(
            f"cannot build structured content from {type(value).__name__}: {exc}"
        ) from exc
    if isinstance(builtins, dict):
        return builtins
    return {"result": builtins}


def text_response(
    text: str, *, id: int | str | None = None, meta: dict[str, Any] | None = None
) -> NativeMCPResponse[str]:
    """A plain text result: one text block, the text is also the value."""
    return NativeMCPResponse(
        id=id, result=CallToolResult(content=[TextContent(text=text)], meta=meta)
    )


def structured_response(
    text: str,
    value: T,
    *,
    id: int | str | None = None,
    extra_content: list[ContentBlock] | None = None,
    meta: dict[str, Any] | None = None,
) -> NativeMCPResponse[T]:
    """Rich text for the model plus the exact value for code.

    ``structuredContent`` is the JSON object form of ``value`` (see
    `to_structured_content`); ``structuredResult`` is ``value`` itself.
    ``extra_content`` blocks follow the text block.

    Raises:
        ProtocolError: ``value`` holds something with no JSON form.
    """
    content: list[ContentBlock] = [TextContent(text=text), *(extra_content or ())]
    return NativeMCPResponse(
        id=id,
        result=CallToolResult(
            content=content, structured_content=to_structured_content(value), meta=meta
        ),
        structured_result=value,
    )


def text_resource_response(
    text: str,
    resource: ResourceContents | EmbeddedResource,
    *,
    value: Any = None,
    id: int | str | None = None,
    meta: dict[str, Any] | None = None,
) -> NativeMCPResponse[Any]:
    """Text first, then a resource (an export card, a file): ``[text, resource]``.

    With ``value``, the response also carries it as structured content and result.
    """
    block = (
        resource if isinstance(resource, EmbeddedResource) else EmbeddedResource(resource=resource)
    )
    result = CallToolResult(content=[TextContent(text=text), block], meta=meta)
    if value is None:
        return NativeMCPResponse(id=id, result=result)
    result.structured_content = to_structured_content(value)
    return NativeMCPResponse(id=id, result=result, structured_result=value)


def error_response(
    message: str,
    *,
    code: int = INTERNAL_ERROR,
    data: Any = None,
    id: int | str | None = None,
) -> NativeMCPResponse[Any]:
    """A JSON-RPC error response (protocol-level failure: bad arguments, unknown tool)."""
    return NativeMCPResponse(id=id, error=ErrorObject(code=code, message=message, data=data))


def tool_error_response(
    text: str,
    *,
    structured_content: dict[str, Any] | None = None,
    id: int | str | None = None,
    meta: dict[str, Any] | None = None,
) -> NativeMCPResponse[Any]:
    """An ``isError`` tool result: the tool ran and failed; the text tells the model why."""
    return NativeMCPResponse(
        id=id,
        result=CallToolResult(
            content=[TextContent(text=text)],
            structured_content=structured_content,
            is_error=True,
            meta=meta,
        ),
    )


def empty_response(*, id: int | str | None = None) -> NativeMCPResponse[None]:
    """A successful result with no content (a tool that returns nothing)."""
    return NativeMCPResponse(id=id, result=CallToolResult())


def compact(response: NativeMCPResponse[T]) -> NativeMCPResponse[T]:
    """Drop ``structuredResult`` when it carries exactly what ``structuredContent`` does.

    The structured payload then crosses the wire once; `expand` (or `unwrap`, which falls
    back to ``structuredContent``) restores it on the other side.
    """
    result = response.result
    if response.structured_result is None or result is None:
        return response
    if msgspec.to_builtins(response.structured_result, str_keys=True) == result.structured_content:
        return msgspec.structs.replace(response, structured_result=None)
    return response


def expand(response: NativeMCPResponse[Any]) -> NativeMCPResponse[Any]:
    """Rebuild ``structuredResult`` from ``structuredContent`` after `compact`."""
    result = response.result
    if response.structured_result is None and result is not None and result.structured_content:
        return msgspec.structs.replace(response, structured_result=result.structured_content)
    return response
