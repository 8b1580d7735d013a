"""The MCP boundary: a pool's catalog served to MCP clients (stdio, Streamable HTTP).

What lives here is the official `mcp` package's server side around the pool: `_bridge`
(the low-level server whose requests go to the pool), `_served_tools` (which tools it
serves, under which names, listed how), `_pass_through` (its resources, prompts and
completions, passed to the server that owns them), `_selection` (which servers, and
their instructions), `_fast_path`, `_window`, `_listing_checks` and `_call_results`
(plain stateless requests, 2026-07-28 and 2025-11-25, answered from the bridge without
the SDK's session machinery), `_transports` (stdio and the
Streamable HTTP app with its Host, Origin, token and size checks), `_request_ids`
(requests whose id no client can match), `_deadlines` (read deadlines on HTTP
connections), `_client_sessions` (sessions per client), `_tasks` (2025-11-25 tasks and
their limits), `_task_extension` (the 2026-07-28 Tasks extension) and `_task_rows` (its
tasks in PostgreSQL), `_task_table` (what both eras' tasks share), `_suspended` (calls
waiting on a 2026-07-28 client's input), `_graceful` (draining on SIGTERM),
`_resource_server` (serve as an OAuth 2.1 protected resource: metadata, access tokens,
the caller's identity), `_access_tokens` (JWTs checked against an issuer's JWKS),
`_introspection` (opaque tokens, RFC 7662), `_scopes` and `_scope_gate` (the scope map,
and its 403 before a call) and `_defaults`. It may import
the pool core of `nativemcp.proxy`, `nativemcp.proxy.llm` and the public names of
`nativemcp.protocol` and `nativemcp.workers`; the pool core never imports it (the SDK's
server side stays out of worker processes until used).
"""

from ._access_tokens import IssuerTokens as IssuerTokens
from ._access_tokens import IssuerUnavailable as IssuerUnavailable
from ._access_tokens import TokenRefused as TokenRefused
from ._bridge import McpBridge as McpBridge
from ._deadlines import deadline_protocol as deadline_protocol
from ._introspection import IntrospectedTokens as IntrospectedTokens
from ._resource_server import Authorization as Authorization
from ._resource_server import Caller as Caller
from ._resource_server import caller_from_scope as caller_from_scope
from ._resource_server import request_caller as request_caller
from ._scopes import ScopeMap as ScopeMap
from ._transports import TOKEN_ENV as TOKEN_ENV
from ._transports import http_app as http_app
from ._transports import serve_stdio as serve_stdio

__all__ = [
    "TOKEN_ENV",
    "Authorization",
    "Caller",
    "IntrospectedTokens",
    "IssuerTokens",
    "IssuerUnavailable",
    "McpBridge",
    "ScopeMap",
    "TokenRefused",
    "caller_from_scope",
    "deadline_protocol",
    "http_app",
    "request_caller",
    "serve_stdio",
]
