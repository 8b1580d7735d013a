// The console's Code tab: a program run over the catalog in code mode (POST api/code),
// shown as the model reads it (what it printed, its last value, or the error that
// stopped it) beside what ran: each inner call, and the run's spans on one time axis
// (nativemcpWaterfall.draw, the call waterfall's own rows). Stubs (GET api/code/stubs)
// show the tools as a program calls them. Every string from a program or a tool goes
// in through textContent: never markup.
"use strict";

(function () {
  const el = window.nativemcpWaterfall.el;  // waterfall.js runs first (deferred, in order)

  function select(code) {
    document.getElementById("tab-tools").setAttribute("aria-selected", String(!code));
    document.getElementById("tab-code").setAttribute("aria-selected", String(code));
    document.getElementById("tools-view").hidden = code;
    document.getElementById("code-view").hidden = !code;
  }

  function callsTable(calls) {
    const table = el("table", "code-calls");
    const head = el("tr");
    for (const title of ["#", "call", "tool", "ms", "outcome"]) head.append(el("th", null, title));
    table.append(head);
    calls.forEach((call, index) => {
      const row = el("tr", call.error ? "error" : "ok");
      row.dataset.name = call.name;
      row.append(el("td", null, index + 1), el("td", "mono", call.name), el("td", "mono", call.tool),
                 el("td", null, call.durationMs.toFixed(2)), el("td", null, call.error || "ok"));
      table.append(row);
    });
    return table;
  }

  function show(view) {
    const root = document.getElementById("code-result");
    root.replaceChildren();
    const line = el("div", "call-line");
    line.append(el("span", "badge " + view.status, view.status),
                el("span", "elapsed", view.elapsedMs.toFixed(1) + " ms"),
                el("span", "elapsed", view.calls.length + " inner call" + (view.calls.length === 1 ? "" : "s")));
    root.append(line);
    root.append(el("h3", null, "Output"));
    root.append(el("pre", "code-output", view.output || "(nothing printed)"));
    if (view.value !== null && view.value !== undefined) {
      root.append(el("h3", null, "Last value"));
      root.append(el("pre", "code-value", JSON.stringify(view.value, null, 2)));
    }
    if (view.error) root.append(el("pre", "code-failure", view.error));
    root.append(el("h3", null, "Inner calls"));
    root.append(view.calls.length ? callsTable(view.calls) : el("p", "waterfall-note", "no tool was called"));
    window.nativemcpWaterfall.draw(root, view, "Trace — the run and each inner call");
    root.dataset.ready = "true";
  }

  async function run(event) {
    event.preventDefault();
    const error = document.getElementById("code-error");
    const button = document.getElementById("code-run");
    const root = document.getElementById("code-result");
    error.textContent = "";
    root.dataset.ready = "false";
    button.disabled = true;
    try {
      const response = await fetch("api/code", {
        method: "POST",
        headers: {"Content-Type": "application/json"},
        body: JSON.stringify({code: document.getElementById("code-input").value}),
      });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
      show(data);
    } catch (err) {
      error.textContent = err.message;
    } finally {
      button.disabled = false;
    }
  }

  async function stubs() {
    const error = document.getElementById("code-error");
    const box = document.getElementById("code-stubs");
    const names = document.getElementById("stub-names").value;
    error.textContent = "";
    try {
      const response = await fetch("api/code/stubs?names=" + encodeURIComponent(names));
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || response.statusText);
      box.textContent = data.stubs;
      box.hidden = false;
    } catch (err) {
      error.textContent = err.message;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("tab-tools").addEventListener("click", () => select(false));
    document.getElementById("tab-code").addEventListener("click", () => select(true));
    document.getElementById("code-form").addEventListener("submit", run);
    document.getElementById("stub-button").addEventListener("click", stubs);
  });
})();
