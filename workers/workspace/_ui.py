"""The export card: a self-contained HTML UIResource (the shape mcp-ui's ``rawHtml`` makes).

``mcp-ui-server`` 1.0.0 does not work with mcp 2.x (it passes a pydantic ``AnyUrl`` where
mcp 2's ``TextResourceContents.uri`` wants ``str``) and would pull pydantic into every
worker, so the card is built here with the same shape: an embedded resource with a
``ui://`` URI, ``mimeType`` ``text/html`` and the HTML as ``text``.

Every user-supplied string is HTML-escaped, and none is written into the script: the
button carries the tool name and path in ``data-`` attributes, and the one fixed script
reads them from there, so no value can break out into JavaScript.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Final, Literal

from nativemcp.protocol import EmbeddedResource, ResourceContents

from ._i18n import format_size, message
from ._models import ExportedFile
from ._options import Locale

__all__ = ["CARD_STYLE", "UI_MIME_TYPE", "export_card", "export_uri"]

UI_MIME_TYPE: Final = "text/html"
"""The MIME type of an mcp-ui raw-HTML resource."""

_SCRIPT: Final = """<script>
document.querySelectorAll("button[data-tool]").forEach(function (button) {
  button.addEventListener("click", function () {
    window.parent.postMessage({
      type: "tool",
      payload: {toolName: button.dataset.tool, params: {path: button.dataset.path}}
    }, "*");
  });
});
</script>"""

CARD_STYLE: Final = """<style>
body{font-family:system-ui,sans-serif;margin:0;padding:12px;color:#1f2328}
.card{border:1px solid #d0d7de;border-radius:8px;padding:14px 16px;max-width:560px}
h1{font-size:16px;margin:0 0 6px}
p.desc{margin:0 0 10px;color:#57606a}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;margin:0 0 10px;font-size:13px}
dt{color:#57606a}dd{margin:0;word-break:break-all}
ul{margin:0 0 12px;padding-left:18px;font-size:13px}
button{background:#1f6feb;color:#fff;border:0;border-radius:6px;padding:7px 14px;cursor:pointer}
</style>"""
"""The cards' look: this card's and the MCP App's (`export_app_html`)."""


def export_uri(kind: Literal["file", "zip"], export_id: str) -> str:
    """The card's URI: ``ui://nativemcp/export/<kind>/<id>`` (no spaces, ever)."""
    return f"ui://nativemcp/export/{kind}/{export_id}"


def export_card(
    *,
    uri: str,
    kind: Literal["file", "zip"],
    locale: Locale,
    name: str,
    description: str | None,
    export_path: str,
    size: int,
    files: Sequence[ExportedFile],
    created_at: str,
    download_tool: str,
) -> EmbeddedResource:
    """The export card as an embedded UIResource."""
    esc = html.escape
    title = message(locale, "title_file" if kind == "file" else "title_zip")
    items = "".join(
        f"<li>{esc(item.path)} <small>({esc(format_size(item.size))})</small></li>"
        for item in files
    )
    desc = f'<p class="desc">{esc(description)}</p>' if description else ""
    body = (
        f'<div class="card"><h1>{esc(title)}: {esc(name)}</h1>{desc}'
        f"<dl><dt>{esc(message(locale, 'location'))}</dt><dd>{esc(export_path)}</dd>"
        f"<dt>{esc(message(locale, 'size'))}</dt><dd>{esc(format_size(size))}</dd>"
        f"<dt>{esc(message(locale, 'created'))}</dt><dd>{esc(created_at)}</dd></dl>"
        f"<div>{esc(message(locale, 'files'))} ({len(files)})</div><ul>{items}</ul>"
        f'<button type="button" data-tool="{esc(download_tool)}" data-path="{esc(export_path)}">'
        f"{esc(message(locale, 'download'))}</button></div>"
    )
    document = (
        f'<!DOCTYPE html><html lang="{locale}"><head><meta charset="utf-8">'
        f"<title>{esc(title)}: {esc(name)}</title>{CARD_STYLE}</head>"
        f"<body>{body}{_SCRIPT}</body></html>"
    )
    return EmbeddedResource(
        resource=ResourceContents(uri=uri, mime_type=UI_MIME_TYPE, text=document)
    )
