"""``nativemcp serve --auth-issuer URL --auth-audience AUD``: the flags' mistakes are one
line and exit status 2 before anything starts; a served process takes a loopback
issuer's tokens and refuses calls without one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from _issuer import running_issuer
from _mcp_http import HEADERS, INIT
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from nativemcp.proxy.cli import main

pytestmark = pytest.mark.anyio_backends("asyncio")

TESTS = Path(__file__).parents[2]
HTTP = ["serve", "--transport", "http", "planning"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--auth-issuer", "https://idp.example.com"], "needs both --auth-issuer"),
        (["--auth-audience", "mcp"], "needs both --auth-issuer"),
        (["--scope", "x=y"], "--scope, --auth-resource and --auth-client-id need"),
        (
            ["--auth-issuer", "https://i", "--auth-audience", "a", "--auth-client-id", "rs"],
            "--auth-client-id needs its secret in $NATIVEMCP_AUTH_CLIENT_SECRET",
        ),
        (
            ["--auth-issuer", "https://idp.example.com", "--auth-audience", "a", "--token", "t"],
            "--token and --auth-issuer are exclusive",
        ),
        (
            ["--auth-issuer", "http://idp.example.com", "--auth-audience", "a"],
            "--auth-issuer must be an https:// URL (http:// only on loopback)",
        ),
        (
            ["--auth-issuer", "https://idp.example.com", "--auth-audience", "a", "--scope", "x"],
            "a scope rule is GLOB=SCOPE[,SCOPE]",
        ),
        (
            ["--auth-issuer", "https://i", "--auth-audience", "a", "--scope", 'x=say "hi"'],
            "is not an OAuth scope",
        ),
    ],
)
def test_oauth_flag_mistakes_are_one_line_before_anything_starts(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*HTTP, *flags]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_a_static_token_in_the_environment_is_exclusive_with_oauth(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NATIVEMCP_TOKEN", "s3cret")
    flags = ["--auth-issuer", "https://idp.example.com", "--auth-audience", "a"]
    assert main([*HTTP, *flags]) == 2
    assert "$NATIVEMCP_TOKEN and --auth-issuer are exclusive" in capsys.readouterr().err


def test_an_issuer_that_cannot_be_reached_stops_serve_at_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    issuer = f"http://127.0.0.1:{free_port()}"
    assert main([*HTTP, "--auth-issuer", issuer, "--auth-audience", "a"]) == 2
    assert f"--auth-issuer {issuer}: cannot reach" in capsys.readouterr().err


@pytest.mark.anyio
@pytest.mark.real_process
async def test_served_with_oauth_a_token_from_the_issuer_calls_through_and_none_gets_401() -> None:
    async with running_issuer() as issuer:
        port = free_port()
        argv = [
            "serve",
            "--transport",
            "http",
            "--port",
            str(port),
            "--auth-issuer",
            issuer.url,
            "--auth-audience",
            "nativemcp-test",
            "--scope",
            "*__slow=slow",
            "--auth-client-id",
            "resource-server",
            "_serve_servers:server",
        ]
        env = {**os.environ, "NATIVEMCP_AUTH_CLIENT_SECRET": "rs-secret"}
        process = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
            [venv_script("nativemcp"), *argv], cwd=TESTS, env=env
        )
        try:
            await anyio.to_thread.run_sync(wait_listening, port, process)
            base = f"http://127.0.0.1:{port}/mcp"
            with anyio.fail_after(60):
                async with httpx2.AsyncClient() as http:
                    refused = await http.post(base, json=INIT, headers=HEADERS)
                    assert refused.status_code == 401
                    assert "resource_metadata=" in refused.headers["www-authenticate"]
                    http.headers["authorization"] = f"Bearer {issuer.token('ada')}"
                    async with Client(streamable_http_client(base, http_client=http)) as client:
                        names = {tool.name for tool in (await client.list_tools()).tools}
                        assert "whoami" in names and "slow" not in names
                        who = await client.call_tool("whoami", {})
                        assert who.content[0].text == "ada/None"  # type: ignore[union-attr]
                    # An opaque token: read by the issuer's introspection endpoint.
                    http.headers["authorization"] = f"Bearer {issuer.opaque('eve')}"
                    async with Client(streamable_http_client(base, http_client=http)) as client:
                        who = await client.call_tool("whoami", {})
                        assert who.content[0].text == "eve/None"  # type: ignore[union-attr]
        finally:
            stop_all([process])


@pytest.mark.anyio
@pytest.mark.real_process
async def test_two_users_of_serve_browser_without_mcp_sessions_never_share_a_page(
    tmp_path: Path,
) -> None:
    from _browser_pages import require_chromium
    from _browser_pages import serving as serving_pages

    require_chromium()
    port = free_port()
    async with running_issuer() as issuer:
        with serving_pages() as site:
            server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
                [venv_script("nativemcp"), "serve", "browser", "--transport", "http",
                 "--port", str(port), "--data-dir", str(tmp_path), "--browser-allow", site.base,
                 "--auth-issuer", issuer.url, "--auth-audience", "nativemcp-test"],
            )  # fmt: skip
            try:
                await anyio.to_thread.run_sync(wait_listening, port, server)
                url = f"http://127.0.0.1:{port}/mcp/browser"
                with anyio.fail_after(90):
                    # 2026-07-28 clients: no MCP session; the token's subject keeps them apart.
                    async with (
                        httpx2.AsyncClient() as alice_http,
                        httpx2.AsyncClient() as bob_http,
                    ):
                        alice_http.headers["authorization"] = f"Bearer {issuer.token('alice')}"
                        bob_http.headers["authorization"] = f"Bearer {issuer.token('bob')}"
                        async with (
                            Client(streamable_http_client(url, http_client=alice_http)) as alice,
                            Client(streamable_http_client(url, http_client=bob_http)) as bob,
                        ):
                            for client in (alice, bob, alice):
                                await client.call_tool("navigate", {"url": f"{site.base}/dynamic"})
                            seen = (await alice.call_tool("snapshot", {})).content[0]
                            other = (await bob.call_tool("snapshot", {})).content[0]
                assert 'Page: "Dynamic (visited=again)"' in seen.text  # type: ignore[union-attr]
                assert 'Page: "Dynamic (visited=once)"' in other.text  # type: ignore[union-attr]
            finally:
                stop_all([server])
