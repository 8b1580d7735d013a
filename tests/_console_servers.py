"""A server for the browser console tests: media, progress, host actions, hostile strings.

A module so the console's worker process can import it (``_console_servers:server``).
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from typing import Any, Final

import anyio

from nativemcp.protocol import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    NativeMCPResponse,
    ResourceContents,
    TextContent,
)
from nativemcp.workers import Context, Server

HOSTILE: Final = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
"""Markup that would run if any page parsed a tool's string as HTML."""

server = Server("console-test", description=f"Console test tools {HOSTILE}")

_released: dict[str, anyio.Event] = {}


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, built by hand (no imaging library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def _wav() -> bytes:
    """A tenth of a second of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 800)
    return buffer.getvalue()


@server.tool
def picture() -> NativeMCPResponse[Any]:
    """Answers with a picture and a sound."""
    return NativeMCPResponse(
        result=CallToolResult(
            content=[
                TextContent(text="A green square and a short silence."),
                ImageContent(
                    data=base64.b64encode(_png(24, 24, (40, 160, 60))).decode(),
                    mime_type="image/png",
                ),
                AudioContent(data=base64.b64encode(_wav()).decode(), mime_type="audio/wav"),
            ],
            structured_content={"width": 24, "height": 24},
        )
    )


@server.tool
async def slow(ctx: Context, key: str) -> str:
    """Reports one step of four, then waits until `release` is called with the same key."""
    await ctx.report_progress(1, 4, "one of four")
    await _released.setdefault(key, anyio.Event()).wait()
    return f"released {key}"


@server.tool
def release(key: str) -> bool:
    """Lets the `slow` call waiting on `key` finish."""
    # A sync tool runs in a worker thread: the event loop's objects are set through it.
    anyio.from_thread.run_sync(_released.setdefault(key, anyio.Event()).set)
    return True


@server.tool(description=f"Echoes a name back {HOSTILE}")
def hostile(name: str) -> dict[str, str]:
    """(described above)"""
    return {"name": name, "html": HOSTILE}


_ACTIONS_CARD: Final = """<!DOCTYPE html><html><body>
<button id="notify">notify</button><button id="link">link</button>
<button id="prompt">prompt</button><button id="intent">intent</button>
<button id="missing">missing tool</button><button id="tool">call release</button>
<button id="resize">resize</button><button id="cross">another server's tool</button>
<script>
var actions = {
  notify: {type: "notify", payload: {message: "saved"}},
  link: {type: "link", payload: {url: "https://example.com/"}},
  prompt: {type: "prompt", payload: {prompt: "summarise this"}},
  intent: {type: "intent", payload: {intent: "open", params: {id: 7}}},
  missing: {type: "tool", payload: {toolName: "no_such_tool", params: {}}},
  tool: {type: "tool", payload: {toolName: "release", params: {key: "from-ui"}}},
  resize: {type: "ui-size-change", payload: {height: 123}},
  cross: {type: "tool", payload: {toolName: "builtin_workspace__execute_shell",
                                  params: {command: "echo reached"}}}
};
Object.keys(actions).forEach(function (id) {
  document.getElementById(id).addEventListener("click", function () {
    window.parent.postMessage(actions[id], "*");
  });
});
</script></body></html>"""


@server.tool
def actions() -> NativeMCPResponse[Any]:
    """A UI with one button per kind of mcp-ui action."""
    card = EmbeddedResource(
        resource=ResourceContents(
            uri="ui://console-test/actions", mime_type="text/html", text=_ACTIONS_CARD
        )
    )
    return NativeMCPResponse(
        result=CallToolResult(content=[TextContent(text="Actions card."), card])
    )
