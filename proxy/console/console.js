// nativemcp console: the page. Plain script, no build step, no network but this server.
//
// Safety rule: every string that comes from a tool (names, descriptions, text, JSON)
// reaches the page through textContent or an attribute set by setAttribute on a fixed
// name; nothing is ever parsed as HTML here. UIResources are the one place a tool's HTML
// runs, and they run in a sandboxed iframe (opaque origin, scripts only) served with
// their own content security policy.
"use strict";

(function () {
  const state = {
    servers: [],
    tools: new Map(), // full name -> tool
    current: null, // the tool whose form is shown
    calls: new Map(), // call id -> view (once finished) or summary
    shown: null, // call id in the result pane
    progress: new Map(), // call id -> its latest progress, while it runs
    pendingUi: new Map(), // call id -> the frame and action that asked for it
    summary: "",
  };

  // ---- small DOM helpers: text only ------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function status(message) {
    document.getElementById("status").textContent = message;
  }

  function kb(bytes) {
    if (bytes < 1024) return bytes.toLocaleString() + " bytes";
    return (bytes / 1024).toFixed(1) + " KB (" + bytes.toLocaleString() + " bytes)";
  }

  async function api(path, body) {
    const init = body === undefined
      ? {}
      : {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
    const response = await fetch(path, init);
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = {error: response.status + " " + response.statusText};
    }
    if (!response.ok) throw new Error((data && data.error) || response.statusText);
    return data;
  }
  window.nativemcpConsole = {api}; // for the page's other scripts (authorize.js)

  // ---- collapsible JSON ------------------------------------------------------------

  function jsonTree(value, label, depth) {
    depth = depth || 0;
    const key = label === undefined ? null : el("span", {class: "json-key", text: label + ": "});
    if (value === null || typeof value !== "object") {
      const kind = value === null ? "null" : typeof value;
      const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
      return el("div", {class: "json-leaf"}, key, el("span", {class: "json-" + kind, text: shown}));
    }
    const isArray = Array.isArray(value);
    const entries = isArray ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const summary = el(
      "summary", {},
      key,
      el("span", {class: "json-brace", text: isArray ? "[" + entries.length + "]" : "{" + entries.length + "}"}),
    );
    const details = el("details", {class: "json-node"}, summary);
    if (depth < 2) details.open = true;
    for (const [k, v] of entries) details.append(jsonTree(v, k, depth + 1));
    return details;
  }

  // ---- catalog and forms ------------------------------------------------------------

  function renderCatalog() {
    const root = document.getElementById("servers");
    const filter = document.getElementById("filter").value.trim().toLowerCase();
    clear(root);
    for (const server of state.servers) {
      const tools = server.tools.filter(
        (t) => !filter || t.name.toLowerCase().includes(filter) ||
          (t.description || "").toLowerCase().includes(filter),
      );
      if (!tools.length && filter) continue;
      const list = el("ul", {class: "tool-list"});
      for (const tool of tools) {
        const service = (tool._meta || {})["io.github.nativemcp/service"] || {};
        list.append(el("li", {},
          el("button", {
            type: "button",
            class: "tool" + (state.current === tool.name ? " selected" : ""),
            "data-tool": tool.name,
            title: tool.description || "",
            onclick: () => selectTool(tool.name),
          }, el("span", {class: "tool-short", text: service.toolName || tool.name}),
          el("span", {class: "tool-desc", text: firstLine(tool.description)})),
        ));
      }
      root.append(el("section", {class: "server", "data-server": server.name},
        el("h2", {}, el("span", {text: server.name}), el("span", {class: "backend", text: server.backend})),
        el("p", {class: "description", text: server.description}),
        grantsLine(server.grants),
        list,
      ));
    }
  }

  // Who has granted an OAuth server (never a token): each user, or the pool itself.
  function grantsLine(grants) {
    if (!grants) return null;
    const left = (at) => {
      if (typeof at !== "number") return "no expiry";
      const seconds = at - Date.now() / 1000;
      return seconds <= 0 ? "expired" : "expires in " + Math.floor(seconds / 60) + " min";
    };
    if (grants.grantScope === "user") {
      const users = grants.users.map((g) => {
        const user = String(g.user || "");
        const cut = user.indexOf("#");  // issuer#subject: the subject names the user
        return (cut >= 0 ? user.slice(cut + 1) : user) + " (" + left(g.expires_at) + ")";
      });
      return el("p", {
        class: "grants",
        "data-grant-scope": "user",
        text: "Acts for each user. Granted by: " + (users.length ? users.join(", ") : "nobody yet"),
      });
    }
    const pool = grants.pool;
    const text = pool && pool.authorized ? "The pool's grant (" + left(pool.expires_at) + ")" : "No grant kept";
    return el("p", {class: "grants", "data-grant-scope": "pool", text: text});
  }

  function firstLine(text) {
    return (text || "").split("\n")[0];
  }

  function resolveRef(schema, root) {
    let guard = 0;
    while (schema && typeof schema.$ref === "string" && guard++ < 16) {
      const path = schema.$ref.replace(/^#\//, "").split("/");
      let target = root;
      for (const part of path) target = target ? target[part] : undefined;
      schema = target;
    }
    return schema || {};
  }

  // A property's schema without the `null` branch of an Optional, and whether null is allowed.
  function effective(schema, root) {
    schema = resolveRef(schema, root);
    const options = schema.anyOf || schema.oneOf;
    if (Array.isArray(options)) {
      const rest = options.map((o) => resolveRef(o, root)).filter((o) => o.type !== "null");
      if (rest.length === 1) return {schema: {...rest[0], description: schema.description, default: schema.default}, nullable: true};
      return {schema, nullable: rest.length < options.length};
    }
    return {schema, nullable: false};
  }

  function kindOf(schema) {
    if (Array.isArray(schema.enum)) return "enum";
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
    if (type === "string") return "string";
    if (type === "integer" || type === "number") return type;
    if (type === "boolean") return "boolean";
    return "json";
  }

  function selectTool(name) {
    const tool = state.tools.get(name);
    if (!tool) return;
    state.current = name;
    renderCatalog();
    document.getElementById("placeholder").hidden = true;
    document.getElementById("tool-panel").hidden = false;
    document.getElementById("tool-name").textContent = tool.title ? tool.title + " (" + tool.name + ")" : tool.name;
    const service = (tool._meta || {})["io.github.nativemcp/service"] || {};
    document.getElementById("tool-service").textContent =
      "server " + service.serverName + " · tool " + service.toolName + " · " + service.backendType;
    document.getElementById("tool-description").textContent = tool.description || "";
    const hints = document.getElementById("tool-hints");
    clear(hints);
    const annotations = tool.annotations || {};
    for (const [key, label] of [["readOnlyHint", "read-only"], ["destructiveHint", "destructive"],
      ["idempotentHint", "idempotent"], ["openWorldHint", "open world"]]) {
      if (annotations[key] === true) hints.append(el("span", {class: "badge hint-" + key, text: label}), " ");
    }
    document.getElementById("form-error").textContent = "";
    document.getElementById("raw-json").value = "";
    document.getElementById("raw-json-error").textContent = "";
    const fields = document.getElementById("fields");
    clear(fields);
    const root = tool.inputSchema || {};
    const required = new Set(root.required || []);
    for (const [prop, raw] of Object.entries(root.properties || {})) {
      const {schema, nullable} = effective(raw, root);
      const kind = kindOf(schema);
      const id = "field-" + prop;
      let input;
      if (kind === "enum") {
        input = el("select", {id, name: prop});
        if (!required.has(prop)) input.append(el("option", {value: "", text: "(default)"}));
        for (const option of schema.enum) {
          input.append(el("option", {value: JSON.stringify(option), text: String(option)}));
        }
      } else if (kind === "boolean") {
        input = el("select", {id, name: prop},
          required.has(prop) ? null : el("option", {value: "", text: "(default)"}),
          el("option", {value: "true", text: "true"}),
          el("option", {value: "false", text: "false"}));
      } else if (kind === "json" || (kind === "string" && /content|text|body/.test(prop))) {
        input = el("textarea", {id, name: prop, rows: kind === "json" ? 3 : 4,
          placeholder: kind === "json" ? "JSON, e.g. " + jsonExample(schema) : ""});
      } else {
        input = el("input", {id, name: prop, type: "text",
          inputmode: kind === "string" ? null : "decimal", autocomplete: "off"});
      }
      input.dataset.kind = kind;
      if (schema.default !== undefined && schema.default !== null && kind !== "enum" && kind !== "boolean") {
        input.setAttribute("placeholder", "default: " + JSON.stringify(schema.default));
      }
      const hint = [kind === "json" ? (schema.type || "value") : kind];
      if (nullable) hint.push("optional");
      if (schema.minimum !== undefined) hint.push("≥ " + schema.minimum);
      if (schema.exclusiveMinimum !== undefined) hint.push("> " + schema.exclusiveMinimum);
      if (schema.maximum !== undefined) hint.push("≤ " + schema.maximum);
      fields.append(el("div", {class: "field"},
        el("label", {for: id},
          el("span", {class: "field-name", text: prop}),
          required.has(prop) ? el("span", {class: "required", text: " *"}) : null,
          el("span", {class: "field-hint", text: " " + hint.join(", ")})),
        schema.description ? el("div", {class: "field-description", text: schema.description}) : null,
        input,
        el("div", {class: "field-error", id: id + "-error", role: "alert"}),
      ));
    }
    if (!Object.keys(root.properties || {}).length) {
      fields.append(el("p", {class: "description", text: "This tool takes no arguments."}));
    }
  }

  function jsonExample(schema) {
    if (schema.type === "array") return "[]";
    if (schema.type === "object") return "{}";
    return "null";
  }

  // The arguments from the form, checked against the schema; null when a field is wrong.
  function readForm(tool) {
    const root = tool.inputSchema || {};
    const required = new Set(root.required || []);
    const args = {};
    let ok = true;
    for (const [prop, raw] of Object.entries(root.properties || {})) {
      const {schema} = effective(raw, root);
      const input = document.getElementById("field-" + prop);
      const error = document.getElementById("field-" + prop + "-error");
      error.textContent = "";
      const text = input.value;
      const fail = (message) => {
        error.textContent = message;
        ok = false;
      };
      if (text === "") {
        if (required.has(prop)) fail(prop + " is required");
        continue;
      }
      const kind = input.dataset.kind;
      let value;
      if (kind === "string") value = text;
      else if (kind === "enum" || kind === "boolean") value = JSON.parse(text);
      else if (kind === "integer" || kind === "number") {
        value = Number(text.trim());
        if (text.trim() === "" || !Number.isFinite(value)) {
          fail(prop + " must be a number, not " + JSON.stringify(text));
          continue;
        }
        if (kind === "integer" && !Number.isInteger(value)) {
          fail(prop + " must be a whole number");
          continue;
        }
      } else {
        try {
          value = JSON.parse(text);
        } catch (err) {
          fail(prop + " is not valid JSON: " + err.message);
          continue;
        }
        if (schema.type === "array" && !Array.isArray(value)) {
          fail(prop + " must be a JSON array");
          continue;
        }
        if (schema.type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) {
          fail(prop + " must be a JSON object");
          continue;
        }
      }
      if (typeof value === "number") {
        if (schema.minimum !== undefined && value < schema.minimum) fail(prop + " must be at least " + schema.minimum);
        if (schema.maximum !== undefined && value > schema.maximum) fail(prop + " must be at most " + schema.maximum);
        if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) fail(prop + " must be more than " + schema.exclusiveMinimum);
      }
      if (typeof value === "string") {
        if (schema.minLength !== undefined && value.length < schema.minLength) fail(prop + " needs at least " + schema.minLength + " characters");
        if (schema.maxLength !== undefined && value.length > schema.maxLength) fail(prop + " takes at most " + schema.maxLength + " characters");
      }
      if (Array.isArray(value) && schema.minItems !== undefined && value.length < schema.minItems) {
        fail(prop + " needs at least " + schema.minItems + " item(s)");
      }
      args[prop] = value;
    }
    return ok ? args : null;
  }

  // The JSON arguments box, when open and filled: an object, or null (with a message).
  function readRaw() {
    const box = document.getElementById("raw-args");
    const text = document.getElementById("raw-json").value.trim();
    const error = document.getElementById("raw-json-error");
    error.textContent = "";
    if (!box.open || !text) return undefined;
    let value;
    try {
      value = JSON.parse(text);
    } catch (err) {
      error.textContent = "not valid JSON: " + err.message;
      return null;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      error.textContent = "the arguments must be a JSON object";
      return null;
    }
    return value;
  }

  async function submit(event) {
    event.preventDefault();
    const tool = state.tools.get(state.current);
    const formError = document.getElementById("form-error");
    formError.textContent = "";
    const raw = readRaw();
    const args = raw === undefined ? readForm(tool) : raw;
    if (args === null) {
      formError.textContent = "Fix the fields marked above.";
      return;
    }
    try {
      started(await api("api/calls", {tool: tool.name, arguments: args}), null);
    } catch (err) {
      formError.textContent = err.message;
    }
  }

  // ---- calls: progress, results, history --------------------------------------------

  // The session's one event stream: every call's start, progress and result.
  function connect(cursor) {
    const source = new EventSource("api/events?since=" + cursor);
    source.addEventListener("started", (event) => {
      const summary = JSON.parse(event.data);
      if (!state.calls.has(summary.id)) state.calls.set(summary.id, summary);
      renderHistory();
    });
    source.addEventListener("progress", (event) => {
      const p = JSON.parse(event.data);
      state.progress.set(p.call, p);
      if (state.shown === p.call) setProgress(p);
    });
    source.addEventListener("result", (event) => finished(JSON.parse(event.data)));
    source.onopen = () => status(state.summary);
    source.onerror = () => {
      status(source.readyState === EventSource.CLOSED ? "lost the connection to the console" : "reconnecting…");
    };
  }

  function isDone(call) {
    return Boolean(call && call.service);
  }

  function finished(view) {
    state.calls.set(view.id, view);
    state.progress.delete(view.id);
    renderHistory();
    const parent = state.pendingUi.get(view.id);
    if (parent) {
      state.pendingUi.delete(view.id);
      onUiCallDone(parent, view);
    }
    if (state.shown === view.id) renderResult(view);
  }

  // A call this page started: show it now (running, or done if its result came first).
  function started(summary, parent) {
    if (!state.calls.has(summary.id)) state.calls.set(summary.id, summary);
    const known = state.calls.get(summary.id);
    if (parent !== null) {
      if (isDone(known)) onUiCallDone(parent, known);
      else state.pendingUi.set(summary.id, parent);
    } else {
      state.shown = summary.id;
      if (isDone(known)) renderResult(known);
      else renderRunning(known);
    }
    renderHistory();
  }

  function renderRunning(summary) {
    const root = document.getElementById("result");
    if (window.nativemcpApps.tearingDown(root, () => renderRunning(summary))) return;
    clear(root);
    root.append(
      el("div", {class: "call-line"}, el("strong", {text: "#" + summary.id + " " + summary.tool}), " running…"),
      el("div", {class: "progress", id: "progress"},
        el("div", {class: "bar", id: "progress-bar"}),
        el("span", {class: "progress-text", id: "progress-text", text: "waiting for progress"})),
    );
    const last = state.progress.get(summary.id);
    if (last) setProgress(last);
  }

  function setProgress(p) {
    const bar = document.getElementById("progress-bar");
    const text = document.getElementById("progress-text");
    if (!bar) return;
    const fraction = p.total ? Math.max(0, Math.min(1, p.progress / p.total)) : null;
    bar.style.width = fraction === null ? "100%" : (fraction * 100).toFixed(1) + "%";
    bar.classList.toggle("indeterminate", fraction === null);
    text.textContent = (p.total ? p.progress + " / " + p.total : String(p.progress)) + (p.message ? " — " + p.message : "");
  }

  function renderHistory() {
    const list = document.getElementById("history");
    clear(list);
    const calls = [...state.calls.values()].sort((a, b) => b.id - a.id);
    for (const call of calls) {
      const ms = call.elapsedMs === null || call.elapsedMs === undefined ? "" : " · " + call.elapsedMs.toFixed(1) + " ms";
      const origin = call.origin && call.origin.startsWith("ui:") ? " · from UI of #" + call.origin.slice(3) : "";
      list.append(el("li", {class: "history-item " + (call.status || "running") + (state.shown === call.id ? " selected" : ""), "data-call": call.id},
        el("button", {type: "button", onclick: () => showCall(call.id)},
          el("span", {class: "history-tool", text: "#" + call.id + " " + call.tool}),
          el("span", {class: "history-meta", text: (call.status || "running") + ms + origin}))));
    }
  }

  async function showCall(id) {
    state.shown = id;
    let call = state.calls.get(id);
    renderHistory();
    if (call && !isDone(call) && call.status !== "running") {
      // Finished before this page loaded: fetch its result.
      call = await api("api/calls/" + id);
      state.calls.set(id, call);
    }
    if (state.shown !== id || !call) return;
    if (isDone(call)) renderResult(call);
    else renderRunning(call);
  }

  function renderResult(view) {
    const root = document.getElementById("result");
    // An app shown there is asked to tear down first; apps.js renders this when it has.
    if (window.nativemcpApps.tearingDown(root, () => renderResult(view))) return;
    clear(root);
    const service = view.service || {};
    root.append(el("div", {class: "call-line " + view.status},
      el("strong", {text: "#" + view.id + " " + view.tool}),
      el("span", {class: "badge " + view.status, text: view.status}),
      el("span", {class: "elapsed", text: view.elapsedMs.toFixed(1) + " ms"}),
      el("span", {class: "service", text: service.serverName + " / " + service.toolName + " (" + service.backendType + ")"})));
    root.append(el("details", {class: "arguments"}, el("summary", {text: "arguments"}), jsonTree(view.arguments)));
    if (window.nativemcpWaterfall) window.nativemcpWaterfall.show(root, view.id);  // waterfall.js
    if (view.failure) {
      root.append(el("pre", {class: "failure", text: view.failure}));
      return;
    }
    const model = el("div", {class: "column model"},
      el("h3", {text: "What the model reads — " + kb(view.textBytes) + ", ≈" + view.textTokens + " tokens"}),
      el("pre", {class: "model-text", text: view.text}));
    const app = el("div", {class: "column app"},
      el("h3", {text: "What the app gets — " + kb(view.valueBytes) + " as JSON, ≈" + view.valueTokens + " tokens if sent"}),
      el("div", {class: "app-json"}, jsonTree(view.value)),
      el("h4", {text: "ServiceInfo"}),
      el("div", {class: "service-json"}, jsonTree(service)));
    root.append(el("div", {class: "columns"}, model, app));
    root.append(el("p", {class: "note", text: view.tokenNote}));
    const blocks = el("div", {class: "blocks"});
    for (const block of view.blocks || []) {
      const rendered = renderBlock(view, block);
      if (rendered) blocks.append(rendered);
    }
    if (blocks.childNodes.length) {
      root.append(el("h3", {text: "What the user sees — media and UI resources"}), blocks);
    }
    if (view.app) root.append(el("h3", {text: "The tool's MCP App"}), window.nativemcpApps.render(view));
    const actions = el("div", {class: "ui-actions", id: "ui-actions-" + view.id});
    root.append(actions);
    for (const action of view.hostActions || []) showHostAction(view.id, action);
    for (const child of state.calls.values()) {
      if (child.origin === "ui:" + view.id && isDone(child)) showUiCall(view.id, child);
    }
  }

  function renderBlock(view, block) {
    switch (block.type) {
      case "image": {
        const img = el("img", {class: "media", alt: "image from the tool (" + block.mimeType + ")"});
        img.src = "data:" + block.mimeType + ";base64," + block.data;
        return img;
      }
      case "audio": {
        const audio = el("audio", {class: "media", controls: true});
        audio.src = "data:" + block.mimeType + ";base64," + block.data;
        return audio;
      }
      case "ui": {
        const frame = el("iframe", {
          class: "ui-resource",
          sandbox: "allow-scripts",
          title: "UI resource " + block.uri,
          referrerpolicy: "no-referrer",
          "data-call": view.id,
          "data-block": block.index,
        });
        // The frame loads from a one-time capability URL, never from under the token:
        // its script can read its own URL (see the console's _app.py).
        const caption = el("figcaption", {text: block.uri});
        api(block.frame, {}).then(
          (granted) => { frame.src = granted.src; },
          (err) => { caption.textContent = block.uri + " — not shown: " + err.message; },
        );
        return el("figure", {class: "ui"}, caption, frame);
      }
      case "blob":
        return el("div", {class: "blob"},
          el("a", {href: block.href, download: block.filename, text: "Download " + block.filename}),
          " " + block.mimeType + ", " + kb(block.size) + " — " + block.uri);
      case "resource":
        return el("div", {class: "resource"}, el("div", {class: "resource-uri", text: block.uri + " (" + block.mimeType + ")"}),
          el("pre", {text: block.text}));
      case "link":
        return el("div", {class: "resource"}, "resource link: ", el("code", {text: block.uri}), " " + block.name);
      case "unsupported":
        return el("div", {class: "resource", text: "not shown: " + block.note});
      default:
        return null;
    }
  }

  // ---- MCP Apps: apps.js hosts them (the sandbox proxy, the bridge) --------------------

  // ---- UI actions from sandboxed frames -----------------------------------------------

  async function onMessage(event) {
    // Only the frames this page rendered may ask for anything; which one says which call.
    if (window.nativemcpApps.onMessage(event)) return;
    const frame = [...document.querySelectorAll("iframe.ui-resource")].find((f) => f.contentWindow === event.source);
    if (!frame) return;
    const origin = {call: Number(frame.dataset.call), block: Number(frame.dataset.block)};
    const action = event.data;
    if (!action || typeof action !== "object" || typeof action.type !== "string") return;
    if (action.type.startsWith("ui-")) {
      // mcp-ui's frame housekeeping (ready, size): for the page, not for the server.
      const height = action.payload && Number(action.payload.height);
      if (action.type === "ui-size-change" && Number.isFinite(height)) {
        frame.style.height = Math.max(40, Math.min(2000, Math.round(height))) + "px";
      }
      return;
    }
    let reply;
    try {
      reply = await api("api/calls/" + origin.call + "/ui-actions", {block: origin.block, action});
    } catch (err) {
      showHostAction(origin.call, {type: "error", payload: {message: err.message}});
      answerFrame(event.source, action, null, err.message);
      return;
    }
    if (reply.kind === "host") {
      showHostAction(origin.call, reply);
      answerFrame(event.source, action, {shown: true, executed: false}, null);
    } else {
      started(reply.call, {call: origin.call, source: event.source, action});
    }
  }

  function answerFrame(win, action, response, error) {
    if (!action.messageId) return;
    const message = {type: "ui-message-response", messageId: action.messageId, payload: error ? {error} : {response}};
    win.postMessage(message, "*");
  }

  function onUiCallDone(parent, view) {
    if (state.shown === parent.call) showUiCall(parent.call, view);
    answerFrame(parent.source, parent.action, {status: view.status}, view.status === "ok" ? null : (view.text || view.failure));
    // A download the UI asked for: hand the bytes to the browser.
    for (const block of view.blocks || []) {
      if (block.type === "blob") {
        const link = el("a", {href: block.href, download: block.filename, hidden: true});
        document.body.append(link);
        link.click();
        link.remove();
      }
    }
  }

  function showUiCall(parentId, view) {
    const box = document.getElementById("ui-actions-" + parentId);
    if (!box || box.querySelector('[data-call="' + view.id + '"]')) return;
    const blobs = (view.blocks || []).filter((b) => b.type === "blob");
    box.append(el("div", {class: "ui-call " + view.status, "data-call": view.id},
      el("span", {class: "badge", text: "UI called"}),
      el("strong", {text: " #" + view.id + " " + view.tool}),
      " " + view.status + " in " + view.elapsedMs.toFixed(1) + " ms: ",
      el("span", {class: "ui-call-text", text: view.text || view.failure || ""}),
      blobs.map((b) => el("a", {class: "ui-download", href: b.href, download: b.filename, text: " ⤓ " + b.filename}))));
  }

  function showHostAction(callId, action) {
    const box = document.getElementById("ui-actions-" + callId);
    if (!box || window.nativemcpApps.showNote(null, action)) return; // an app's: apps.js shows it
    box.append(el("div", {class: "host-action"},
      el("span", {class: "badge", text: action.type === "error" ? "UI action refused" : "host action (shown, not run)"}),
      el("strong", {text: " " + action.type + " "}),
      el("code", {text: JSON.stringify(action.payload)})));
  }

  // ---- start ------------------------------------------------------------------------

  async function start() {
    document.getElementById("filter").addEventListener("input", renderCatalog);
    document.getElementById("tool-form").addEventListener("submit", submit);
    window.addEventListener("message", onMessage);
    window.nativemcpApps.attach({el, api, kb});
    try {
      const catalog = await api("api/tools");
      state.servers = catalog.servers;
      for (const server of catalog.servers) for (const tool of server.tools) state.tools.set(tool.name, tool);
      renderCatalog();
      state.summary = catalog.servers.length + " servers, " + state.tools.size + " tools";
      status(state.summary);
      const history = await api("api/calls");
      for (const call of history.calls) state.calls.set(call.id, call);
      renderHistory();
      connect(history.cursor);
    } catch (err) {
      status("could not load the tools: " + err.message);
    }
    document.body.dataset.ready = "true";
  }

  document.addEventListener("DOMContentLoaded", start);
})();
