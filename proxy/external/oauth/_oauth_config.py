"""A remote server's OAuth settings, as the hosts write them in an ``mcpServers`` entry.

Two spellings are read, the first one present wins:

- Claude Code's ``"oauth": {"clientId", "clientSecret", "scopes", "callbackPort",
  "clientMetadataUrl"}``, with nativemcp's additions for machine-to-machine clients:
  ``"grantType": "client_credentials"``, ``"privateKey"`` (a PEM, for
  ``private_key_jwt``), ``"signingAlgorithm"``, ``"tokenEndpointAuthMethod"`` and
  ``"issuer"`` (the only authorization server its credentials go to); and
  ``"grantType": "identity_assertion"`` for SEP-990 enterprise-managed authorization
  (an ID-JAG from the enterprise identity provider, got by the pool's
  ``oauth_assertion`` hook, exchanged at ``"issuer"`` with ``"clientId"`` and
  ``"clientSecret"``); ``"grantType": "workload_identity"`` for SEP-1933 (the
  workload's platform JWT as an RFC 7523 jwt-bearer grant at ``"issuer"``, read anew
  from ``"assertionFile"`` or ``"assertionEnv"``, else from the ``oauth_assertion``
  hook; ``"clientId"`` only where the authorization server wants one); and
  ``"grantType": "token_exchange"`` (RFC 8693, for an entry with ``"grantScope":
  "user"`` behind ``serve --auth-issuer``: serve exchanges each caller's access token
  at ``"issuer"`` for one whose audience is the server, or ``"audience"`` where the
  upstream names itself otherwise);
- Cursor's ``"auth": {"CLIENT_ID", "CLIENT_SECRET", "scopes"}``.

Every string takes ``${VAR}`` expansion, so a secret lives in the environment and never
in the file. A secret is never printed: `OAuthSettings`' repr shows only whether one is
set, and a mistake names the key, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

__all__ = ["GrantType", "OAuthSettings", "TokenEndpointAuthMethod", "read_oauth_settings"]

GrantType = Literal[
    "authorization_code",
    "client_credentials",
    "identity_assertion",
    "workload_identity",
    "token_exchange",
]
TokenEndpointAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]

_GRANTS: Final[tuple[GrantType, ...]] = (
    "authorization_code",
    "client_credentials",
    "identity_assertion",
    "workload_identity",
    "token_exchange",
)
_METHODS: Final[tuple[TokenEndpointAuthMethod, ...]] = (
    "client_secret_basic",
    "client_secret_post",
    "none",
)
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256")

# The keys of each spelling, and the field each one fills.
_CLAUDE: Final[dict[str, str]] = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "scopes": "scopes",
    "callbackPort": "callback_port",
    "clientMetadataUrl": "client_metadata_url",
    "grantType": "grant",
    "privateKey": "private_key",
    "signingAlgorithm": "signing_algorithm",
    "tokenEndpointAuthMethod": "token_endpoint_auth_method",
    "issuer": "issuer",
    "assertionFile": "assertion_file",
    "assertionEnv": "assertion_env",
    "audience": "audience",
}
_CURSOR: Final[dict[str, str]] = {
    "CLIENT_ID": "client_id",
    "CLIENT_SECRET": "client_secret",
    "scopes": "scopes",
}


class OAuthSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How nativemcp authorizes to one remote server (all optional: with none of them,
    the client registers itself, by a Client ID Metadata Document or dynamically)."""

    client_id: str | None = None
    """A pre-registered client id (else CIMD, then dynamic registration)."""
    client_secret: str | None = None
    """The pre-registered client's secret (never printed)."""
    scopes: tuple[str, ...] = ()
    """Scopes to ask for (else those the server's challenge or metadata name)."""
    callback_port: int | None = None
    """The loopback port of the redirect URI (else any free one)."""
    client_metadata_url: str | None = None
    """An https URL of this client's metadata document, used as its client id (CIMD)."""
    grant: GrantType = "authorization_code"
    """``client_credentials`` for a machine-to-machine client: no person, no browser;
    ``identity_assertion`` for SEP-990 (an ID-JAG exchanged by RFC 7523 jwt-bearer)."""
    private_key: str | None = None
    """A PEM private key: the client authenticates with ``private_key_jwt`` (never printed)."""
    signing_algorithm: str = "ES256"
    """The JWS algorithm of the ``private_key_jwt`` assertion."""
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    """How a client with a secret authenticates (default ``client_secret_basic``)."""
    issuer: str | None = None
    """The authorization server a client-credentials client's secret or key is sent to
    (None: whichever the server names); required for ``identity_assertion``, whose
    authorization server is configuration, never discovery; and for
    ``workload_identity``, the only one its workload's JWT goes to; and for
    ``token_exchange``, where each caller's token is exchanged."""
    assertion_file: str | None = None
    """``workload_identity``: the file holding the workload's JWT (a Kubernetes
    projected service-account token), read anew for each token request."""
    assertion_env: str | None = None
    """``workload_identity``: the environment variable holding the workload's JWT."""
    audience: str | None = None
    """The ``audience`` a ``token_exchange`` asks for (None: the server's URL)."""

    def __repr__(self) -> str:
        secret = "set" if self.client_secret else None
        key = "set" if self.private_key else None
        return (
            f"OAuthSettings(client_id={self.client_id!r}, client_secret={secret}, "
            f"scopes={self.scopes!r}, callback_port={self.callback_port!r}, "
            f"client_metadata_url={self.client_metadata_url!r}, grant={self.grant!r}, "
            f"private_key={key})"
        )

    __str__ = __repr__

    @property
    def scope(self) -> str | None:
        """The scopes as one space-separated ``scope`` parameter (None: none given)."""
        return " ".join(self.scopes) or None


def read_oauth_settings(
    entry: Mapping[str, Any], fail: Callable[[str], Exception], expand: Callable[[str, str], str]
) -> OAuthSettings | None:
    """The OAuth settings of one raw ``mcpServers`` entry (None: it has none).

    ``fail`` makes the error for a message; ``expand(key, text)`` expands ``${VAR}``.

    Raises:
        Exception: ``fail(...)`` naming the key: not an object, an unknown key, a value
            of the wrong type, a port out of range, a grant type or method not known, a
            private key without a client id or for the authorization-code grant.
    """
    for key, names in (("oauth", _CLAUDE), ("auth", _CURSOR)):
        raw = entry.get(key)
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise fail(f"{key!r} must be an object of OAuth settings ({', '.join(names)})")
        return _settings(key, raw, names, fail, expand)
    return None


def _settings(
    key: str,
    raw: Mapping[str, Any],
    names: Mapping[str, str],
    fail: Callable[[str], Exception],
    expand: Callable[[str, str], str],
) -> OAuthSettings:
    fields: dict[str, Any] = {}
    for name, value in raw.items():
        where = f"{key}.{name}"
        field = names.get(str(name))
        if field is None:
            raise fail(f"unknown key {where!r}; {key!r} takes {', '.join(names)}")
        if field == "callback_port":
            if isinstance(value, str):
                value = expand(where, value)
                value = int(value) if value.isdigit() else value
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
                raise fail(f"{where!r} must be a port number from 1 to 65535")
            fields[field] = value
        elif field == "scopes":
            fields[field] = _scopes(where, value, fail, expand)
        else:
            if not isinstance(value, str):
                raise fail(f"{where!r} must be a string")
            fields[field] = expand(where, value)
    grant = fields.get("grant", "authorization_code")
    if grant not in _GRANTS:
        raise fail(f"'{key}.grantType' must be one of {', '.join(_GRANTS)}")
    method = fields.get("token_endpoint_auth_method")
    if method is not None and method not in _METHODS:
        raise fail(f"'{key}.tokenEndpointAuthMethod' must be one of {', '.join(_METHODS)}")
    if fields.get("signing_algorithm", "ES256") not in _ALGORITHMS:
        raise fail(f"'{key}.signingAlgorithm' must be one of {', '.join(_ALGORITHMS)}")
    issuer = fields.get("issuer")
    if issuer is not None and not issuer.startswith(("https://", "http://")):
        raise fail(f"'{key}.issuer' must be the authorization server's http(s) URL")
    url = fields.get("client_metadata_url")
    if url is not None and not url.startswith("https://"):
        raise fail(f"'{key}.clientMetadataUrl' must be an https:// URL (a CIMD document)")
    if grant == "client_credentials":
        if not fields.get("client_id"):
            raise fail(f"'{key}.grantType' client_credentials needs '{key}.clientId'")
        if not fields.get("client_secret") and not fields.get("private_key"):
            raise fail(
                f"'{key}.grantType' client_credentials needs '{key}.clientSecret' or "
                f"'{key}.privateKey'"
            )
    elif fields.get("private_key"):
        raise fail(f"'{key}.privateKey' is for 'grantType': 'client_credentials'")
    if grant == "identity_assertion":
        _check_identity_assertion(key, fields, fail)
    _check_workload_identity(key, grant, fields, fail)
    _check_token_exchange(key, grant, fields, fail)
    return OAuthSettings(**fields)


def _check_identity_assertion(
    key: str, fields: Mapping[str, Any], fail: Callable[[str], Exception]
) -> None:
    """SEP-990's jwt-bearer client is a confidential one, provisioned at one issuer."""
    for name, field in (("clientId", "client_id"), ("clientSecret", "client_secret")):
        if not fields.get(field):
            raise fail(f"'{key}.grantType' identity_assertion needs '{key}.{name}'")
    if not fields.get("issuer"):
        raise fail(
            f"'{key}.grantType' identity_assertion needs '{key}.issuer': the MCP "
            "authorization server's issuer URL (it is configuration, never discovered)"
        )
    if fields.get("token_endpoint_auth_method") == "none":
        raise fail(
            f"'{key}.tokenEndpointAuthMethod' must be client_secret_basic or "
            "client_secret_post for identity_assertion"
        )


def _check_workload_identity(
    key: str, grant: str, fields: Mapping[str, Any], fail: Callable[[str], Exception]
) -> None:
    """SEP-1933: one source of the workload's JWT, and the one issuer it may go to."""
    sources = [name for name in ("assertionFile", "assertionEnv") if _CLAUDE[name] in fields]
    if grant != "workload_identity":
        if sources:
            raise fail(f"'{key}.{sources[0]}' is for 'grantType': 'workload_identity'")
        return
    if len(sources) > 1:
        raise fail(f"'{key}.assertionFile' and '{key}.assertionEnv' are two sources: name one")
    if not fields.get("issuer"):
        raise fail(
            f"'{key}.grantType' workload_identity needs '{key}.issuer': the authorization "
            "server that trusts the workload's platform (its JWT goes there and nowhere else)"
        )
    if fields.get("client_secret") and not fields.get("client_id"):
        raise fail(f"'{key}.clientSecret' needs '{key}.clientId'")
    for field, name in (("assertion_file", "assertionFile"), ("assertion_env", "assertionEnv")):
        if field in fields and not fields[field]:
            raise fail(f"'{key}.{name}' is empty")
    env = fields.get("assertion_env")
    if env is not None and not _ENV_NAME.fullmatch(env):
        raise fail(f"'{key}.assertionEnv' must be an environment variable's name (A-Z, 0-9, _)")


def _check_token_exchange(
    key: str, grant: str, fields: Mapping[str, Any], fail: Callable[[str], Exception]
) -> None:
    """Token exchange names the client serve is at the upstream's issuer, and that
    issuer (configuration: the caller's token goes there and nowhere else)."""
    if grant != "token_exchange":
        if fields.get("audience"):
            raise fail(f"'{key}.audience' is for 'grantType': 'token_exchange'")
        return
    for name, field in (("clientId", "client_id"), ("issuer", "issuer")):
        if not fields.get(field):
            raise fail(
                f"'{key}.grantType' token_exchange needs '{key}.{name}' (the client "
                "serve is at the upstream's issuer, and that issuer's URL)"
            )


def _scopes(
    where: str, value: Any, fail: Callable[[str], Exception], expand: Callable[[str, str], str]
) -> tuple[str, ...]:
    """Scopes as a list of strings or one space-separated string."""
    if isinstance(value, str):
        return tuple(expand(where, value).split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(scope for item in value for scope in expand(where, item).split())
    raise fail(f"{where!r} must be a list of strings or a space-separated string")
