// The console's span waterfall: the spans of one call (the console's root span, the
// pool's client span, the worker's server span, a tool's own spans, the official SDK's
// span for an external server) as rows on one time axis, from GET api/calls/<id>/spans.
// A file of its own: console.js calls nativemcpWaterfall.show() when it renders a call,
// code.js nativemcpWaterfall.draw() with a run's spans.
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

  function box(root, title) {
    const details = el("details", "waterfall");
    details.open = true;
    details.append(el("summary", null, title));
    root.append(details);
    return details;
  }

  // Rows from data already at hand ({recording, spans}): the Code tab's run answers with
  // its spans.
  function fill(details, data) {
    if (!data.recording) {
      details.append(el("p", "waterfall-note", "spans are not recorded: install nativemcp[otel]"));
    } else if (!data.spans.length) {
      details.append(el("p", "waterfall-note", "no spans were recorded for this call"));
    } else {
      const total = Math.max(0.001, ...data.spans.map((s) => s.startMs + s.durationMs));
      const rows = el("div", "waterfall-rows");
      for (const span of data.spans) rows.append(row(span, total));
      details.append(rows);
    }
    details.dataset.ready = "true";
  }

  function draw(root, data, title) {
    fill(box(root, title), data);
  }

  async function show(root, callId) {
    const details = box(root, "Spans — where the time went");
    details.dataset.call = callId;
    let data;
    try {
      const response = await fetch("api/calls/" + callId + "/spans");
      data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
    } catch (err) {
      details.append(el("p", "waterfall-note", "could not load the spans: " + err.message));
      return;
    }
    fill(details, data);
  }

  window.nativemcpWaterfall = {show, draw, el};
})();
