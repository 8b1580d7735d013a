"""What the browser may load: http(s) only, public addresses by default, an allow-list.

The page server is on loopback, which the default policy refuses: the pool without an
allow-list must refuse it by every spelling (IP, ``localhost`` through DNS, the decimal
form), and the pool with an allow-list must refuse what its pages redirect to or embed
from elsewhere. The address rules themselves are checked without a browser.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import anyio
import pytest
from _browser_pages import PageServer, require_chromium

from nativemcp.protocol import ServerStartError, ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers.browser import BrowserAPI, BrowserOptions
from nativemcp.workers.browser._egress import EgressProxy
from nativemcp.workers.browser._guard import UrlPolicy, address_refusal, normalize_origin
from nativemcp.workers.browser._options import parse_options

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local address (cloud metadata"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private network"),
        ("172.16.0.1", "private network"),
        ("192.168.0.10", "private network"),
        ("fd00::1", "private network"),
        ("100.64.0.1", "not a public address"),
        ("0.0.0.0", "private network"),
        ("224.0.0.1", "multicast"),
    ],
)
def test_non_public_addresses_are_refused_with_the_reason(address: str, why: str) -> None:
    reason = address_refusal(address)
    assert reason is not None and why in reason


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(address) is None


async def test_a_name_is_judged_by_the_addresses_it_resolves_to() -> None:
    policy = UrlPolicy()
    reason = await policy.refusal("http://localhost:8080/")
    assert (
        reason is not None and reason.startswith("localhost resolves to") and "loopback" in reason
    )
    # The decimal spelling of 127.0.0.1 that browsers accept.
    decimal = await policy.refusal("http://2130706433/")
    assert decimal is not None and "loopback" in decimal
    missing = await policy.refusal("http://no-such-host.invalid/")
    assert missing is not None and "does not resolve" in missing


@pytest.mark.parametrize(
    ("origin", "normal"),
    [
        ("HTTP://Example.COM", "http://example.com"),
        ("https://example.com:443/", "https://example.com"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://[::1]:9000", "http://[::1]:9000"),
    ],
)
def test_allowed_origins_are_normalized(origin: str, normal: str) -> None:
    assert normalize_origin(origin) == normal


@pytest.mark.parametrize(
    "origin", ["example.com", "ftp://example.com", "https://example.com/path", "http://"]
)
def test_a_bad_allowed_origin_is_a_clear_error(origin: str) -> None:
    with pytest.raises(ValueError, match="allowed origin"):
        parse_options({"allowed_origins": [origin]})


def test_unknown_options_are_refused_and_the_defaults_are_the_safe_ones() -> None:
    with pytest.raises(ValueError, match="invalid browser options"):
        parse_options({"execute_scripts": True})
    defaults = BrowserOptions()
    assert (defaults.execute_script, defaults.allow_private_network) == (False, False)
    assert defaults.allowed_origins == []


def test_the_allow_list_admits_only_its_origins() -> None:
    policy = UrlPolicy.build(["http://127.0.0.1:8000"])
    assert policy.scheme_refusal("http://127.0.0.1:8000/a?b=c") is None
    refused = policy.scheme_refusal("http://127.0.0.1:8001/")
    assert refused is not None and "not an allowed origin" in refused
    assert policy.scheme_refusal("ws://127.0.0.1:8000/socket") is None
    assert policy.scheme_refusal("file:///etc/passwd") is not None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:8000/page", "http://127.0.0.1:8000"),
        ("ws://[::1]:9000/socket", "http://[::1]:9000"),
        ("HTTPS://Example.COM:443/", "https://example.com"),
    ],
)
async def test_a_refusal_says_how_to_allow_the_origin(url: str, origin: str) -> None:
    policy = UrlPolicy.build(["http://127.0.0.1:1"])
    reason = await policy.refusal(url)  # judged on the allow-list: nothing is resolved
    assert reason is not None
    assert policy.how_to_allow(url, reason) == (
        f"To let the browser open it, list its origin: --browser-allow {origin} "
        f'(nativemcp serve) or browser_allowed_origins=["{origin}"] (WorkerPool); '
        "an allow-list admits only the origins it lists"
    )


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "http://no-such-host.invalid/", "http://127.0.0.1:99999/"]
)
async def test_no_allow_hint_where_listing_the_origin_would_not_help(url: str) -> None:
    reason = await UrlPolicy().refusal(url)
    assert reason is not None
    assert UrlPolicy().how_to_allow(url, reason) is None


_LISTED: Final = ("http://127.0.0.1:1", "https://example.com")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:18/",  # the allowed port is a prefix of this one
        "http://127.0.0.1:10/",
        "http://127.0.0.1/",  # port 80
        "https://127.0.0.1:1/",  # another scheme
        "http://127.0.0.10:1/",  # the allowed host is a prefix of this one
        "https://example.com.evil.test/",  # the allowed origin is a prefix of this host
        "https://example.community/",
        "https://evil-example.com/",  # a suffix
        "https://www.example.com/",  # a subdomain is another origin
        "https://example.co/",  # a prefix of the allowed host
        "https://example.com:8443/",
        "http://example.com/",
        "https://example.com@evil.test/",  # the allowed origin as userinfo
        "https://example.com./",  # a trailing dot: not the name that was listed
        "wss://example.com.evil.test/socket",
    ],
)
def test_the_allow_list_refuses_prefixes_suffixes_and_lookalikes_of_its_origins(url: str) -> None:
    policy = UrlPolicy.build(_LISTED)
    reason = policy.scheme_refusal(url)
    assert reason is not None and "is not an allowed origin" in reason


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:1/a?b=c",
        "HTTPS://EXAMPLE.COM/",
        "https://example.com:443/path",
        "https://user@example.com/",  # userinfo does not change the origin
        "wss://example.com/socket",
    ],
)
def test_the_allow_list_admits_its_origins_however_spelled(url: str) -> None:
    assert UrlPolicy.build(_LISTED).scheme_refusal(url) is None


@pytest.mark.parametrize(
    "target", ["example.com.evil.test:443", "127.0.0.1:18", "example.com:4433", "evil.test:443"]
)
async def test_the_egress_proxy_refuses_a_tunnel_to_a_lookalike_before_resolving_it(
    target: str,
) -> None:
    refused: list[str] = []
    async with EgressProxy(UrlPolicy.build(_LISTED), refused.append) as proxy:
        # Refused on the origin alone: no name is resolved, nothing leaves the machine.
        answer = await _through(proxy.url, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 Forbidden")
        assert b"is not an allowed origin" in answer
        assert len(refused) == 1 and refused[0].startswith(f"https://{target}/: https://")
        assert refused[0].endswith(
            "is not an allowed origin (allowed: http://127.0.0.1:1, https://example.com)"
        )


async def test_an_origin_whose_port_is_a_prefix_of_the_sites_is_refused_end_to_end(
    site: PageServer, tmp_path: Path
) -> None:
    prefix = f"http://127.0.0.1:{str(site.port)[:-1]}"
    refused: list[str] = []
    async with EgressProxy(UrlPolicy.build([prefix]), refused.append) as proxy:
        answer = await _through(proxy.url, f"GET {site.base}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 Forbidden")
        assert b"Welcome" not in answer
    async with WorkerPool(
        data_dir=tmp_path, builtins=["browser"], browser_allowed_origins=[prefix], timeout=60
    ) as pool:
        with pytest.raises(ToolError, match=f"{site.base} is not an allowed origin"):
            await pool.server(BrowserAPI).navigate(url=f"{site.base}/")


# -- through a real browser ---------------------------------------------------------


@pytest.fixture(scope="module")
async def open_pool(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WorkerPool]:
    """A pool with the default policy (no allow-list)."""
    require_chromium()
    folder = tmp_path_factory.mktemp("open")
    async with WorkerPool(data_dir=folder, builtins=["browser"], timeout=60) as pool:
        yield pool


@pytest.fixture(scope="module")
async def listed_pool(
    site: PageServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WorkerPool]:
    """A pool whose allow-list holds the page server's origin."""
    require_chromium()
    folder = tmp_path_factory.mktemp("listed")
    async with WorkerPool(
        data_dir=folder, builtins=["browser"], browser_allowed_origins=[site.base], timeout=60
    ) as pool:
        yield pool


@pytest.mark.real_process
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "[::ffff:127.0.0.1]"])
async def test_loopback_is_refused_by_default_by_any_spelling(
    open_pool: WorkerPool, site: PageServer, host: str
) -> None:
    browser = open_pool.server(BrowserAPI)
    with pytest.raises(ToolError, match="loopback") as caught:
        await browser.navigate(url=f"http://{host}:{site.port}/")
    assert caught.value.structured_content is not None
    assert caught.value.structured_content["error"] == "url_refused"
    # The refusal says how to allow it.
    origin = f"http://{host}:{site.port}"
    hint = f'--browser-allow {origin} (nativemcp serve) or browser_allowed_origins=["{origin}"]'
    assert hint in caught.value.message


@pytest.mark.real_process
async def test_cloud_metadata_is_refused_by_default(open_pool: WorkerPool) -> None:
    browser = open_pool.server(BrowserAPI)
    with pytest.raises(ToolError, match=r"169\.254\.169\.254 is a link-local address"):
        await browser.navigate(url="http://169.254.169.254/latest/meta-data/")


@pytest.mark.real_process
@pytest.mark.parametrize("path", ["/to-metadata", "/to-localhost"])
async def test_a_redirect_off_the_allow_list_is_refused_at_the_hop(
    listed_pool: WorkerPool, site: PageServer, path: str
) -> None:
    browser = listed_pool.server(BrowserAPI)
    with pytest.raises(ToolError, match=r"refused to load .* is not an allowed origin") as caught:
        await browser.navigate(url=f"{site.base}{path}")
    assert "list its origin: --browser-allow http://" in caught.value.message
    assert caught.value.structured_content is not None
    assert caught.value.structured_content["error"] == "url_refused"
    # Nothing of the refused target shows: the tab is left blank.
    page = await browser.snapshot()
    assert (page.url, page.tree) == ("about:blank", [])


@pytest.mark.real_process
async def test_a_subresource_from_elsewhere_is_refused_and_reported(
    listed_pool: WorkerPool, site: PageServer
) -> None:
    browser = listed_pool.server(BrowserAPI)
    page = await browser.navigate(url=f"{site.base}/image-elsewhere")
    assert page.title == "Image"
    assert [line.split(": ", 1)[0] for line in page.refused] == [
        f"http://localhost:{site.port}/x.png"
    ]


@pytest.mark.real_process
async def test_a_bad_allowed_origin_stops_the_pool_with_the_reason(tmp_path: Path) -> None:
    pool = WorkerPool(
        data_dir=tmp_path, builtins=["browser"], browser_allowed_origins=["example.com"]
    )
    with pytest.raises(ServerStartError, match=r"allowed origin 'example\.com' is not an origin"):
        async with pool:
            pass


# -- the egress proxy, spoken to directly --------------------------------------------


async def _through(proxy_url: str, request: bytes) -> bytes:
    port = int(proxy_url.rsplit(":", 1)[1])
    stream = await anyio.connect_tcp("127.0.0.1", port)
    async with stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(10):
            try:
                while chunk := await stream.receive():
                    answer += chunk
            except anyio.EndOfStream:
                pass
    return answer


async def test_the_egress_proxy_refuses_private_targets_and_reports_them(site: PageServer) -> None:
    refused: list[str] = []
    async with EgressProxy(UrlPolicy(), refused.append) as proxy:
        plain = await _through(proxy.url, f"GET {site.base}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert plain.startswith(b"HTTP/1.1 403 Forbidden")
        assert b"127.0.0.1 is a loopback address" in plain
        garbage = await _through(proxy.url, b"nonsense\r\n\r\n")
        assert garbage.startswith(b"HTTP/1.1 400 Bad Request")
        tunnel = await _through(proxy.url, b"CONNECT 169.254.169.254:443 HTTP/1.1\r\n\r\n")
        assert tunnel.startswith(b"HTTP/1.1 403 Forbidden")
        assert refused == [
            f"{site.base}/: 127.0.0.1 is a loopback address",
            "https://169.254.169.254:443/: 169.254.169.254 is a link-local address "
            "(cloud metadata lives at 169.254.169.254)",
        ]


async def test_the_egress_proxy_forwards_what_the_policy_allows(site: PageServer) -> None:
    refused: list[str] = []
    async with EgressProxy(UrlPolicy.build([site.base]), refused.append) as proxy:
        answer = await _through(
            proxy.url,
            f"GET {site.base}/form HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive"
            "\r\n\r\n".encode(),
        )
        assert answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200")
        assert b"<h2>Sign up</h2>" in answer
        # A second request down the same connection (to another host) goes nowhere:
        # the connection ends with the first response.
        twice = await _through(
            proxy.url,
            f"GET {site.base}/ HTTP/1.1\r\nHost: a\r\n\r\n"
            f"GET http://localhost:{site.port}/form HTTP/1.1\r\nHost: b\r\n\r\n".encode(),
        )
        assert twice.count(b"HTTP/1.") == 1 and b"<h1>Welcome</h1>" in twice
        assert b"Sign up" not in twice
        assert refused == []


async def test_the_egress_proxy_asks_upstream_to_close_after_one_response() -> None:
    """An HTTP/1.1 upstream keeps a connection open unless asked to close it: the proxy
    asks (``Connection: close``, the browser's keep-alive headers dropped), so the
    response ends and no second request can ride the connection unchecked."""
    heads: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        if b"\r\nconnection: close\r\n" in head.lower():
            writer.close()
            await writer.wait_closed()
        else:  # kept alive, as HTTP/1.1 says, until the client goes
            await reader.read()
            writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    async with server, EgressProxy(UrlPolicy.build([origin]), lambda _: None) as proxy:
        answer = await _through(
            proxy.url,
            f"GET {origin}/page HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
            "Proxy-Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n".encode(),
        )
    assert answer.endswith(b"\r\n\r\nok")
    (head,) = heads
    lines = head.decode("latin-1").lower().split("\r\n")
    assert lines[0] == "get /page http/1.1"
    assert [line for line in lines if line.startswith(("connection", "proxy-", "keep-alive"))] == [
        "connection: close"
    ]
