"""The loopback callback of the authorization-code flow: it ends only on the callback
whose state is the authorization request's, serves connections side by side, listens on
every address its ``localhost`` names, holds its port from the moment the redirect URI
is made, and a second sign-in on a port in use is refused with a clear reason."""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from _oauth_server import Issuer, follow, whoami
from _oauth_server import oauth_pool as pool
from _process import free_port

from nativemcp.proxy.external import NeedsAuthorization

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

NAME = "remote"


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def redirect_of(authorization_url: str) -> str:
    """Where the issuer sends the browser back (the callback, with code and state)."""
    async with httpx2.AsyncClient() as http:
        answer = await http.get(authorization_url)
    assert answer.status_code == 302, answer.text
    return str(answer.headers["location"])


def localhost_addresses() -> list[str]:
    found = socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)
    return sorted({str(address[0]) for *_, address in found})


async def sign_in(
    url: str, data_dir: Path, browse: Callable[[str], Coroutine[Any, Any, None]], limit: float = 20
) -> None:
    """Start a pool whose redirect hook starts ``browse(authorization_url)`` as the
    browser, and call the server once signed in, all within ``limit`` seconds."""
    async with anyio.create_task_group() as browsers:

        def hook(authorization_url: str) -> None:
            browsers.start_soon(browse, authorization_url)

        with anyio.fail_after(limit):
            async with pool(url, data_dir, oauth_redirect=hook) as signed_in:
                assert await whoami(signed_in) == "authorized"


async def test_a_forged_callback_is_refused_and_the_sign_in_waits_for_the_real_one(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    pages: list[tuple[int, str]] = []

    async def browse(authorization_url: str) -> None:
        callback = query(authorization_url)["redirect_uri"]
        async with httpx2.AsyncClient(follow_redirects=True) as http:
            # Another page on the machine gets there first, with a code of its own.
            forged = await http.get(callback, params={"code": "forged", "state": "x"})
            pages.append((forged.status_code, forged.text))
            real = await http.get(authorization_url)
            pages.append((real.status_code, real.text))

    await sign_in(url, tmp_path, browse)
    (forged_status, forged_page), (real_status, real_page) = pages
    assert forged_status == 400 and "not the one nativemcp is waiting for" in forged_page
    assert "Authorized" not in forged_page
    assert real_status == 200 and "You can close this window" in real_page
    assert server.authorizations == 1 and server.grants == ["authorization_code"]


async def test_a_silent_local_connection_does_not_hold_up_the_callback(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    _, url = oauth_issuer

    async def browse(authorization_url: str) -> None:
        port = urlsplit(query(authorization_url)["redirect_uri"]).port
        assert port is not None
        # A local process connects and says nothing (the listener gives one connection
        # 10 s for its request head; the sign-in must not wait on it).
        async with await anyio.connect_tcp("127.0.0.1", port):
            async with httpx2.AsyncClient(follow_redirects=True) as http:
                page = await http.get(authorization_url)
            assert "You can close this window" in page.text

    await sign_in(url, tmp_path, browse, limit=8)


@pytest.mark.parametrize("address", localhost_addresses())
async def test_the_callback_listens_on_each_address_its_localhost_names(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, address: str
) -> None:
    _, url = oauth_issuer

    async def browse(authorization_url: str) -> None:
        back = urlsplit(await redirect_of(authorization_url))
        assert back.hostname == "localhost"
        host = f"[{address}]" if ":" in address else address
        async with httpx2.AsyncClient() as http:
            page = await http.get(back._replace(netloc=f"{host}:{back.port}").geturl())
        assert "You can close this window" in page.text

    await sign_in(url, tmp_path, browse)


async def test_the_callback_port_is_held_from_the_moment_the_redirect_uri_is_registered(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path
) -> None:
    server, url = oauth_issuer
    taken: list[bool] = []

    def checking(body: dict[str, Any]) -> None:
        port = urlsplit(body["redirect_uris"][0]).port
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as exc:
                taken.append(exc.errno == errno.EADDRINUSE)
            else:
                taken.append(False)  # free: another process could take it now

    server.on_register = checking
    with anyio.fail_after(20):
        async with pool(url, tmp_path, oauth_redirect=follow) as signed_in:
            assert await whoami(signed_in) == "authorized"
    assert taken == [True]


async def test_a_second_sign_in_on_a_port_in_use_is_refused_with_the_reason(
    oauth_issuer: tuple[Issuer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, url = oauth_issuer
    port = free_port()
    with socket.socket() as other_login:
        other_login.bind(("127.0.0.1", port))
        other_login.listen()
        asked: list[str] = []
        with anyio.fail_after(20):
            async with pool(url, tmp_path, {"callbackPort": port}) as running:
                with pytest.raises(NeedsAuthorization, match=f"port {port} on localhost is taken"):
                    await running.authorize(NAME, asked.append)
    assert asked == []  # nobody was sent to a browser that could not come back
    assert server.authorizations == 0
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
