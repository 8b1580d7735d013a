"""What a tool call's outcome says to a model, before any provider's shape is applied.

One pass over a response (or the exception the call raised) settles:

- the **kind**: ``json``, ``text``, ``error`` or ``empty``;
- the **body**: the text blocks joined in order; the structured content as JSON when
  there is no text; an error object as JSON for errors;
- the JSON **value** when the body is JSON (parsed once, so no provider re-encodes it);
- **extras**: one line for each block that is not text (images, audio, links, UI
  resources), or the text of an embedded text resource, plus the image itself for
  providers that take images in tool results.

Nothing is guessed and nothing is logged above debug: JSON is recognised by parsing
(objects and arrays only: a bare ``true`` or ``42`` is text), errors by the response's
own flags, error codes by the protocol's `extract_error_info`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal, NamedTuple, TypeAlias

import msgspec

from nativemcp.protocol import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    NativeMCPResponse,
    ResourceLink,
    TextContent,
    ToolError,
    raise_for_error,
    result_text,
)

from ._budget import human_size

__all__ = ["EMPTY_RESULT_TEXT", "Extra", "Kind", "ToolOutput", "dump_json", "render"]

Kind: TypeAlias = Literal["json", "text", "error", "empty"]
"""How a tool result reads to a model."""

EMPTY_RESULT_TEXT: Final = "(the tool returned no content)"
"""What a model is told for a successful result with no content at all.

An empty string reads to some models like a failed call, and some provider APIs refuse
empty text."""

_NO_JSON: Final = object()
_LINE_LIMIT: Final = 200
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]+")


class Extra(NamedTuple):
    """A content block that is not text: what to tell the model, and the image if any."""

    note: str
    image: ImageContent | None = None
    with_image: bool = False
    """The note goes with the image too (it says the image was scaled down)."""


class ToolOutput(NamedTuple):
    """A tool call's outcome, decided once for every provider."""

    kind: Kind
    body: str
    value: Any = None
    extras: tuple[Extra, ...] = ()

    @property
    def text(self) -> str:
        """The body followed by one line (or resource text) per extra."""
        return "\n".join(part for part in (self.body, *(e.note for e in self.extras)) if part)


def dump_json(value: Any) -> str:
    """Compact UTF-8 JSON (Korean stays Korean, not ``\\uXXXX``)."""
    return msgspec.json.encode(value).decode()


def render(outcome: NativeMCPResponse[Any] | Exception) -> ToolOutput:
    """Decide kind, body, value and extras for a response or a raised exception.

    Raises:
        TypeError: ``outcome`` is neither a `NativeMCPResponse` nor an `Exception`
            (a cancellation is a `BaseException`: it is never turned into a message).
    """
    if isinstance(outcome, NativeMCPResponse):
        try:
            raise_for_error(outcome)
        except ToolError as exc:
            # The protocol already reads codes out of JSON-RPC errors and error texts.
            return _error_output(exc)
        return _result_output(outcome)
    if isinstance(outcome, Exception):
        return _error_output(outcome)
    raise TypeError(
        f"expected a NativeMCPResponse or the Exception a call raised, got {type(outcome).__name__}"
    )


def _error_output(exc: Exception) -> ToolOutput:
    error: dict[str, Any] = {}
    if isinstance(exc, ToolError):
        message, data = exc.message, exc.data
    else:
        # Runtime failures (timeout, crash, anything else): say what broke.
        error["type"] = type(exc).__name__
        message, data = str(exc) or type(exc).__name__, None
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        error["code"] = code
    error["message"] = message
    if data is not None:
        error["data"] = _json_safe(data)
    return ToolOutput("error", dump_json({"error": error}), error)


def _result_output(response: NativeMCPResponse[Any]) -> ToolOutput:
    result = response.result
    if result is None:  # pragma: no cover - a decoded response has a result or an error
        return ToolOutput("empty", EMPTY_RESULT_TEXT)
    extras = tuple(_extra(block) for block in result.content if not isinstance(block, TextContent))
    body = result_text(result)
    if body.strip():
        value = _parse_json(body)
        if value is _NO_JSON:
            value = _parse_json_blocks(result.content)
        if value is _NO_JSON:
            return ToolOutput("text", body, None, extras)
        return ToolOutput("json", body, value, extras)
    if result.structured_content is not None:
        structured = result.structured_content
        return ToolOutput("json", dump_json(structured), structured, extras)
    if extras:
        return ToolOutput("text", "", None, extras)
    return ToolOutput("empty", EMPTY_RESULT_TEXT)


def _parse_json(text: str) -> Any:
    """The object or array ``text`` holds, or ``_NO_JSON``."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return _NO_JSON
    try:
        value = json.loads(stripped, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _NO_JSON
    return value


def _parse_json_blocks(content: list[Any]) -> Any:
    """A list of values when there are several text blocks and each holds JSON.

    The official SDK mirrors a list result as one text block per item.
    """
    texts = [block.text for block in content if isinstance(block, TextContent)]
    if len(texts) < 2:
        return _NO_JSON
    values = [_parse_json(text) for text in texts]
    return _NO_JSON if any(value is _NO_JSON for value in values) else values


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; a text holding them is text.
    raise ValueError(name)


def _json_safe(value: Any) -> Any:
    try:
        return msgspec.to_builtins(value, str_keys=True)
    except (TypeError, ValueError, msgspec.EncodeError):
        return repr(value)


def _extra(block: Any) -> Extra:
    if isinstance(block, ImageContent):
        return Extra(f"[image omitted: {_describe(block.mime_type, _b64_size(block.data))}]", block)
    if isinstance(block, AudioContent):
        return Extra(f"[audio omitted: {_describe(block.mime_type, _b64_size(block.data))}]")
    if isinstance(block, ResourceLink):
        if _is_ui(block.uri, block.mime_type):
            return Extra(_ui_summary(block.uri, block.mime_type, block.size))
        label = _one_line(block.title or block.name)
        return Extra(
            f"[resource link: {label} <{_one_line(block.uri)}>"
            f"{_paren(block.mime_type, block.size)}]"
        )
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if resource.text is not None:
            size = len(resource.text.encode())
            if _is_ui(resource.uri, resource.mime_type):
                return Extra(_ui_summary(resource.uri, resource.mime_type, size))
            header = f"[resource {_one_line(resource.uri)}{_paren(resource.mime_type, size)}]"
            return Extra(f"{header}\n{resource.text}")
        size = _b64_size(resource.blob or "")
        if _is_ui(resource.uri, resource.mime_type):
            return Extra(_ui_summary(resource.uri, resource.mime_type, size))
        return Extra(
            f"[resource omitted: {_one_line(resource.uri)}{_paren(resource.mime_type, size)}]"
        )
    kind = getattr(block, "type", None) or "unknown"
    return Extra(f"[content block of type {_one_line(str(kind))!r} omitted]")


def _is_ui(uri: str, mime_type: str | None) -> bool:
    """MCP-UI / MCP Apps resources: ``ui://`` URIs or HTML (``text/html;profile=…`` too)."""
    mime = (mime_type or "").strip().lower()
    return uri.strip().lower().startswith("ui://") or mime.startswith("text/html")


def _ui_summary(uri: str, mime_type: str | None, size: int | None) -> str:
    # Never the markup itself: it is for the user's screen and costs the model tokens.
    return (
        f"[UI resource {_one_line(uri)}{_paren(mime_type, size)}: "
        f"an interactive view shown to the user, not included here]"
    )


def _paren(mime_type: str | None, size: int | None) -> str:
    parts = [_one_line(mime_type)] if mime_type else []
    if size is not None:
        parts.append(human_size(size))
    return f" ({', '.join(parts)})" if parts else ""


def _describe(mime_type: str, size: int) -> str:
    return f"{_one_line(mime_type) or 'unknown type'}, {human_size(size)}"


def _one_line(text: str | None) -> str:
    line = _CONTROL.sub(" ", text or "").strip()
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 1] + "…"


def _b64_size(data: str) -> int:
    """Decoded size of base64 ``data`` without decoding it."""
    significant = len(data) - sum(data.count(ws) for ws in "\r\n ")
    return max(significant * 3 // 4 - data[-2:].count("="), 0)
