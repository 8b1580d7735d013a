// nativemcp console: the sandbox proxy of an MCP App (the specification's "Sandbox").
//
// This page is served from the console's second origin (its sandbox port), framed by the
// console's page only. It tells the host it is ready, is sent the view's raw HTML once,
// renders it in an inner frame (sandbox allow-scripts: an opaque origin of its own) that
// inherits this page's content security policy, and relays every other message: the
// host's (from the console's origin only) to the view, the view's to the host's origin.
"use strict";

(function () {
  const HOST = document.currentScript.dataset.host;
  const FEATURES = {camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write"};
  const OWN = "ui/notifications/sandbox-";
  let inner = null;

  function isOwn(data) {
    return data && typeof data.method === "string" && data.method.startsWith(OWN);
  }

  function load(params) {
    if (inner || !params || typeof params.html !== "string") return; // one view per proxy
    const asked = params.permissions && typeof params.permissions === "object" ? params.permissions : {};
    const allow = Object.keys(FEATURES).filter((key) => key in asked).map((key) => FEATURES[key]);
    inner = document.createElement("iframe");
    inner.setAttribute("sandbox", "allow-scripts");
    if (allow.length) inner.setAttribute("allow", allow.join("; "));
    inner.setAttribute("title", "MCP App view");
    inner.style.cssText = "display:block;width:100%;height:100%;border:0";
    inner.srcdoc = params.html;
    document.body.append(inner);
  }

  window.addEventListener("message", (event) => {
    const data = event.data;
    if (event.source === window.parent) {
      if (event.origin !== HOST) return;
      if (isOwn(data)) {
        if (data.method === OWN + "resource-ready") load(data.params);
        return;
      }
      if (inner) inner.contentWindow.postMessage(data, "*");
    } else if (inner && event.source === inner.contentWindow && !isOwn(data)) {
      window.parent.postMessage(data, HOST);
    }
  });

  document.documentElement.style.cssText = "height:100%;margin:0";
  document.body.style.cssText = "height:100%;margin:0;overflow:hidden";
  window.parent.postMessage({jsonrpc: "2.0", method: OWN + "proxy-ready", params: {}}, HOST);
})();
