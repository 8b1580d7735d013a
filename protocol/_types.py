"""Wire types: JSON-RPC 2.0 messages, MCP content blocks, tool results and tool definitions.

Python attributes are snake_case, wire names are the spec's camelCase (``_meta`` for
``meta``). Every content block has a ``.type`` like the official SDK's types. A block
of a type this version does not know decodes as `UnknownContent` and re-encodes
unchanged: the spec grows, and an old reader must not drop what a new writer sent.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Literal, TypeAlias, TypeVar

import msgspec

from ._constants import JSONRPC_VERSION

__all__ = [
    "Annotations",
    "AudioContent",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "ErrorObject",
    "Icon",
    "ImageContent",
    "JSONRPCErrorResponse",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "KnownContentBlock",
    "NativeMCPResponse",
    "RequestId",
    "ResourceContents",
    "ResourceLink",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "ToolExecution",
    "UnknownContent",
]

T = TypeVar("T")

RequestId: TypeAlias = int | str
"""A JSON-RPC request id."""

_META = msgspec.field(default=None, name="_meta")


class Annotations(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """Hints for the client about a content block (audience, priority, last modified)."""

    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None
    last_modified: str | None = None


class _ContentBlock(
    msgspec.Struct, tag_field="type", omit_defaults=True, rename="camel", kw_only=True
):
    """A content block's wire form: tagged by ``type``, camelCase names, defaults left out.

    The fields stay on each block (``annotations`` and ``_meta`` last): a subclass's
    fields follow its base's, and a block's fields encode in the order they are listed.
    """


class TextContent(_ContentBlock, tag="text"):
    """Text for the model (rich, self-explaining text in nativemcp's own results)."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = _META


class _Base64Content(_ContentBlock):
    """The spec's media blocks share one shape: base64 ``data`` and its ``mimeType``."""

    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = _META


class ImageContent(_Base64Content, tag="image"):
    """An image, base64-encoded in ``data``."""

    type: ClassVar[Literal["image"]] = "image"


class AudioContent(_Base64Content, tag="audio"):
    """Audio, base64-encoded in ``data``."""

    type: ClassVar[Literal["audio"]] = "audio"


class Icon(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """An icon for a resource link or a tool: a URL or data URI, with optional hints."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


class ResourceLink(_ContentBlock, tag="resource_link"):
    """A link to a resource the client may read or subscribe to."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = _META


class ResourceContents(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """The contents of a resource: ``text`` for a text resource, ``blob`` (base64) for binary.

    Exactly one of the two is set; the spec's ``TextResourceContents`` and
    ``BlobResourceContents`` are this one type here, told apart by which is present.
    """

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: dict[str, Any] | None = _META

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("resource contents need exactly one of `text` and `blob`")


class EmbeddedResource(_ContentBlock, tag="resource"):
    """A resource embedded in a result (text or blob contents)."""

    type: ClassVar[Literal["resource"]] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = _META


class UnknownContent(msgspec.Struct, tag="__nativemcp_unknown__", tag_field="type", kw_only=True):
    """A content block of a type this version does not know, kept as it arrived.

    ``data`` is the whole block as decoded (``type`` included); encoders write it back
    unchanged. Never decoded directly: `decode_response` builds it.
    """

    data: dict[str, Any]

    @property
    def type(self) -> str:
        """The block's ``type`` as sent."""
        return str(self.data.get("type", ""))


KnownContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)
"""The five content block types of the MCP spec."""

ContentBlock: TypeAlias = KnownContentBlock | UnknownContent
"""Any content block, including blocks of types this version does not know."""


def _no_blocks() -> list[ContentBlock]:
    # Not `list` itself: `omit_defaults` drops an empty list made by the builtin factory,
    # but the spec requires `content` on the wire even when it is empty.
    return []


class CallToolResult(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """The result of ``tools/call``: content for the model plus structured data.

    ``content`` is always written (the spec requires it), and read as empty when a
    sender left it out.
    """

    content: list[ContentBlock] = msgspec.field(default_factory=_no_blocks)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = _META


class ErrorObject(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A JSON-RPC error: code, message and optional data."""

    code: int
    message: str
    data: Any = None


class NativeMCPResponse(
    msgspec.Struct, Generic[T], omit_defaults=True, rename="camel", kw_only=True
):
    """A JSON-RPC response to ``tools/call`` plus ``structuredResult``, the exact typed value.

    Exactly one of ``result`` and ``error`` is set. ``structured_result`` is the tool's
    return value as its own type (a list or scalar too, where ``structuredContent`` must
    be an object); when absent, unwrapping falls back to ``structuredContent``.
    """

    jsonrpc: str = JSONRPC_VERSION
    id: int | str | None = None
    result: CallToolResult | None = None
    error: ErrorObject | None = None
    structured_result: T | None = None

    @property
    def is_error(self) -> bool:
        """True for a JSON-RPC error response or an ``isError`` tool result."""
        return self.error is not None or (self.result is not None and self.result.is_error)


class JSONRPCRequest(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A JSON-RPC request: expects a response with the same ``id``."""

    jsonrpc: str = JSONRPC_VERSION
    id: int | str
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A JSON-RPC notification: no ``id``, no response."""

    jsonrpc: str = JSONRPC_VERSION
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResponse(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A successful JSON-RPC response with any result object."""

    jsonrpc: str = JSONRPC_VERSION
    id: int | str
    result: dict[str, Any]


class JSONRPCErrorResponse(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A JSON-RPC error response (``id`` is null when the request id was unreadable)."""

    jsonrpc: str = JSONRPC_VERSION
    id: int | str | None
    error: ErrorObject


class ToolAnnotations(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """Hints about a tool's behaviour (untrusted unless the server is trusted)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolExecution(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """How a tool may be executed (whether it supports running as a task)."""

    task_support: Literal["forbidden", "optional", "required"] | None = None


class Tool(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """A tool definition as listed by ``tools/list``."""

    name: str
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    execution: ToolExecution | None = None
    icons: list[Icon] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = _META
