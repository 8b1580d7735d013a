"""An mcpServers entry's OAuth settings: Claude Code's ``oauth``, Cursor's ``auth``,
``${VAR}`` expansion, and mistakes named by key without echoing a secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nativemcp.proxy.external import OAuthSettings, load_mcp_servers

URL = "https://mcp.example.com/mcp"


def settings(oauth: Any, key: str = "oauth", **environ: str) -> OAuthSettings | None:
    (spec,) = load_mcp_servers({"mcpServers": {"gh": {"url": URL, key: oauth}}}, environ=environ)
    return spec.oauth


def test_claude_code_oauth_settings_are_read_with_variables_expanded() -> None:
    read = settings(
        {
            "clientId": "app-1",
            "clientSecret": "${GH_SECRET}",
            "scopes": ["repo", "read:org"],
            "callbackPort": 8765,
            "clientMetadataUrl": "https://app.example.com/client.json",
        },
        GH_SECRET="s3cret",
    )
    assert read == OAuthSettings(
        client_id="app-1",
        client_secret="s3cret",
        scopes=("repo", "read:org"),
        callback_port=8765,
        client_metadata_url="https://app.example.com/client.json",
    )
    assert read is not None and read.scope == "repo read:org"


def test_cursor_auth_settings_are_read_too() -> None:
    read = settings(
        {"CLIENT_ID": "${ID}", "CLIENT_SECRET": "${SECRET}", "scopes": "a b"},
        key="auth",
        ID="cursor-app",
        SECRET="x",
    )
    assert read == OAuthSettings(client_id="cursor-app", client_secret="x", scopes=("a", "b"))


def test_an_empty_oauth_object_turns_oauth_on_with_registration() -> None:
    assert settings({}) == OAuthSettings()
    (plain,) = load_mcp_servers({"mcpServers": {"gh": {"url": URL}}})
    assert plain.oauth is None


def test_client_credentials_with_a_private_key_are_read() -> None:
    read = settings(
        {"clientId": "m2m", "privateKey": "${KEY}", "grantType": "client_credentials"},
        KEY="-----BEGIN PRIVATE KEY-----",
    )
    assert read is not None and read.grant == "client_credentials"
    assert read.private_key == "-----BEGIN PRIVATE KEY-----"


XAA = {
    "grantType": "identity_assertion",
    "clientId": "xaa",
    "clientSecret": "xaa-secret",
    "issuer": "https://auth.example.com",
}
"""A complete SEP-990 (enterprise-managed authorization) entry."""


def test_an_identity_assertion_grant_is_read_with_its_issuer() -> None:
    read = settings(XAA)
    assert read is not None and read.grant == "identity_assertion"
    assert (read.client_id, read.issuer) == ("xaa", "https://auth.example.com")


def test_a_secret_is_never_in_the_settings_repr() -> None:
    read = settings({"clientId": "app", "clientSecret": "hunter2-secret"})
    assert "hunter2-secret" not in repr(read) and "hunter2-secret" not in str(read)
    assert "client_secret=set" in repr(read)


@pytest.mark.parametrize(
    ("oauth", "named"),
    [
        ("yes", "'oauth' must be an object"),
        ({"clientID": "x"}, "unknown key 'oauth.clientID'"),
        ({"callbackPort": 0}, "'oauth.callbackPort' must be a port number"),
        ({"callbackPort": 65536}, "'oauth.callbackPort' must be a port number"),
        ({"callbackPort": True}, "'oauth.callbackPort' must be a port number"),
        ({"scopes": [1]}, "'oauth.scopes' must be a list of strings"),
        ({"clientSecret": 5}, "'oauth.clientSecret' must be a string"),
        ({"clientMetadataUrl": "http://a.example/c.json"}, "must be an https:// URL"),
        ({"grantType": "password"}, "'oauth.grantType' must be one of"),
        ({"grantType": "client_credentials"}, "needs 'oauth.clientId'"),
        ({"grantType": "client_credentials", "clientId": "m"}, "'oauth.clientSecret' or"),
        ({"privateKey": "k"}, "'oauth.privateKey' is for 'grantType'"),
        ({"tokenEndpointAuthMethod": "magic"}, "'oauth.tokenEndpointAuthMethod' must be"),
        ({"issuer": "auth.example.com"}, "'oauth.issuer' must be"),
        ({**XAA, "clientId": ""}, "identity_assertion needs 'oauth.clientId'"),
        ({**XAA, "clientSecret": ""}, "identity_assertion needs 'oauth.clientSecret'"),
        ({k: v for k, v in XAA.items() if k != "issuer"}, "needs 'oauth.issuer'"),
        ({**XAA, "tokenEndpointAuthMethod": "none"}, "client_secret_basic or client_secret_post"),
    ],
)
def test_a_bad_oauth_value_is_an_error_naming_the_key(oauth: Any, named: str) -> None:
    with pytest.raises(ValueError, match="MCP server 'gh'") as caught:
        settings(oauth)
    assert named in str(caught.value)


def test_an_unset_variable_names_the_key_and_not_the_other_values(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"url": URL, "oauth": {"clientId": "visible-id", "clientSecret": "${NOPE}"}}
    config.write_text(json.dumps({"mcpServers": {"gh": entry}}, indent=2))
    with pytest.raises(ValueError) as caught:
        load_mcp_servers(config, environ={})
    message = str(caught.value)
    assert "oauth.clientSecret" in message and "'NOPE' is not set" in message
    assert message.startswith(f"{config}:")


def test_oauth_on_a_stdio_server_is_an_error() -> None:
    with pytest.raises(ValueError, match="'oauth' is for a remote"):
        load_mcp_servers({"mcpServers": {"local": {"command": "x", "oauth": {}}}})
