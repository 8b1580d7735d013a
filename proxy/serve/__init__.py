"""The MCP boundary: a pool's catalog served to MCP clients (stdio, Streamable HTTP).

What lives here is the official `mcp` package's server side around the pool, in rooms
by concern:

- the bridge and the parts it holds: `_bridge` (the low-level server whose requests go
  to the pool; per request: the context, the client's capabilities and log level, the
  scope check), `_served_tools` (`bridge.tools`: which tools it serves, under which
  names, listed how), `_tool_calls` (`bridge.calls`: the pool call under the time limit,
  its result shaped for the client, stopped at shutdown), `_served_results`
  (`bridge.results`: results cut to ``--result-budget``, kept, read by ``read_result``),
  `_search_mode` (the meta-tools of ``--tool-search``), `_code_mode` (those of
  ``--code-mode``), `_pass_through` (`bridge.features`: resources, prompts and
  completions, passed to the server that owns them, and subscriptions), `_apps` (MCP
  Apps), `_capabilities` (what the client declared), `_suspended` (calls waiting on a
  2026-07-28 client's input), `_selection` (which servers, and their instructions).
  Each part is given what it reads in its constructor; none reads another's private
  attributes;
- the transports: `_transports` (stdio and the Streamable HTTP app with its Host,
  Origin, token and size checks), `_edge` (the app's POSTs to its endpoint taken before
  Starlette's routing), `_request_ids` (requests whose id no client can
  match), `_deadlines` (read deadlines on HTTP connections, on httptools or h11), `_client_sessions`
  (sessions per client), `_graceful` (draining on SIGTERM) and `_defaults`;
- `auth/`: serve as an OAuth 2.1 protected resource (tokens, the caller, scopes);
- `tasks/`: task-augmented calls in both protocol eras, and their rows in PostgreSQL;
- `fast/`: plain stateless requests answered without the SDK's session machinery.

Each sub-room is imported by its public names only. The room may import the pool core
of `nativemcp.proxy`, `nativemcp.proxy.llm`, `nativemcp.proxy.http_edge` and the public
names of `nativemcp.protocol` and `nativemcp.workers`; the pool core never imports it
(the SDK's server side stays out of worker processes until used).
"""

from ._bridge import McpBridge as McpBridge
from ._deadlines import deadline_protocol as deadline_protocol
from ._defaults import TOKEN_ENV as TOKEN_ENV
from ._transports import http_app as http_app
from ._transports import serve_stdio as serve_stdio
from .auth import Authorization as Authorization
from .auth import Caller as Caller
from .auth import IntrospectedTokens as IntrospectedTokens
from .auth import IssuerTokens as IssuerTokens
from .auth import IssuerUnavailable as IssuerUnavailable
from .auth import ScopeMap as ScopeMap
from .auth import TokenRefused as TokenRefused
from .auth import caller_from_scope as caller_from_scope
from .auth import request_caller as request_caller

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
