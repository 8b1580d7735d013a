"""The official MCP client conformance suite's runner, driving a nativemcp `WorkerPool`.

The suite (npm ``@modelcontextprotocol/conformance``) starts a scenario's server and runs
``python tests/conformance/client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` and, for
some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON: a pre-registered client's id and
secret, or a private key) in the environment. This uses only nativemcp's public API:
the scenario's server is one ``mcpServers`` entry of a pool, its OAuth settings taken
from the context, and the pool's ``oauth_redirect`` hook follows the authorization URL
headlessly (one GET, the code read from the redirect), as the suite expects of a
client. Then it does what the scenario asks: connect and list tools (the pool does
both when it starts), and call a tool.

``.ci/conformance`` runs every client scenario through it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio
import httpx2

from nativemcp.proxy import WorkerPool

SERVER = "scenario"
"""The scenario's server's name in the pool."""
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL the suite's CIMD scenario expects."""


async def follow_authorization(url: str) -> str:
    """The suite's authorization endpoint redirects at once: return where it sends us.

    Raises:
        RuntimeError: the endpoint did not redirect.
    """
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(url, follow_redirects=False)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"expected a redirect from the authorization endpoint, got {response}")
    return str(location)


def oauth_settings(scenario: str, context: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's ``oauth`` settings for ``scenario`` (None: not an auth scenario)."""
    if not scenario.startswith("auth/"):
        return None
    settings: dict[str, Any] = {}
    if context.get("client_id"):
        settings["clientId"] = context["client_id"]
    if context.get("client_secret"):
        settings["clientSecret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials"):
        settings["grantType"] = "client_credentials"
        if context.get("private_key_pem"):
            settings["privateKey"] = context["private_key_pem"]
            settings["signingAlgorithm"] = context.get("signing_algorithm", "ES256")
    elif "clientId" not in settings:
        settings["clientMetadataUrl"] = CIMD_URL
    return settings


def elicit_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Accept an elicitation with the defaults its schema gives (SEP-1034)."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {name: field["default"] for name, field in properties.items() if "default" in field}
    return {"action": "accept", "content": content}


async def run(url: str, scenario: str, context: dict[str, Any]) -> None:
    entry: dict[str, Any] = {"type": "http", "url": url}
    oauth = oauth_settings(scenario, context)
    if oauth is not None:
        entry["oauth"] = oauth
    async with WorkerPool(
        mcp_servers={SERVER: entry},
        oauth_redirect=follow_authorization,
        elicitation_handler=elicit_defaults,
        timeout=30,
        start_timeout=30,
    ) as pool:
        if pool.needs_authorization:
            raise RuntimeError(f"not authorized: {pool.needs_authorization}")
        tools = await pool.list_tools()
        if scenario == "tools_call":
            arguments: dict[str, Any] = {"a": 5, "b": 3}
            names = [tool.name for tool in tools if tool.name.endswith("add_numbers")]
        elif scenario == "sse-retry":
            arguments = {}
            names = [tool.name for tool in tools if tool.name.endswith("test_reconnection")]
        else:
            arguments = {}
            names = [tool.name for tool in tools][:1]
        for name in names:
            response = await pool.call_tool(name, arguments)
            logging.debug("%s answered %s", name, response)


def main() -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} SERVER_URL")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    anyio.run(run, sys.argv[-1], scenario, context)


if __name__ == "__main__":
    main()
