"""``nativemcp auth login|logout|status`` against a real loopback issuer and a protected
MCP server (``_oauth_server``): the browser is played by an HTTP client that follows
the issuer's redirect back to the login's loopback listener."""

from __future__ import annotations

import io
import json
import shlex
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from _grants import kept_grants, stored
from _oauth_server import Issuer, protected_server

from nativemcp.proxy.cli import main
from nativemcp.proxy.cli._auth import log_in
from nativemcp.proxy.external import GRANTS_FOLDER, load_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


@pytest.fixture
async def remote(tmp_path: Path) -> AsyncIterator[tuple[Issuer, Path]]:
    """The issuer, and an mcp.json naming its server ``remote`` (plus a plain one)."""
    issuer = Issuer()
    async with protected_server(issuer) as url:
        config = tmp_path / "mcp.json"
        servers = {"remote": {"url": url, "oauth": {}}, "plain": {"url": url}}
        config.write_text(json.dumps({"mcpServers": servers}))
        yield issuer, config


async def cli(*argv: str) -> int:
    """The real entry point, in a thread (it runs its own event loop)."""
    return await anyio.to_thread.run_sync(main, list(argv))


async def login(config: Path, data: Path) -> str:
    """`log_in` with a browser that comes back to the loopback port; what it printed."""
    (spec,) = [spec for spec in load_mcp_servers(config) if spec.name == "remote"]
    out = io.StringIO()
    async with anyio.create_task_group() as browsers:

        def open_url(url: str) -> None:
            async def browse() -> None:
                async with httpx2.AsyncClient(follow_redirects=True) as http:
                    await http.get(url)

            browsers.start_soon(browse)

        with anyio.fail_after(20):
            await log_in(spec, data / GRANTS_FOLDER, open_url, out)
    return out.getvalue()


async def test_login_prints_the_address_and_keeps_tokens_that_status_then_shows(
    remote: tuple[Issuer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, config = remote
    data = tmp_path / "data"
    printed = await login(config, data)
    assert f"{issuer.base}/authorize?" in printed and "Waiting for the browser on" in printed
    assert issuer.authorizations == 1
    assert await cli("auth", "status", "--mcp-config", str(config), "--data-dir", str(data)) == 0
    status = capsys.readouterr().out
    assert f"remote: authorized by {issuer.base}, scopes mcp, expires in " in status
    assert "plain" not in status  # no "oauth" entry: not an OAuth server
    token = stored(data)["resources"][f"{issuer.base}/mcp"]["access_token"]
    assert token not in status and token not in printed


async def test_logout_revokes_at_the_issuer_and_deletes_the_kept_tokens(
    remote: tuple[Issuer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, config = remote
    data = tmp_path / "data"
    await login(config, data)
    kept = stored(data)["resources"][f"{issuer.base}/mcp"]["refresh_token"]
    options = ("--mcp-config", str(config), "--data-dir", str(data))
    assert await cli("auth", "logout", "remote", *options) == 0
    assert "Logged out of 'remote'" in capsys.readouterr().out
    assert issuer.revoked == [kept] and kept not in issuer.refresh
    assert kept_grants(data) == []
    assert await cli("auth", "status", *options) == 0
    assert "remote: not authorized; run: nativemcp auth login remote" in capsys.readouterr().out
    assert await cli("auth", "logout", "remote", *options) == 0
    assert "Nothing was kept for 'remote'" in capsys.readouterr().out


async def test_login_to_a_server_without_oauth_names_the_oauth_servers(
    remote: tuple[Issuer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = remote
    options = ("--mcp-config", str(config), "--data-dir", str(tmp_path))
    assert await cli("auth", "login", "plain", *options) == 2
    error = capsys.readouterr().err
    assert "no OAuth server named 'plain'" in error and "OAuth servers: remote" in error
    assert await cli("auth", "status", "--data-dir", str(tmp_path)) == 2
    assert "--mcp-config FILE" in capsys.readouterr().err


async def test_a_second_login_on_a_callback_port_in_use_is_refused_without_a_traceback(
    remote: tuple[Issuer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    issuer, config = remote
    servers = json.loads(config.read_text())["mcpServers"]
    with socket.socket() as first_login:
        first_login.bind(("127.0.0.1", 0))
        first_login.listen()
        port = first_login.getsockname()[1]
        servers["remote"]["oauth"] = {"callbackPort": port}
        config.write_text(json.dumps({"mcpServers": servers}))
        argv = ["--mcp-config", str(config), "--data-dir", str(tmp_path / "data")]
        with anyio.fail_after(20):
            assert await cli("auth", "login", "remote", "--no-browser", *argv) != 0
    said = capsys.readouterr()
    assert f"port {port} on localhost is taken" in said.err
    assert "Traceback" not in said.err + said.out and "/authorize?" not in said.err
    assert issuer.authorizations == 0


async def test_every_login_hint_is_a_command_to_paste_with_the_options_typed(
    remote: tuple[Issuer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = remote
    data = tmp_path / "my data"  # a space: the hint must quote it
    typed = ["--mcp-config", str(config), "--data-dir", str(data)]
    expected = ["nativemcp", "auth", "login", "remote", *typed]
    assert await cli("auth", "status", *typed) == 0
    (status,) = [line for line in capsys.readouterr().out.splitlines() if "remote" in line]
    assert shlex.split(status.split("run: ", 1)[1]) == expected
    # The hint of a start failure too ("plain" has no "oauth" entry and is refused).
    with anyio.fail_after(30):
        assert await cli("call", "plain", "whoami", *typed) == 1
    said = capsys.readouterr().err
    assert "refused the connection: HTTP 401" in said
    assert shlex.split(said.split("and run: ", 1)[1]) == [*expected[:3], "plain", *typed]
    servers = json.loads(config.read_text())["mcpServers"]
    config.write_text(json.dumps({"mcpServers": {"remote": servers["remote"]}}))
    with anyio.fail_after(30):
        assert await cli("call", "remote", "whoami", *typed) == 1
    said = capsys.readouterr().err
    assert "needs authorization" in said
    assert shlex.split(said.split("run: ", 1)[1]) == expected
