"""Two servers whose MCP Apps use the same ``ui://app.html``, for the hub's namespacing
tests; a module so worker processes can import them."""

from __future__ import annotations

import os

from nativemcp.protocol import AppCsp
from nativemcp.workers import CompletionRef, Context, Server

alpha = Server("alpha", description="An app server")
beta = Server("beta", description="Another app server with the same app URI")


@alpha.app("ui://app.html", prefers_border=True)
def alpha_page() -> str:
    """Alpha's app."""
    return "<!DOCTYPE html><p>alpha</p>"


@alpha.tool(ui="ui://app.html")
def show(text: str) -> str:
    """Show text in alpha's app."""
    return f"alpha shows {text}"


@alpha.tool(ui="ui://app.html", visibility=["app"])
def refresh() -> str:
    """Only alpha's app calls this."""
    return "alpha refreshed"


@alpha.tool
def plain() -> str:
    """A tool without an app."""
    return "plain"


@beta.app("ui://app.html")
def beta_page() -> str:
    """Beta's app."""
    return "<!DOCTYPE html><p>beta</p>"


@beta.tool(ui="ui://app.html")
def show_beta(text: str) -> str:
    """Show text in beta's app."""
    return f"beta shows {text}"


@alpha.app("ui://views/{name}")
def alpha_view(name: str) -> str:
    """One of alpha's views, by name."""
    return f"<!DOCTYPE html><p>alpha view {name}</p>"


# gamma: an app that speaks the bridge, for the console's host tests. On the tool result
# it shows the result's text; its button calls gamma's own echo, then beta's tool (which
# the host must refuse) and a model-only tool, and it tries a fetch its policy forbids.
GAMMA_PAGE = """<!DOCTYPE html><html><body>
<p id="result">waiting</p><button id="call" type="button">call echo</button>
<p id="called"></p><p id="refused"></p><p id="model-only"></p><p id="fetch"></p>
<button id="open" type="button">open</button><button id="open-bad" type="button">bad</button>
<p id="opened"></p><p id="probe"></p><button id="tell" type="button">tell</button>
<p id="told"></p><p id="heard"></p><button id="save" type="button">save</button>
<p id="saved"></p>
<script>
var next = 1, waiting = {}, initialized = false, heard = [];
function request(method, params) {
  var id = next++;
  window.parent.postMessage({jsonrpc: "2.0", id: id, method: method, params: params}, "*");
  return new Promise(function (resolve, reject) { waiting[id] = [resolve, reject]; });
}
function show(id, text) { document.getElementById(id).textContent = text; }
window.addEventListener("message", function (event) {
  var m = event.data;
  if (!m || m.jsonrpc !== "2.0") { return; }
  if (m.method !== undefined) {  // what the host sent, and whether before initialized
    heard.push((initialized ? "" : "early ") + m.method);
    show("heard", heard.join(" "));
  }
  if (m.method === "ui/notifications/tool-result") { show("result", m.params.content[0].text); }
  else if (m.method === "ui/notifications/tool-input" && m.params.arguments.allowed) {
    probe(m.params.arguments);
  }
  else if (m.method === "ui/resource-teardown") {  // leave a note, then agree
    request("ui/update-model-context", {content: [{type: "text", text: "torn down: " +
      m.params.reason}]}).then(function () {
      window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
    });
  }
  else if (m.method === undefined && waiting[m.id]) {
    var w = waiting[m.id]; delete waiting[m.id];
    m.error ? w[1](m.error) : w[0](m.result);
  }
});
document.getElementById("call").addEventListener("click", function () {
  request("tools/call", {name: "echo", arguments: {text: "from the app"}})
    .then(function (r) { show("called", r.content[0].text); });
  request("tools/call", {name: "show_beta", arguments: {text: "x"}})
    .then(function () { show("refused", "called"); }, function (e) { show("refused", e.message); });
  request("tools/call", {name: "model_only", arguments: {}})
    .then(function () { show("model-only", "called"); },
          function (e) { show("model-only", e.message); });
  fetch("http://127.0.0.1:9/").then(function () { show("fetch", "fetched"); },
    function (e) { show("fetch", "blocked: " + e.name); });
});
// Where the view runs and what it can reach: the test reads the report in #probe.
function probe(args) {
  var report = {origin: self.origin, href: location.href, referrer: document.referrer,
    name: window.name, ancestors: Array.from(location.ancestorOrigins || []),
    geolocation: document.featurePolicy.allowsFeature("geolocation"),
    camera: document.featurePolicy.allowsFeature("camera"), violations: []};
  try { report.cookie = document.cookie; } catch (e) { report.cookie = e.name; }
  try { report.parent = parent.document.URL; } catch (e) { report.parent = e.name; }
  try { report.top = top.location.href; } catch (e) { report.top = e.name; }
  // The violation's event is a task of its own, which may come after the refused
  // fetch settles: the report waits for it (2 s at most: none came, and it says so).
  var violated = new Promise(function (resolve) {
    document.addEventListener("securitypolicyviolation", function (e) {
      report.violations.push(e.violatedDirective + " " + e.blockedURI);
      resolve();
    });
    setTimeout(resolve, 2000);
  });
  function attempt(url) {
    return fetch(url, {mode: "no-cors"}).then(function () { return "fetched"; },
      function (e) { return "blocked: " + e.name; });
  }
  Promise.all([attempt(args.allowed), attempt(args.forbidden)]).then(function (r) {
    report.allowed = r[0]; report.forbidden = r[1];
    return violated;
  }).then(function () { show("probe", JSON.stringify(report)); });
}
document.getElementById("tell").addEventListener("click", function () {
  var text = function (t) { return [{type: "text", text: t}]; };
  window.parent.postMessage({jsonrpc: "2.0", method: "notifications/message",
    params: {level: "info", logger: "gamma", data: "told the host"}}, "*");
  request("ui/update-model-context", {content: text("first context")}).then(function () {
    return request("ui/update-model-context", {content: text("the chart shows 3 bars")});
  }).then(function () {
    return request("ui/message", {role: "user", content: text("explain the chart")});
  }).then(function () {
    return request("ui/message", {role: "assistant", content: text("x")});
  }).then(function () { show("told", "sent as assistant"); },
          function (e) { show("told", "told; refused: " + e.message); });
});
document.getElementById("save").addEventListener("click", function () {
  var notes = {type: "resource", resource: {uri: "file:///gamma/notes.txt",
    mimeType: "text/plain", text: "gamma notes"}};
  request("ui/download-file", {contents: [notes]}).then(function (r) {
    show("saved", r.isError ? "declined" : "saved");
  }, function (e) { show("saved", "refused: " + e.message); });
});
function open(url) {
  request("ui/open-link", {url: url}).then(function () { show("opened", "opened " + url); },
    function (e) { show("opened", "refused: " + e.message); });
}
document.getElementById("open").addEventListener("click", function () {
  open("http://127.0.0.1:9/opened");
});
document.getElementById("open-bad").addEventListener("click", function () {
  open("javascript:alert(1)");
});
request("ui/initialize", {protocolVersion: "2026-01-26", appInfo: {name: "gamma", version: "1"},
  appCapabilities: {}}).then(function () {
  initialized = true;
  window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/initialized"}, "*");
  window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/size-changed",
    params: {width: 300, height: 222}}, "*");
});
</script></body></html>"""

gamma = Server("gamma", description="An app that speaks the MCP Apps bridge")


# Only the probe's allowed origin (a test server's) may be fetched; geolocation is asked.
GAMMA_CONNECT = os.environ.get("NATIVEMCP_TEST_GAMMA_CONNECT", "http://127.0.0.1:9")


@gamma.app(
    "ui://app.html", csp=AppCsp(connect_domains=(GAMMA_CONNECT,)), permissions=["geolocation"]
)
def gamma_page() -> str:
    """Gamma's app."""
    return GAMMA_PAGE


@gamma.tool(ui="ui://app.html")
def greet(name: str) -> str:
    """Greet someone, in gamma's app."""
    return f"hello {name}"


@gamma.tool(ui="ui://app.html")
def probe(allowed: str, forbidden: str) -> str:
    """Show where gamma's app runs and which of two URLs it may fetch."""
    return f"probing {allowed} and {forbidden}"


@gamma.tool(ui="ui://app.html", visibility=["app"])
def echo(text: str) -> str:
    """Only gamma's app calls this."""
    return f"echo: {text}"


@gamma.tool(ui="ui://app.html", visibility=["model"])
def model_only() -> str:
    """Only the model calls this."""
    return "model only"


@gamma.app("ui://views/{name}")
def gamma_view(name: str) -> str:
    """One of gamma's views, by name."""
    return f"<!DOCTYPE html><p>gamma view {name}</p>"


@gamma.completion
def gamma_names(ref: CompletionRef, argument: str, value: str) -> list[str]:
    """View names, for gamma's own template only (as gamma names it)."""
    if ref.name != "ui://views/{name}":
        return []
    return [name for name in ("chart", "table") if name.startswith(value)]


@gamma.tool(visibility=["model", "app"], ui="ui://app.html")
async def touch(uri: str, ctx: Context) -> str:
    """Report that one of gamma's resources changed."""
    await ctx.resource_updated(uri)
    return f"touched {uri}"
