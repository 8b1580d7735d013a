"""Local pages for the browser server's tests and bench, served over real HTTP on loopback.

`PageServer` runs a `ThreadingHTTPServer` on 127.0.0.1 in a thread: forms, links,
dynamic content, a slow page, a page that never finishes loading, redirects to refused
addresses, a download, a page that tries WebRTC and WebTransport. `require_chromium`
skips a test module without Debian's ``chromium``, or fails it under
``NATIVEMCP_REQUIRE_BROWSER=1`` (as CI sets).
"""

from __future__ import annotations

import contextlib
import http.server
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

CHROMIUM: Final = os.environ.get("NATIVEMCP_CHROMIUM", "/usr/bin/chromium")
SLOW_SECONDS: Final = 1.0
"""How long ``/slow`` waits before it answers."""

HOME: Final = """<!doctype html><html><head><title>Home</title></head><body>
<h1>Welcome</h1>
<nav><a href="/form">Sign-up form</a> <a href="/dynamic">Dynamic page</a>
<a href="/popup">Popups</a></nav>
<p>A small site for the browser tests.</p>
<table><tr><th>Name</th><th>Role</th></tr><tr><td>Ada</td><td>Engineer</td></tr></table>
</body></html>"""

FORM: Final = """<!doctype html><html><head><title>Sign up</title></head><body>
<h2>Sign up</h2>
<form action="/done" method="get">
<label>Name <input name="name"></label>
<label>Role <select name="role"><option>Developer</option><option>Operator</option></select></label>
<input type="checkbox" id="agree" name="agree"><label for="agree">I agree</label>
<button type="submit">Send</button>
</form>
<button id="gone" onclick="this.remove()">Remove me</button>
</body></html>"""

DONE: Final = """<!doctype html><html><head><title>Thanks</title></head><body>
<h1>Thanks</h1><p id="echo"></p>
<script>document.getElementById('echo').textContent =
  'Received ' + new URLSearchParams(location.search).get('name');</script>
</body></html>"""

DYNAMIC: Final = """<!doctype html><html><head><title>Dynamic</title></head><body>
<button onclick="document.getElementById('out').textContent = 'Shown after the click'">Show</button>
<button onclick="setTimeout(() => { const b = document.createElement('button');
  b.textContent = 'Late button'; document.body.appendChild(b); }, 300)">Later</button>
<div id="out"></div>
<script>document.cookie = 'visited=' + (document.cookie.includes('visited') ? 'again' : 'once');
document.title = 'Dynamic (' + document.cookie + ')';</script>
</body></html>"""

POPUP: Final = """<!doctype html><html><head><title>Popups</title></head><body>
<a href="/" target="_blank">Home in a new tab</a>
</body></html>"""

HANG_HEAD: Final = b"""<!doctype html><html><head><title>Never done</title></head><body>
<h1>Still loading</h1><a href="/">Home</a>
"""

SIDE_CHANNELS: Final = """<!doctype html><html><head><title>Side channels</title>
<link rel="preconnect" href="http://127.0.0.1:TCP_PORT">
<link rel="dns-prefetch" href="//side-channel.test">
</head><body><pre id="report"></pre><script>
// Every way a page could reach UDP_PORT (UDP) and TCP_PORT (TCP) of this machine without
// an HTTP request the egress proxy sees; the page says when each has finished or failed.
const udp = UDP_PORT, tcp = TCP_PORT, report = {};
const ICE = [
  {urls: `stun:127.0.0.1:${udp}`},
  {urls: `turn:127.0.0.1:${udp}?transport=udp`, username: 'u', credential: 'p'},
  {urls: `turn:127.0.0.1:${tcp}?transport=tcp`, username: 'u', credential: 'p'},
  {urls: `turns:127.0.0.1:${tcp}?transport=tcp`, username: 'u', credential: 'p'},
  {urls: `stun:localhost:${udp}`},
];
const within = (promise, ms) =>
  Promise.race([promise, new Promise(done => setTimeout(() => done('gave up'), ms))]);
async function gather(name, Connection) {
  try {
    const pc = new Connection({iceServers: ICE});
    pc.createDataChannel('x');
    const candidates = [];
    const finished = new Promise(done => {
      pc.onicecandidate = e => e.candidate ? candidates.push(e.candidate.type) : done('finished');
    });
    await pc.setLocalDescription(await pc.createOffer());
    report[name] = [await within(finished, 5000), candidates];
    pc.close();
  } catch (e) { report[name] = 'failed: ' + e; }
}
async function transport() {
  try {
    const session = new WebTransport(`https://127.0.0.1:${udp}/`);
    report.webtransport = await within(session.ready.then(() => 'open', e => 'failed: ' + e), 5000);
  } catch (e) { report.webtransport = 'failed: ' + e; }
}
(async () => {
  const frame = document.createElement('iframe');
  document.body.appendChild(frame);
  await Promise.all([
    gather('page', RTCPeerConnection),
    gather('fresh iframe', frame.contentWindow.RTCPeerConnection),
    transport(),
    fetch(`http://127.0.0.1:${tcp}/`).then(
      () => report.fetch = 'answered', () => report.fetch = 'failed'),
    new Promise(done => {
      const socket = new WebSocket(`ws://127.0.0.1:${tcp}/`);
      socket.onopen = () => { report.websocket = 'open'; done(); };
      socket.onclose = () => { report.websocket ??= 'failed'; done(); };
    }),
  ]);
  document.getElementById('report').textContent = JSON.stringify(report) + ' All tried.';
})();
</script></body></html>"""
"""A page that tries WebRTC (STUN, TURN over UDP, TCP and TLS, from the page and from a
fresh iframe), WebTransport, a preconnect, a fetch and a WebSocket at the ports in its
query string
(``?udp=N&tcp=M``), then shows its report followed by ``All tried.``"""


class PageServer:
    """The test site on ``http://127.0.0.1:<port>``; ``base`` is its origin."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        pages = {
            "/": HOME,
            "/form": FORM,
            "/done": DONE,
            "/dynamic": DYNAMIC,
            "/popup": POPUP,
            "/files": '<title>Files</title><a href="/report.csv">Get the report</a>',
        }
        stop = self._stop
        server_ref: list[http.server.ThreadingHTTPServer] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                port = server_ref[0].server_port
                html = {"Content-Type": "text/html; charset=utf-8"}
                if path == "/image-elsewhere":
                    # An image from another origin (localhost, the same machine).
                    body = f'<html><head><title>Image</title></head><body><img alt="x" src="http://localhost:{port}/x.png"></body></html>'
                    self._send(200, body.encode(), html)
                elif path in pages:
                    self._send(200, pages[path].encode(), html)
                elif path == "/side-channels":
                    query = urllib.parse.parse_qs(self.path.partition("?")[2])
                    body = SIDE_CHANNELS.replace("UDP_PORT", query["udp"][0])
                    self._send(200, body.replace("TCP_PORT", query["tcp"][0]).encode(), html)
                elif path == "/slow":
                    stop.wait(SLOW_SECONDS)
                    self._send(200, b"<title>Slow</title><h1>Finally</h1>", html)
                elif path == "/hang":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.end_headers()
                    self.wfile.write(HANG_HEAD)
                    self.wfile.flush()
                    stop.wait(120)  # never finishes, until the server stops
                elif path == "/to-metadata":
                    self._send(302, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
                elif path == "/to-localhost":
                    self._send(302, b"", {"Location": f"http://localhost:{port}/"})
                elif path == "/report.csv":
                    self._send(
                        200,
                        b"a,b\n1,2\n",
                        {
                            "Content-Type": "text/csv",
                            "Content-Disposition": 'attachment; filename="../../report.csv"',
                        },
                    )
                else:
                    self._send(404, b"<title>Not found</title>", html)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        server_ref.append(self._server)
        self.port = self._server.server_port
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> PageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


@contextlib.contextmanager
def serving() -> Iterator[PageServer]:
    """A running `PageServer`."""
    with PageServer() as server:
        yield server


def require_chromium() -> None:
    """Skip the calling test module without Chromium and Playwright, unless CI requires
    them (``NATIVEMCP_REQUIRE_BROWSER=1``): then the tests run and fail."""
    if os.environ.get("NATIVEMCP_REQUIRE_BROWSER"):
        return
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)",
            allow_module_level=True,
        )
    pytest.importorskip("playwright.async_api")


def tagged_processes(tag: str) -> list[int]:
    """Live processes (not this one) whose environment holds ``tag`` (``NAME=value``)."""
    needle = b"\0" + tag.encode() + b"\0"
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in b"\0" + environ:
            found.append(int(entry))
    return found


def command_line(pid: int) -> list[str]:
    """The process's arguments ([] when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
