"""Nothing leaves the browser except through the session's checking proxy.

A page on an allowed origin tries every way it has to reach a port of this machine
that is not allowed: WebRTC (STUN, TURN over UDP, TCP and TLS, from the page and from
a fresh iframe), WebTransport (QUIC over UDP), a preconnect, a fetch and a WebSocket.
A UDP and a TCP socket listen on those ports; after the page reports that each attempt
has finished or failed, not one datagram and not one connection may have arrived (the
requests that go through the proxy are refused there). Without
``--webrtc-ip-handling-policy=disable_non_proxied_udp`` the STUN Binding and TURN
Allocate packets arrive (20 of them in one run).
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from _browser_pages import PageServer, require_chromium

from nativemcp.proxy import WorkerPool
from nativemcp.workers.browser import BrowserAPI

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio"), pytest.mark.real_process]


@pytest.fixture(scope="module")
async def listed_pool(
    site: PageServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WorkerPool]:
    """A pool whose allow-list holds the page server's origin, and nothing else."""
    require_chromium()
    folder = tmp_path_factory.mktemp("side")
    async with WorkerPool(
        data_dir=folder, builtins=["browser"], browser_allowed_origins=[site.base], timeout=60
    ) as pool:
        yield pool


@pytest.fixture
def listeners() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A UDP and a TCP socket on free loopback ports the allow-list does not hold."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with udp, tcp:
        udp.bind(("127.0.0.1", 0))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(64)
        udp.setblocking(False)
        tcp.setblocking(False)
        yield udp, tcp


def _arrived(udp: socket.socket, tcp: socket.socket) -> tuple[int, int]:
    """Datagrams and connections waiting on the sockets (on loopback, what was sent
    before now has arrived)."""
    datagrams = connections = 0
    while True:
        try:
            udp.recv(65536)
        except BlockingIOError:
            break
        datagrams += 1
    while True:
        try:
            connection, _ = tcp.accept()
        except BlockingIOError:
            break
        connection.close()
        connections += 1
    return datagrams, connections


async def test_webrtc_webtransport_and_the_rest_reach_no_port_around_the_proxy(
    listed_pool: WorkerPool,
    site: PageServer,
    listeners: tuple[socket.socket, socket.socket],
) -> None:
    udp, tcp = listeners
    udp_port, tcp_port = udp.getsockname()[1], tcp.getsockname()[1]
    browser = listed_pool.server(BrowserAPI)
    await browser.navigate(url=f"{site.base}/side-channels?udp={udp_port}&tcp={tcp_port}")
    await browser.wait_for_text(text="All tried.", timeout=20)
    text = (await browser.read_text()).text
    report = json.loads(text.rsplit(" All tried.", 1)[0])
    assert _arrived(udp, tcp) == (0, 0), report
    # The attempts did run, and ended without reaching anything.
    assert set(report) == {"page", "fresh iframe", "webtransport", "fetch", "websocket"}
    # Gathering ends at once with no candidate: no host socket, no STUN, no TURN.
    assert report["page"] == report["fresh iframe"] == ["finished", []]
    assert report["webtransport"].startswith("failed")
    assert report["fetch"] == report["websocket"] == "failed"


async def test_turn_over_tcp_is_a_tunnel_the_proxy_refuses_and_reports(
    listed_pool: WorkerPool,
    site: PageServer,
    listeners: tuple[socket.socket, socket.socket],
) -> None:
    udp, tcp = listeners
    udp_port, tcp_port = udp.getsockname()[1], tcp.getsockname()[1]
    browser = listed_pool.server(BrowserAPI)
    page = await browser.navigate(url=f"{site.base}/side-channels?udp={udp_port}&tcp={tcp_port}")
    done = await browser.wait_for_text(text="All tried.", timeout=20)
    refused = [line.split(": ", 1)[0] for line in [*page.refused, *done.refused]]
    # TURN over TCP and TLS asked the proxy for a tunnel, which the allow-list refused.
    assert f"https://127.0.0.1:{tcp_port}/" in refused
    assert _arrived(udp, tcp) == (0, 0)
