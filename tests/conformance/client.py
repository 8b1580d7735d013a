"""The official MCP client conformance suite's runner, driving a nativemcp `WorkerPool`.

The suite (npm ``@modelcontextprotocol/conformance``) starts a scenario's server and runs
``python tests/conformance/client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` and, for
some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON: a pre-registered client's id and
secret, or a private key) in the environment. This uses only nativemcp's public API:
the scenario's server is one ``mcpServers`` entry of a pool, its OAuth settings taken
from the context, and the pool's ``oauth_redirect`` hook follows the authorization URL
headlessly (one GET, the code read from the redirect), as the suite expects of a
client. For SEP-990 (``auth/cross-app-access-complete-flow``) the pool's
``oauth_assertion`` hook is this app's leg 1: an RFC 8693 token exchange of the
context's ID token at the context's identity provider, for an ID-JAG. For SEP-1933
(``auth/wif-jwt-bearer``) the entry's grant is ``workload_identity``, the context's
workload JWT in a file its ``assertionFile`` names, as a platform would put it. DPoP
(``auth/dpop``, ``auth/dpop-nonce``) needs no setting: the issuer's metadata asks for it.
Then it does what the scenario asks: connect and list tools (the pool does
both when it starts), and call the tools the context names (``toolCalls``) or the
scenario's tool.

``.ci/conformance`` runs every client scenario through it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2

from nativemcp.proxy import WorkerPool

SERVER = "scenario"
"""The scenario's server's name in the pool."""
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL the suite's CIMD scenario expects."""
SCHEMA_TOOL = "json_schema_2020_12_tool"
"""The tool whose input schema the schema-preservation scenario asks echoed back."""

NO_RESULT_TYPE = "test_mrtr_no_result_type"
"""The requestState scenario's tool whose result lacks ``resultType`` (the SDK refuses it)."""
MRTR_TOOLS = (
    "test_mrtr_echo_state",
    "test_mrtr_unrelated",
    "test_mrtr_no_state",
    NO_RESULT_TYPE,
)
"""The tools of the suite's requestState scenario (SEP-2322), in the order it expects."""

Call = tuple[str, dict[str, Any]]
"""A tool call: the scenario server's tool name and the arguments."""


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


def id_jag_exchange(context: dict[str, Any]) -> Any:
    """The ``oauth_assertion`` hook: trade the user's ID token at the enterprise
    identity provider for an ID-JAG naming ``audience`` and ``resource`` (RFC 8693)."""

    async def exchange(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(
                context["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "subject_token": context["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "audience": audience,
                    "resource": resource,
                    "client_id": context["idp_client_id"],
                },
            )
        response.raise_for_status()
        return str(response.json()["access_token"])

    return exchange


async def authorization_server(url: str) -> str:
    """The issuer the server's protected-resource metadata names (RFC 9728). The suite
    does not put it in the context; a deployment writes it in the entry's settings."""
    parts = urlsplit(url)
    metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(metadata)
    response.raise_for_status()
    return str(response.json()["authorization_servers"][0])


def oauth_settings(scenario: str, context: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's ``oauth`` settings for ``scenario`` (None: not an auth scenario)."""
    if not scenario.startswith("auth/"):
        return None
    settings: dict[str, Any] = {}
    if context.get("client_id"):
        settings["clientId"] = context["client_id"]
    if context.get("client_secret"):
        settings["clientSecret"] = context["client_secret"]
    if "idp_token_endpoint" in context:
        settings["grantType"] = "identity_assertion"
    elif "valid_jwt" in context:
        # SEP-1933: the workload's JWT where a platform puts it, a file read anew
        # each time (a Kubernetes projected token); `run` writes it there.
        settings["grantType"] = "workload_identity"
    elif scenario.startswith("auth/client-credentials"):
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
    if oauth is not None and oauth.get("grantType") in ("identity_assertion", "workload_identity"):
        oauth["issuer"] = await authorization_server(url)
    if oauth is not None and oauth.get("grantType") == "workload_identity":
        token = Path(tempfile.mkdtemp()) / "token"
        token.write_text(context["valid_jwt"], encoding="utf-8")
        oauth["assertionFile"] = str(token)
    async with WorkerPool(
        mcp_servers={SERVER: entry},
        oauth_redirect=follow_authorization,
        oauth_assertion=id_jag_exchange(context) if "idp_token_endpoint" in context else None,
        elicitation_handler=elicit_defaults,
        timeout=30,
        start_timeout=30,
    ) as pool:
        if pool.needs_authorization:
            raise RuntimeError(f"not authorized: {pool.needs_authorization}")
        tools = {tool.name.removeprefix(f"{SERVER}__"): tool for tool in await pool.list_tools()}
        for name, arguments in calls(scenario, context, tools):
            try:
                response = await pool.call_tool(f"{SERVER}__{name}", arguments)
            except Exception:
                if name != NO_RESULT_TYPE:
                    raise
                # The SDK's client session refuses a 2026-07-28 result without
                # resultType (SEP-2322 says to read it as "complete"); the scenario's
                # checks read the wire, which is right, so this one error is logged.
                logging.exception("%s: the SDK's client refused the result", name)
                continue
            logging.debug("%s answered %s", name, response)


def calls(scenario: str, context: dict[str, Any], tools: dict[str, Any]) -> list[Call]:
    """The tool calls ``scenario`` asks for, by the scenario server's tool names."""
    if "toolCalls" in context:  # the scenario says which tools, with which arguments
        return [(call["name"], call.get("arguments") or {}) for call in context["toolCalls"]]
    if scenario == "tools_call":
        return [("add_numbers", {"a": 5, "b": 3})]
    if scenario == "sse-retry":
        return [("test_reconnection", {})]
    if scenario == "sep-2322-client-request-state":
        # Each of its four tools tests one duty of a client answering input requests.
        return [(name, {}) for name in MRTR_TOOLS]
    if scenario == "json-schema-2020-12-preservation":
        # Echo the focal tool's schema as the client received it (SEP-1613, SEP-2106).
        return [("json_schema_echo", {"schema": tools[SCHEMA_TOOL].input_schema})]
    return [(name, {}) for name in list(tools)[:1]]


def main() -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} SERVER_URL")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    anyio.run(run, sys.argv[-1], scenario, context)


if __name__ == "__main__":
    main()
