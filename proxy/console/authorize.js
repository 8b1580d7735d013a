// nativemcp console: the "Authorize" button of a remote server that needs authorization.
// The server's section (console.js draws it) gets the button; a click asks the console to
// start the pool's sign-in (proxy/console/_authorize.py), opens the authorization address
// in a new tab, waits for the flow to end and reloads the page, which then lists the
// server's own tools. Text only, as in console.js: nothing a server sends becomes markup.
(function () {
  "use strict";

  const needs = new Map(); // server name -> why it needs authorization

  const api = window.nativemcpConsole.api; // console.js, loaded first

  function isWebAddress(url) {
    try {
      const protocol = new URL(url).protocol;
      return protocol === "https:" || protocol === "http:";
    } catch (err) {
      return false;
    }
  }

  function say(note, ...parts) {
    note.textContent = "";
    for (const part of parts) note.append(part instanceof Node ? part : document.createTextNode(part));
  }

  async function authorize(name, button, note) {
    button.disabled = true;
    // Opened within the click, so that no popup blocker stops it; pointed at the
    // address once the console has it.
    const tab = window.open("", "_blank");
    say(note, "Starting the sign-in...");
    const base = "api/servers/" + encodeURIComponent(name);
    try {
      const started = await api(base + "/authorize", {});
      if (started.url && isWebAddress(started.url)) {
        if (tab) {
          tab.opener = null;
          tab.location.href = started.url;
        }
        const link = document.createElement("a");
        link.href = started.url;
        link.target = "_blank";
        link.rel = "noopener noreferrer";
        link.textContent = "this address";
        say(note, "Sign in in the new tab (or open ", link, "); waiting...");
      } else if (tab) {
        tab.close();
      }
      const outcome = started.done ? started : await api(base + "/authorization");
      if (outcome.authorized) {
        say(note, "Authorized: loading its tools...");
        window.location.reload();
        return;
      }
      say(note, "Not authorized: " + outcome.error);
    } catch (err) {
      if (tab) tab.close();
      say(note, "Could not authorize: " + err.message);
    }
    button.disabled = false;
  }

  function decorate() {
    for (const [name, reason] of needs) {
      const section = document.querySelector('section.server[data-server="' + CSS.escape(name) + '"]');
      if (!section || section.querySelector("button.authorize")) continue;
      const note = document.createElement("p");
      note.className = "authorize-note";
      note.setAttribute("role", "status");
      say(note, "Needs authorization (" + reason + ").");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "authorize";
      button.dataset.authorize = name;
      button.textContent = "Authorize";
      button.addEventListener("click", () => authorize(name, button, note));
      section.insertBefore(note, section.querySelector(".tool-list"));
      section.insertBefore(button, note);
    }
  }

  async function start() {
    const catalog = await api("api/tools");
    for (const server of catalog.servers) {
      if (server.needsAuthorization) needs.set(server.name, server.needsAuthorization);
    }
    if (!needs.size) return;
    // console.js draws the catalog again on every filter keystroke.
    new MutationObserver(decorate).observe(document.getElementById("servers"), {childList: true});
    decorate();
  }

  document.addEventListener("DOMContentLoaded", () => {
    start().catch(() => {}); // console.js reports a catalog that does not load
  });
})();
