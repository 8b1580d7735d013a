"""Serve as an OAuth 2.1 protected resource: who calls, and what they may call.

`_resource_server` (the outermost ASGI layer: RFC 9728 metadata, the bearer token, the
caller's identity where every handler reads it), `_access_tokens` (JWTs checked against
an issuer's JWKS), `_introspection` (opaque tokens, RFC 7662), `_scopes` (the scope map:
which scopes a tool needs) and `_scope_gate` (its 403 before a ``tools/call`` runs). The
bridge filters listings and checks calls that arrive another way with the same
`ScopeMap`. `_consent_route` is serve's callback for a user's consent to an
upstream server (``"grantScope": "user"``). This room imports the protocol's public
names, the official SDK's auth types, `serve/_request_ids`, the pool core's `_handle`
(`CallerToken`) and the external room's public names (`Consents`); the rest of serve
imports it by the names below.
"""

from ._access_tokens import IssuerTokens as IssuerTokens
from ._access_tokens import IssuerUnavailable as IssuerUnavailable
from ._access_tokens import TokenRefused as TokenRefused
from ._consent_route import ConsentCallback as ConsentCallback
from ._consent_route import ConsentOrigin as ConsentOrigin
from ._introspection import IntrospectedTokens as IntrospectedTokens
from ._resource_server import Authorization as Authorization
from ._resource_server import Caller as Caller
from ._resource_server import ResourceServer as ResourceServer
from ._resource_server import caller_from_scope as caller_from_scope
from ._resource_server import request_caller as request_caller
from ._resource_server import request_token as request_token
from ._scope_gate import ScopeGate as ScopeGate
from ._scopes import ScopeMap as ScopeMap

__all__ = [
    "Authorization",
    "Caller",
    "ConsentCallback",
    "ConsentOrigin",
    "IntrospectedTokens",
    "IssuerTokens",
    "IssuerUnavailable",
    "ResourceServer",
    "ScopeGate",
    "ScopeMap",
    "TokenRefused",
    "caller_from_scope",
    "request_caller",
    "request_token",
]
