"""The pages `bench.browser` reads, served over HTTP on loopback, with what each offers.

Each page is built in Python next to the list of its interactive elements (role and
accessible name), the ground truth a snapshot must name, each with a ref.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Page", "pages", "serve"]


@dataclass
class Page:
    """One page: its path, its HTML and its interactive elements."""

    path: str
    title: str
    body: list[str] = field(default_factory=list)
    interactive: list[tuple[str, str]] = field(default_factory=list)

    def add(self, html: str, *elements: tuple[str, str]) -> None:
        self.body.append(html)
        self.interactive.extend(elements)

    @property
    def html(self) -> str:
        return (
            f"<!doctype html><html><head><title>{self.title}</title></head><body>"
            + "\n".join(self.body)
            + "</body></html>"
        )


def _form() -> Page:
    page = Page("/form", "Create an account")
    page.add("<h1>Create an account</h1><p>It takes a minute.</p><form action='/form'>")
    for label in ("First name", "Last name", "Email", "Company"):
        page.add(f"<label>{label} <input name='{label}'></label>", ("textbox", label))
    page.add(
        "<label>Country <select><option>France</option><option>Japan</option>"
        "<option>Korea</option><option>Brazil</option></select></label>",
        ("combobox", "Country"),
    )
    for plan in ("Free", "Team", "Enterprise"):
        page.add(f"<label><input type='radio' name='plan'>{plan}</label>", ("radio", plan))
    page.add(
        "<label><input type='checkbox'>Send me the newsletter</label>",
        ("checkbox", "Send me the newsletter"),
    )
    page.add("<button type='submit'>Create account</button></form>", ("button", "Create account"))
    page.add(
        "<button onclick=\"document.getElementById('o').textContent='Saved as draft'\">"
        "Save draft</button><div id='o'></div>",
        ("button", "Save draft"),
    )
    return page


def _catalog() -> Page:
    page = Page("/catalog", "Garden tools")
    nav = ["Home", "Tools", "Seeds", "Pots", "Sale", "Blog", "Help", "Account"]
    page.add(
        "<header><nav>" + " ".join(f"<a href='/{n.lower()}'>{n}</a>" for n in nav) + "</nav>",
        *(("link", n) for n in nav),
    )
    page.add(
        "<form role='search'><input type='search' aria-label='Search the shop'>"
        "<button>Search</button></form></header>",
        ("searchbox", "Search the shop"),
        ("button", "Search"),
    )
    page.add("<main><h1>Garden tools</h1><p>Twelve tools we use every day.</p>")
    names = [
        "Spade", "Rake", "Hoe", "Trowel", "Pruner", "Shears",
        "Fork", "Dibber", "Weeder", "Sprayer", "Wheelbarrow", "Gloves",
    ]  # fmt: skip
    for number, name in enumerate(names, 1):
        page.add(
            f"<article><h2><a href='/item/{number}'>{name}</a></h2>"
            f"<p>Hand-forged {name.lower()}, ash handle. <span>€{number * 7}.90</span></p>"
            f"<button aria-label='Add {name} to cart'>Add to cart</button></article>",
            ("link", name),
            ("button", f"Add {name} to cart"),
        )
    foot = ["About", "Shipping", "Returns", "Privacy", "Terms", "Contact"]
    page.add(
        "</main><footer>" + " ".join(f"<a href='/{n.lower()}'>{n}</a>" for n in foot),
        *(("link", n) for n in foot),
    )
    page.add("</footer>")
    return page


def _article() -> Page:
    page = Page("/article", "Release notes")
    page.add("<h1>Release notes</h1>")
    for version in ("2.3", "2.2", "2.1"):
        page.add(
            f"<h2>Version {version}</h2><p>This release makes search faster and fixes the "
            f"export of long reports. Upgrading from {version[:-1]}x needs no migration.</p>"
            "<ul><li>Faster search on large stores</li><li>Exports keep their names</li></ul>"
        )
    page.add("<table><tr><th>Version</th><th>Date</th><th>Downloads</th></tr>")
    for row, version in enumerate(("2.3", "2.2", "2.1", "2.0")):
        page.add(
            f"<tr><td>{version}</td><td>2026-0{row + 1}-15</td><td>{1200 - row * 100}</td></tr>"
        )
    page.add("</table><p>See also:</p><ul>")
    for link in ("Upgrade guide", "API reference", "Known issues", "Roadmap"):
        page.add(f"<li><a href='/{link.split()[0].lower()}'>{link}</a></li>", ("link", link))
    page.add("</ul>")
    return page


def pages() -> list[Page]:
    """Every bench page."""
    return [_form(), _catalog(), _article()]


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """Serve `pages` on a free loopback port; yields the origin (``http://127.0.0.1:N``)."""
    by_path = {page.path: page.html.encode() for page in pages()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = by_path.get(self.path.split("?", 1)[0], b"<title>Not here</title>")
            self.send_response(200 if self.path.split("?", 1)[0] in by_path else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
