"""One call of the console's session, and its result as the page renders it.

The model's text and the app's typed value side by side, with their sizes in bytes and
tokens; each content block as the page shows it, its bytes kept here behind a URL (a
blob's download, a UIResource's one-time frame).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import anyio
import msgspec

from nativemcp.protocol import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    NativeMCPResponse,
    ResourceLink,
    TextContent,
    result_text,
    service_meta,
    unwrap,
)

from ..llm._tokens import count_tokens, token_note
from ._apps import app_view
from ._catalog import ConsoleCatalog
from ._sandbox import SandboxGrant

__all__: list[str] = []  # `_Call` and `_result_view` are the console app's own

_UI_MIME_TYPES: Final = ("text/html",)
_SAFE_FILENAME: Final = re.compile(r"[^A-Za-z0-9._ -]+")


@dataclass
class _Call:
    """One call of the session: its progress as it runs, then its result."""

    id: int
    tool: str
    arguments: dict[str, Any]
    origin: str
    """``form``, or ``ui:<call id>`` for a call a UIResource asked for."""
    started: float = field(default_factory=time.time)
    progress: list[dict[str, Any]] = field(default_factory=list)
    view: dict[str, Any] | None = None
    content: list[ContentBlock] = field(default_factory=list)
    blobs: dict[int, tuple[bytes, str]] = field(default_factory=dict)
    documents: dict[int, str] = field(default_factory=dict)
    host_actions: list[dict[str, Any]] = field(default_factory=list)
    app_grant: SandboxGrant | None = None
    """The call's MCP App frame: its policy and host origin, for the sandbox proxy."""
    trace_id: int | None = None
    """The trace of the call's spans (None: none recorded)."""
    changed: anyio.Event = field(default_factory=anyio.Event)

    def touch(self) -> None:
        """Wake every stream following this call."""
        self.changed.set()
        self.changed = anyio.Event()

    def summary(self) -> dict[str, Any]:
        view = self.view or {}
        return {
            "id": self.id,
            "tool": self.tool,
            "origin": self.origin,
            "started": self.started,
            "status": view.get("status", "running"),
            "elapsedMs": view.get("elapsedMs"),
        }


def _json_size(value: Any) -> tuple[str, int, int]:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text, len(text.encode()), count_tokens(text)


def _filename(uri: str, mime_type: str) -> str:
    """A plain file name for a downloaded resource: its URI's last segment, made safe."""
    last = unquote(urlsplit(uri).path).rsplit("/", 1)[-1]
    safe = _SAFE_FILENAME.sub("_", last).strip(" .")
    return safe or ("download" + (".bin" if mime_type == "application/octet-stream" else ""))


def _block_view(call: _Call, index: int, block: ContentBlock) -> dict[str, Any]:
    """One content block as the page renders it (bytes stay here, behind a URL)."""
    meta = getattr(block, "meta", None)
    base: dict[str, Any] = {"index": index, "meta": meta}
    if isinstance(block, TextContent):
        return {**base, "type": "text", "text": block.text}
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        if not block.mime_type.startswith(f"{kind}/"):
            return {**base, "type": "unsupported", "note": f"{kind} of type {block.mime_type}"}
        return {**base, "type": kind, "mimeType": block.mime_type, "data": block.data}
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or ""
        is_ui = resource.uri.startswith("ui://") and mime.split(";")[0].strip() in _UI_MIME_TYPES
        if is_ui and resource.text is not None:
            call.documents[index] = resource.text
            frame = f"api/calls/{call.id}/frames/{index}"
            return {**base, "type": "ui", "uri": resource.uri, "frame": frame}
        if resource.blob is not None:
            try:
                data = base64.b64decode(resource.blob, validate=True)
            except (binascii.Error, ValueError):
                return {**base, "type": "unsupported", "note": f"bad base64 in {resource.uri}"}
            mime = mime or "application/octet-stream"
            call.blobs[index] = (data, _filename(resource.uri, mime))
            return {
                **base,
                "type": "blob",
                "uri": resource.uri,
                "mimeType": mime,
                "size": len(data),
                "filename": call.blobs[index][1],
                "href": f"api/calls/{call.id}/blobs/{index}",
            }
        text = resource.text or ""
        return {**base, "type": "resource", "uri": resource.uri, "mimeType": mime, "text": text}
    if isinstance(block, ResourceLink):
        return {**base, "type": "link", "uri": block.uri, "name": block.name}
    return {**base, "type": "unsupported", "note": "an unknown kind of content block"}


def _result_view(
    call: _Call, catalog: ConsoleCatalog, response: NativeMCPResponse[Any], elapsed_ms: float
) -> dict[str, Any]:
    """The two readers side by side: the model's text and the app's typed value."""
    result = response.result
    if response.error is not None:
        text, value, status = response.error.message, msgspec.to_builtins(response.error), "error"
        blocks: list[dict[str, Any]] = []
    else:
        assert result is not None
        call.content = list(result.content)
        text = result_text(result)
        # What the app gets is what `unwrap` gives it: structuredResult, else
        # structuredContent, else the JSON in the text, else the text itself (a tool
        # that returns a plain `str` showed null here before).
        value = (
            result.structured_content if result.is_error else msgspec.to_builtins(unwrap(response))
        )
        status = "error" if result.is_error else "ok"
        blocks = [_block_view(call, i, block) for i, block in enumerate(result.content)]
    _, value_bytes, value_tokens = _json_size(value)
    return {
        **call.summary(),
        "status": status,
        "elapsedMs": round(elapsed_ms, 2),
        "arguments": call.arguments,
        "service": service_meta(catalog.service(call.tool)),
        "text": text,
        "textBytes": len(text.encode()),
        "textTokens": count_tokens(text),
        "value": value,
        "valueBytes": value_bytes,
        "valueTokens": value_tokens,
        "blocks": blocks,
        "hostActions": call.host_actions,
        "tokenNote": token_note(),
        # An MCP App shows a successful result (a tool error shows none).
        "app": app_view(
            call.id,
            catalog.tool(call.tool),
            catalog.service(call.tool).tool_name,
            call.arguments,
            result,
        )
        if status == "ok"
        else None,
    }
