"""serve under OAuth against npm's ``oauth2-mock-server`` (installed by ``.ci/node``): a
third-party authorization server with its own RS256 keys, OpenID discovery and token
endpoint. Users log in with the password grant; the token request's RFC 8707 ``resource``
becomes the token's audience, as a real provider configured with resource indicators
does. Skipped without Node (fails under ``CI=true``)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import anyio
import httpx2
import mcp_types as types
import pytest
from _mcp_http import HEADERS, INIT, serving, serving_made
from _node import BIN, NODE_TOOLS, node_tool
from _sdk_tokens import MemoryTokens
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from pydantic import AnyUrl

from nativemcp.protocol import TextContent
from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.serve import Authorization

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

AUDIENCE = "https://mcp.test/mcp"
_SCRIPT = """\
import {{ OAuth2Server }} from {module!r};
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
// RFC 8707: the resource a token is asked for is its audience.
server.service.on("beforeTokenSigning", (token, req) => {{
  if (req.body.resource) token.payload.aud = req.body.resource;
}});
await server.start(0, "127.0.0.1");
console.log(server.issuer.url);
"""


@asynccontextmanager
async def _mock_server(tmp_path: Path) -> AsyncIterator[str]:
    """oauth2-mock-server on a loopback port; yields its issuer URL."""
    node_tool("oauth2-mock-server")
    module = (NODE_TOOLS / "node_modules" / "oauth2-mock-server" / "dist" / "index.mjs").as_uri()
    script = tmp_path / "issuer.mjs"
    script.write_text(_SCRIPT.format(module=module))
    async with await anyio.open_process(
        [str(BIN / "node"), str(script)], stdout=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        line = b""
        with anyio.fail_after(30):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive()
        try:
            yield line.decode().strip()  # http://localhost:PORT, as its tokens say
        finally:
            process.terminate()


async def _login(http: httpx2.AsyncClient, issuer: str, user: str, resource: str) -> str:
    reply = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "password",
            "username": user,
            "password": "pw",
            "scope": "mcp",
            "resource": resource,
        },
        auth=("nativemcp-tests", "secret"),
    )
    assert reply.status_code == 200, reply.text
    token: str = reply.json()["access_token"]
    return token


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_users_of_a_real_authorization_server_call_through_each_as_themselves(
    mode: str, tmp_path: Path
) -> None:
    async with _mock_server(tmp_path) as issuer:
        auth = Authorization(issuer=issuer, audience=AUDIENCE)
        pool = WorkerPool(["_serve_servers:server"], timeout=20)
        async with serving(http_app(pool, auth=auth)) as base, httpx2.AsyncClient() as http:
            with anyio.fail_after(60):
                other = await _login(http, issuer, "ada", "https://another.test/mcp")
                refused = await http.post(
                    f"{base}/mcp",
                    json=INIT,
                    headers={**HEADERS, "authorization": f"Bearer {other}"},
                )
                assert refused.status_code == 401
                seen = []
                for user in ("ada", "bob"):
                    token = await _login(http, issuer, user, AUDIENCE)
                    async with httpx2.AsyncClient(
                        headers={"authorization": f"Bearer {token}"}
                    ) as client_http:
                        transport = streamable_http_client(f"{base}/mcp", http_client=client_http)
                        async with Client(transport, mode=mode) as client:
                            result = await client.call_tool("whoami", {})
                    block = result.content[0]
                    assert isinstance(block, types.TextContent)
                    seen.append(block.text)
                assert seen == ["ada/None", "bob/None"]


def _memory(redirect: str) -> MemoryTokens:
    """The SDK client's token storage, with this client registered already."""
    return MemoryTokens(
        OAuthClientInformationFull(
            client_id="nativemcp-tests",
            client_secret="secret",
            redirect_uris=[AnyUrl(redirect)],
            token_endpoint_auth_method="client_secret_basic",
        )
    )


async def test_the_sdk_clients_oauth_provider_logs_in_through_the_resource_metadata(
    tmp_path: Path,
) -> None:
    async with _mock_server(tmp_path) as issuer:
        redirect = "http://127.0.0.1:9/callback"
        redirected: list[str] = []

        async def follow(url: str) -> None:
            # The browser's part: the mock server authorizes at once and redirects.
            async with httpx2.AsyncClient() as browser:
                reply = await browser.get(url)
            redirected.append(reply.headers["location"])

        async def callback() -> AuthorizationCodeResult:
            query = parse_qs(urlsplit(redirected[-1]).query)
            return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

        pool = WorkerPool(["_serve_servers:server"], timeout=20)

        def app(base: str) -> Any:
            # The audience is this server's own resource URL, known once its port is.
            return http_app(pool, auth=Authorization(issuer=issuer, audience=f"{base}/mcp"))

        async with serving_made(app) as base:
            provider = OAuthClientProvider(
                f"{base}/mcp",
                OAuthClientMetadata(redirect_uris=[AnyUrl(redirect)]),
                _memory(redirect),
                redirect_handler=follow,
                callback_handler=callback,
            )
            with anyio.fail_after(60):
                async with httpx2.AsyncClient(auth=provider) as http:
                    transport = streamable_http_client(f"{base}/mcp", http_client=http)
                    async with Client(transport) as client:
                        who = await client.call_tool("whoami", {})
        assert len(redirected) == 1  # one login
        block = who.content[0]
        assert isinstance(block, types.TextContent)
        assert block.text == "johndoe/None"  # the mock server's user


async def test_nativemcps_own_oauth_client_logs_in_to_serve_and_calls_as_its_user(
    tmp_path: Path,
) -> None:
    # One hub's pool is another's client: an mcpServers entry with "oauth" finds serve's
    # resource metadata, signs in at oauth2-mock-server and calls a tool as that user.
    async with _mock_server(tmp_path) as issuer:
        seen: list[str] = []

        async def follow(url: str) -> str:
            # The browser's part: the mock server authorizes at once and redirects.
            seen.append(url)
            async with httpx2.AsyncClient() as browser:
                reply = await browser.get(url)
            assert reply.status_code == 302, reply.text
            return str(reply.headers["location"])

        served = WorkerPool(["_serve_servers:server"], timeout=20)

        def app(base: str) -> Any:
            return http_app(served, auth=Authorization(issuer=issuer, audience=f"{base}/mcp"))

        async with serving_made(app) as base:
            # oauth2-mock-server has no dynamic registration: a pre-registered client.
            oauth = {"clientId": "nativemcp-tests", "clientSecret": "secret"}
            entry = {"type": "http", "url": f"{base}/mcp", "oauth": oauth}
            with anyio.fail_after(60):
                async with WorkerPool(
                    builtins=[],
                    data_dir=tmp_path,
                    mcp_servers={"team": entry},
                    oauth_redirect=follow,
                ) as hub:
                    assert hub.needs_authorization == {}
                    response = await hub.call_tool("team__whoami", {})
                # The grant is kept: a second hub, with nobody to ask, calls as well.
                async with WorkerPool(
                    builtins=[], data_dir=tmp_path, mcp_servers={"team": entry}
                ) as again:
                    assert again.needs_authorization == {}
                    repeated = await again.call_tool("team__whoami", {})
    assert len(seen) == 1 and f"resource={quote(base + '/mcp', safe='')}" in seen[0]
    assert response.result is not None and not response.result.is_error, response
    block = response.result.content[0]
    assert isinstance(block, TextContent)
    assert block.text == "johndoe/None"  # the mock server's user, seen by serve's tool
    assert repeated.result == response.result
