// The console's span waterfall: the spans of one call (the console's root span, the
// pool's client span, the worker's server span, a tool's own spans, the official SDK's
// span for an external server) as rows on one time axis, from GET api/calls/<id>/spans.
// A file of its own: console.js calls nativemcpWaterfall.show() when it renders a call.
"use strict";

(function () {
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function ms(value) {
    return (value < 10 ? value.toFixed(2) : value.toFixed(1)) + " ms";
  }

  function row(span, total) {
    const line = el("div", "waterfall-row" + (span.error ? " error" : ""));
    line.dataset.name = span.name;
    line.dataset.depth = span.depth;
    const label = el("div", "waterfall-label");
    // Set through the style object (not an attribute): the page's policy allows no inline style.
    label.style.paddingLeft = (span.depth * 14) + "px";
    label.append(el("span", "waterfall-name", span.name));
    const where = [span.kind, span.server].filter(Boolean).join(" · ");
    label.append(el("span", "waterfall-where", where));
    const track = el("div", "waterfall-track");
    const bar = el("div", "waterfall-bar kind-" + span.kind);
    bar.style.left = (100 * span.startMs / total) + "%";
    bar.style.width = Math.max(0.4, 100 * span.durationMs / total) + "%";
    bar.title = span.name + ": " + ms(span.durationMs) + " from +" + ms(span.startMs);
    track.append(bar);
    const time = el("div", "waterfall-ms", ms(span.durationMs));
    line.append(label, track, time);
    if (span.error) line.append(el("div", "waterfall-error", span.error));
    return line;
  }

  async function show(root, callId) {
    const box = el("details", "waterfall");
    box.open = true;
    box.dataset.call = callId;
    box.append(el("summary", null, "Spans — where the time went"));
    root.append(box);
    let data;
    try {
      const response = await fetch("api/calls/" + callId + "/spans");
      data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
    } catch (err) {
      box.append(el("p", "waterfall-note", "could not load the spans: " + err.message));
      return;
    }
    if (!data.recording) {
      box.append(el("p", "waterfall-note", "spans are not recorded: install nativemcp[otel]"));
    } else if (!data.spans.length) {
      box.append(el("p", "waterfall-note", "no spans were recorded for this call"));
    } else {
      const total = Math.max(0.001, ...data.spans.map((s) => s.startMs + s.durationMs));
      const rows = el("div", "waterfall-rows");
      for (const span of data.spans) rows.append(row(span, total));
      box.append(rows);
    }
    box.dataset.ready = "true";
  }

  window.nativemcpWaterfall = {show};
})();
