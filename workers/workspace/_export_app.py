"""The export card as an MCP App: one page that renders any export from the tool result
its host sends it, and downloads through the host.

The export tools name it in ``_meta.ui.resourceUri``. A host that speaks MCP Apps reads
the page once (``text/html;profile=mcp-app``, no origins allowed beyond itself), shows it
in a sandboxed frame, and talks to it by JSON-RPC over ``postMessage``: the page asks
``ui/initialize``, then renders the ``structuredContent`` (an `ExportResult`) of the
``ui/notifications/tool-result`` it is sent. Its button asks the host for ``tools/call``
of the download tool (named as the host knows the export tool: a hub's prefix is kept)
and saves the blob it gets back. Clients that do not speak MCP Apps get the embedded card
of `export_card` instead, as before.

Nothing the tool returns is written into the page: the script builds the card with
``textContent``; the labels (fixed text, and the configured download tool's name) travel
as JSON in a ``<script type="application/json">`` with ``<`` escaped.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ._i18n import message
from ._options import WorkspaceOptions
from ._ui import CARD_STYLE

__all__ = ["EXPORT_APP_URI", "export_app_html"]

EXPORT_APP_URI: Final = "ui://nativemcp/export-card.html"
"""The export tools' app: the page `export_app_html` makes."""

APPS_PROTOCOL_VERSION: Final = "2026-01-26"
"""The MCP Apps version the page speaks in ``ui/initialize`` (the stable spec's)."""

_LABELS: Final = ("title_file", "title_zip", "download", "files", "location", "created", "size")

_SCRIPT: Final = """<script>
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("config").textContent);
  var labels = config.labels;
  var nextId = 1, pending = {}, hostContext = {}, shown = null;

  function send(message) { window.parent.postMessage(message, "*"); }
  function request(method, params) {
    var id = nextId++;
    send({jsonrpc: "2.0", id: id, method: method, params: params});
    return new Promise(function (resolve, reject) { pending[id] = [resolve, reject]; });
  }
  function notify(method, params) { send({jsonrpc: "2.0", method: method, params: params}); }
  function answer(id, result) { send({jsonrpc: "2.0", id: id, result: result}); }

  function size(bytes) {
    if (bytes < 1024) { return bytes + " bytes"; }
    var value = bytes, units = ["KB", "MB", "GB"], unit = "KB";
    for (var i = 0; i < units.length; i++) {
      value /= 1024; unit = units[i];
      if (value < 1024) { break; }
    }
    return value.toFixed(1) + " " + unit;
  }
  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = text; }
    if (className) { node.className = className; }
    return node;
  }
  function resized() {
    var root = document.documentElement;
    notify("ui/notifications/size-changed", {width: root.scrollWidth, height: root.scrollHeight});
  }
  // The download tool as the host names it: the export tool's name with its own
  // name swapped, so a hub's "builtin_workspace__" prefix stays.
  function downloadTool(kind) {
    var own = kind === "zip" ? "export_zip" : "export_file";
    var tool = hostContext.toolInfo && hostContext.toolInfo.tool;
    var name = tool && typeof tool.name === "string" ? tool.name : own;
    var prefix = name.slice(-own.length) === own ? name.slice(0, -own.length) : "";
    return prefix + config.downloadTool;
  }
  function save(result, fallbackName) {
    var blocks = (result && result.content) || [];
    for (var i = 0; i < blocks.length; i++) {
      var resource = blocks[i].type === "resource" ? blocks[i].resource : null;
      if (resource && typeof resource.blob === "string") {
        var bytes = Uint8Array.from(atob(resource.blob), function (c) { return c.charCodeAt(0); });
        var link = document.createElement("a");
        link.href = URL.createObjectURL(new Blob([bytes], {type: resource.mimeType || ""}));
        link.download = fallbackName;
        document.body.appendChild(link);
        link.click();
        link.remove();
        return true;
      }
    }
    return false;
  }
  function status(text) { document.getElementById("status").textContent = text; resized(); }

  function render(result) {
    var card = document.getElementById("card");
    card.textContent = "";
    var data = result && result.structuredContent;
    if (!data || result.isError || typeof data.exportPath !== "string") {
      var texts = ((result && result.content) || []).filter(function (b) {
        return b.type === "text";
      });
      card.appendChild(element("p", texts.map(function (b) { return b.text; }).join("\\n")));
      resized();
      return;
    }
    shown = data;
    var title = labels[data.kind === "zip" ? "title_zip" : "title_file"];
    card.appendChild(element("h1", title + ": " + data.name));
    if (data.description) { card.appendChild(element("p", data.description, "desc")); }
    var facts = element("dl");
    [["location", data.exportPath], ["size", size(data.size)], ["created", data.createdAt]]
      .forEach(function (pair) {
        facts.appendChild(element("dt", labels[pair[0]]));
        facts.appendChild(element("dd", pair[1]));
      });
    card.appendChild(facts);
    var files = data.files || [];
    card.appendChild(element("div", labels.files + " (" + files.length + ")"));
    var list = element("ul");
    files.forEach(function (item) {
      var row = element("li", item.path + " ");
      row.appendChild(element("small", "(" + size(item.size) + ")"));
      list.appendChild(row);
    });
    card.appendChild(list);
    var button = element("button", labels.download);
    button.type = "button";
    button.addEventListener("click", function () {
      var target = shown;
      var name = target.exportPath.split("/").pop();
      var call = {name: downloadTool(target.kind), arguments: {path: target.exportPath}};
      request("tools/call", call)
        .then(function (answer) {
          if (answer && answer.isError) { throw {message: "the download failed"}; }
          status(save(answer, name) ? name : "");
        })
        .catch(function (error) { status((error && error.message) || String(error)); });
    });
    card.appendChild(button);
    card.appendChild(element("p", "", "status")).id = "status";
    resized();
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) { return; }
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") { return; }
    if (message.method === undefined) {
      var waiter = pending[message.id];
      delete pending[message.id];
      if (waiter) { message.error ? waiter[1](message.error) : waiter[0](message.result); }
    } else if (message.method === "ui/notifications/tool-result") {
      render(message.params);
    } else if (message.method === "ui/notifications/host-context-changed") {
      hostContext = Object.assign({}, hostContext, message.params || {});
    } else if (message.id !== undefined) {
      // ping, ui/resource-teardown: nothing to keep, nothing to refuse.
      answer(message.id, {});
    }
  });

  request("ui/initialize", {
    protocolVersion: config.protocolVersion,
    appInfo: {name: "nativemcp-export-card", version: "1"},
    appCapabilities: {}
  }).then(function (result) {
    hostContext = (result && result.hostContext) || {};
    notify("ui/notifications/initialized", {});
  });
})();
</script>"""

_STATUS_STYLE: Final = "<style>p.status{font-size:12px;color:#57606a}</style>"


def export_app_html(options: WorkspaceOptions) -> str:
    """The export card's app page, with its labels in the server's locale."""
    config = {
        "labels": {key: message(options.locale, key) for key in _LABELS},
        "downloadTool": options.download_tool,
        "protocolVersion": APPS_PROTOCOL_VERSION,
    }
    # "<" escaped: no value can close the script element it travels in.
    data = msgspec.json.encode(config).decode().replace("<", "\\u003c")
    return (
        f'<!DOCTYPE html><html lang="{options.locale}"><head><meta charset="utf-8">'
        f"<title>{message(options.locale, 'title_file')}</title>{CARD_STYLE}{_STATUS_STYLE}</head>"
        f'<body><div class="card" id="card"></div>'
        f'<script type="application/json" id="config">{data}</script>{_SCRIPT}</body></html>'
    )
