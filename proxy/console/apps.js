// nativemcp console: the MCP Apps host, beside console.js (which calls it).
//
// An app's view runs in the sandbox proxy (the console's second origin, _sandbox.py):
// this page frames the proxy from a one-time URL, sends it the view's HTML once it says
// it is ready, then speaks the bridge (JSON-RPC over postMessage) with the view through
// it, answering only the proxy's origin and only the frame this page made for that call.
// Same safety rule as console.js: what the view sends reaches this page as text only.
"use strict";

window.nativemcpApps = (function () {
  const LOG_LIMIT = 200; // log lines kept per view
  const TEARDOWN_MS = 1000; // how long a view may take to answer ui/resource-teardown
  const apps = new WeakMap(); // proxy iframe -> {view, grant, origin, initialized, ...}
  let page = null; // console.js's helpers: el, api, kb
  let pending = null; // the render that waits for views to tear down
  let asked = 0; // ids of the host's requests to views

  function attach(helpers) {
    page = helpers;
  }

  // The frame of a call's app, its notes (messages, model context) and its log.
  function render(view) {
    const el = page.el;
    const frame = el("iframe", {
      class: "mcp-app",
      // The proxy's own origin (the specification asks for both); the view inside it
      // gets allow-scripts only: an opaque origin.
      sandbox: "allow-scripts allow-same-origin",
      title: "MCP App " + view.app.uri,
      referrerpolicy: "no-referrer",
      "data-call": view.id,
    });
    const caption = el("figcaption", {text: view.app.uri});
    const notes = el("div", {class: "app-notes", id: "app-notes-" + view.id});
    for (const action of view.hostActions || []) showNote(notes, action);
    page.api(view.app.frame, {}).then(
      (grant) => {
        const origin = new URL(grant.src).origin;
        apps.set(frame, {view, grant, origin, initialized: false, answers: new Map()});
        // Permission policy features the page asked for, delegated to the proxy's origin
        // (the proxy delegates them to its view); set before the frame navigates.
        const allow = (grant.allow || []).map((feature) => feature + " " + origin);
        if (allow.length) frame.setAttribute("allow", allow.join("; "));
        frame.src = grant.src;
      },
      (err) => { caption.textContent = view.app.uri + " — not shown: " + err.message; },
    );
    return el("figure", {class: "ui app"}, caption, frame, notes,
      el("ol", {class: "app-log", id: "app-log-" + view.id}));
  }

  // ui/message and ui/update-model-context as the console keeps them: a message from the
  // user (as the app wrote it), and the one context the model would get next.
  function showNote(box, action) {
    if (action.type !== "message" && action.type !== "model-context") return false;
    if (!box) return true;
    const el = page.el;
    const payload = action.payload || {};
    const text = [].concat(payload.content || []).map((b) => b.type === "text" ? b.text : JSON.stringify(b)).join("\n");
    const label = action.type === "message" ? "message from the app (as the user)" : "context for the model (replaces the last)";
    const shown = el("div", {class: "app-note " + action.type},
      el("span", {class: "badge", text: label}), " ",
      el("span", {class: "app-note-text", text}),
      payload.structuredContent ? el("code", {text: " " + JSON.stringify(payload.structuredContent)}) : null);
    if (action.type === "model-context") {
      const last = box.querySelector(".app-note.model-context");
      if (last) last.remove();
    }
    box.append(shown);
    return true;
  }

  function showLog(callId, params) {
    const list = document.getElementById("app-log-" + callId);
    if (!list) return;
    const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
    list.append(page.el("li", {class: "app-log-" + String(params.level || "info"),
      text: "[" + String(params.level || "info") + (params.logger ? " " + params.logger : "") + "] " + data}));
    while (list.childNodes.length > LOG_LIMIT) list.removeChild(list.firstChild);
  }

  function fileName(resource) {
    return decodeURIComponent(String(resource.uri).split("/").pop() || "download") || "download";
  }

  // A resource's contents as a link in the page (the view may not download: its sandbox
  // has no allow-downloads); null for one with neither bytes nor text.
  function fileLink(callId, resource) {
    const box = document.getElementById("ui-actions-" + callId);
    let bytes = null;
    if (typeof resource.blob === "string") bytes = Uint8Array.from(atob(resource.blob), (c) => c.charCodeAt(0));
    else if (typeof resource.text === "string") bytes = new TextEncoder().encode(resource.text);
    if (!box || bytes === null) return null;
    const name = fileName(resource);
    const link = page.el("a", {class: "app-file", download: name, text: "Download " + name});
    link.href = URL.createObjectURL(new Blob([bytes], {type: "application/octet-stream"}));
    box.append(page.el("div", {class: "blob"}, link, " — from the app, " + page.kb(bytes.length)));
    return link;
  }

  // A file an app's tool call returned (a blob resource) is offered here, in the page.
  function offerFiles(callId, result) {
    for (const block of (result && result.content) || []) {
      const resource = block.type === "resource" ? block.resource : null;
      if (resource && typeof resource.blob === "string") fileLink(callId, resource);
    }
  }

  // ui/download-file: embedded resources as they are, resource links read from the app's
  // own server; saved after the user agrees (the specification: a confirmation).
  async function download(view, params) {
    const files = [];
    for (const item of (params && Array.isArray(params.contents) && params.contents) || []) {
      if (item && item.type === "resource" && item.resource && typeof item.resource.uri === "string") {
        files.push(item.resource);
      } else if (item && item.type === "resource_link" && typeof item.uri === "string") {
        const reply = await page.api(view.app.requests, {method: "resources/read", params: {uri: item.uri}});
        if (reply.error) throw Object.assign(new Error(reply.error.message), {code: reply.error.code});
        files.push(...reply.result.contents);
      }
    }
    if (!files.length) throw Object.assign(new Error("ui/download-file takes contents: embedded resources or resource links"), {code: -32602});
    if (!window.confirm("The app offers " + files.map(fileName).join(", ") + " for download.\n\nSave?")) return {isError: true};
    for (const file of files) {
      const link = fileLink(view.id, file);
      if (link) link.click();
    }
    return {};
  }

  const HOST_METHODS = {
    "ui/initialize": (app) => ({
      protocolVersion: "2026-01-26",
      hostInfo: {name: "nativemcp console", version: "1"},
      hostCapabilities: {
        openLinks: {},
        downloadFile: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        message: {text: {}},
        updateModelContext: {text: {}, structuredContent: {}},
        sandbox: {permissions: app.grant.permissions, csp: app.grant.csp},
      },
      hostContext: {
        toolInfo: {tool: app.view.app.tool},
        theme: "light",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        containerDimensions: {maxHeight: 2000},
        platform: "web",
        locale: navigator.language,
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      },
    }),
    "ui/request-display-mode": () => ({mode: "inline"}),
    "ping": () => ({}),
  };

  async function handle(frame, app, message) {
    const view = app.view;
    const post = (reply) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...reply}, app.origin);
    if (message && message.method === "ui/notifications/sandbox-proxy-ready") {
      const {html, csp, permissions} = app.grant;
      post({method: "ui/notifications/sandbox-resource-ready", params: {html, csp, permissions, sandbox: "allow-scripts"}});
      return;
    }
    if (!message || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    const method = message.method;
    if (message.id === undefined) { // notifications from the view
      if (method === "ui/notifications/initialized" && !app.initialized) {
        // Nothing goes to the view before this. The console knows the whole arguments
        // before the call starts, so it sends no tool-input-partial.
        app.initialized = true;
        post({method: "ui/notifications/tool-input", params: {arguments: view.app.arguments}});
        post({method: "ui/notifications/tool-result", params: view.app.result});
      } else if (method === "ui/notifications/size-changed") {
        const height = Number(message.params && message.params.height);
        if (Number.isFinite(height)) frame.style.height = Math.max(40, Math.min(2000, Math.round(height))) + "px";
      } else if (method === "notifications/message" && message.params) {
        showLog(view.id, message.params);
      }
      return;
    }
    if (method === undefined) { // an answer to the host's one request: ui/resource-teardown
      const settle = app.answers.get(message.id);
      if (settle) settle();
      return;
    }
    const answer = (result) => post({id: message.id, result});
    const refuse = (code, text) => post({id: message.id, error: {code, message: text}});
    if (HOST_METHODS[method]) return answer(HOST_METHODS[method](app));
    if (method === "ui/open-link") {
      const url = String((message.params && message.params.url) || "");
      if (!/^https?:\/\//i.test(url)) return refuse(-32602, "only http(s) links open");
      if (!window.confirm("The app asks to open " + url + "\n\nOpen it?")) return refuse(-32000, "the user declined");
      window.open(url, "_blank", "noopener,noreferrer");
      return answer({});
    }
    if (method === "ui/download-file") {
      try {
        return answer(await download(view, message.params));
      } catch (err) {
        return refuse(err.code || -32603, err.message);
      }
    }
    if (["tools/call", "resources/read", "ui/message", "ui/update-model-context"].includes(method)) {
      try {
        const reply = await page.api(view.app.requests, {method, params: message.params || {}});
        if (reply.error) return refuse(reply.error.code, reply.error.message);
        if (method === "tools/call") offerFiles(view.id, reply.result);
        if (method.startsWith("ui/")) {
          showNote(document.getElementById("app-notes-" + view.id), {
            type: method === "ui/message" ? "message" : "model-context",
            payload: message.params,
          });
        }
        return answer(reply.result);
      } catch (err) {
        return refuse(-32603, err.message);
      }
    }
    return refuse(-32601, "the console does not answer " + method + " for apps");
  }

  // Ask an initialized view to tear down (the specification: before its frame goes);
  // settles when it answers or after TEARDOWN_MS.
  function tearDown(frame) {
    const app = apps.get(frame);
    app.closing = true; // asked once (its requests meanwhile are still answered)
    const id = "teardown-" + ++asked;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, TEARDOWN_MS);
      app.answers.set(id, () => { clearTimeout(timer); resolve(); });
      const reason = "the console shows another result";
      frame.contentWindow.postMessage({jsonrpc: "2.0", id, method: "ui/resource-teardown", params: {reason}}, app.origin);
    });
  }

  // True when views in `root` were asked to tear down: `render` runs once they have (the
  // latest render only, when several come meanwhile); false when none is there.
  function tearingDown(root, render) {
    if (pending) {
      pending.render = render;
      return true;
    }
    const live = [...root.querySelectorAll("iframe.mcp-app")].filter((f) => {
      const app = apps.get(f);
      return app && app.initialized && !app.closing;
    });
    if (!live.length) return false;
    pending = {render};
    Promise.all(live.map(tearDown)).then(() => {
      const next = pending.render;
      pending = null;
      next();
    });
    return true;
  }

  // True when the message came from an app frame of this page (handled or ignored).
  function onMessage(event) {
    const frame = [...document.querySelectorAll("iframe.mcp-app")].find((f) => f.contentWindow === event.source);
    if (!frame) return false;
    const app = apps.get(frame);
    if (app && event.origin === app.origin) handle(frame, app, event.data);
    return true;
  }

  return {attach, render, onMessage, showNote, tearingDown};
})();
